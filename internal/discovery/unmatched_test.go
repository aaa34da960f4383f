/*
Copyright 2026 The ownergc Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package discovery

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUnmatchedEntriesMatchNoServedResource(t *testing.T) {
	f := newFake()
	f.groups = append(f.groups, group("broken.example.com", "v1"))
	f.failed = map[schema.GroupVersion]error{{Group: "broken.example.com", Version: "v1"}: errors.New("service unavailable")}
	d := New(Options{Client: f})
	d.RunOnce(context.Background())

	gr := func(group, resource string) schema.GroupResource {
		return schema.GroupResource{Group: group, Resource: resource}
	}
	entries := []schema.GroupResource{
		gr("", "configmaps"),                 // served
		gr("", "configmap"),                  // singular: no such resource
		gr("", "bindings"),                   // served, though not deletable
		gr("example.com", "gadgets"),         // served at a version that is not preferred
		gr("example.com", "*"),               // a served group
		gr("nope.example.com", "*"),          // no such group
		gr("apps", "deployments"),            // not served by this API server
		gr("broken.example.com", "things"),   // cannot be told: the group's discovery fails
		gr("broken.example.com", "*"),        // the group is served
		gr("", "pods/status"),                // a subresource is not a resource
		gr("example.com", "widgets"),         // served
		gr("example.com", "widgets.example"), // no such resource
	}
	got := d.Snapshot().Unmatched(entries)
	want := []schema.GroupResource{
		gr("", "configmap"), gr("nope.example.com", "*"), gr("apps", "deployments"),
		gr("", "pods/status"), gr("example.com", "widgets.example"),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("unmatched %v, want %v", got, want)
	}
	if got := d.Snapshot().Unmatched(nil); got != nil {
		t.Fatalf("no entries, unmatched %v", got)
	}
}

// A resource that cannot be deleted does not change what is watched, but it
// changes which entries match: subscribers hear of it.
func TestANewServedResourceIsAChange(t *testing.T) {
	f := newFake()
	d := New(Options{Client: f})
	changes := 0
	d.Subscribe(func(Change) { changes++ })
	d.RunOnce(context.Background())
	d.RunOnce(context.Background())
	if changes != 1 {
		t.Fatalf("%d changes for one discovery and an identical one, want 1", changes)
	}
	f.lists = append(f.lists, list("example.com/v1", metav1.APIResource{Name: "reviews", Kind: "Review", Verbs: []string{"create"}}))
	d.RunOnce(context.Background())
	if changes != 2 {
		t.Fatalf("%d changes after a create-only resource appeared, want 2", changes)
	}
	if got := d.Snapshot().Unmatched([]schema.GroupResource{{Group: "example.com", Resource: "reviews"}}); len(got) != 0 {
		t.Fatalf("a served create-only resource is unmatched: %v", got)
	}
}
