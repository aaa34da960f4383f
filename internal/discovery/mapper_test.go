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
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// groupVersions serves the resources of some group-versions, and counts
// what it was asked.
type groupVersions struct {
	served map[string][]metav1.APIResource
	err    error
	asked  []string
}

func (g *groupVersions) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	g.asked = append(g.asked, gv)
	if g.err != nil {
		return nil, g.err
	}
	rs, ok := g.served[gv]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: rs}, nil
}

// next is the mapper a groupVersionMapper passes the rest to.
type next struct {
	meta.RESTMapper
	asked int
}

func (n *next) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	n.asked++
	return nil, errors.New("asked the next mapper")
}

// Before the first discovery, a mapping at given versions is read from
// those group-versions alone: the kind's resource (not a subresource of the
// same kind) and its scope; a group-version not served, or without the
// kind, is no match; an error is the error; a mapping at no version is the
// next mapper's.
func TestTheGroupVersionMapperReadsOnlyTheGroupVersionsAskedFor(t *testing.T) {
	gvs := &groupVersions{served: map[string][]metav1.APIResource{
		"ownergc.io/v1alpha1": {
			{Name: "gcpolicies/status", Kind: "GCPolicy"},
			{Name: "gcpolicies", Kind: "GCPolicy", Namespaced: false},
			{Name: "clustergcstatuses", Kind: "ClusterGCStatus", Namespaced: true},
		},
	}}
	n := &next{}
	m := NewGroupVersionMapper(gvs, n)

	got, err := m.RESTMapping(schema.GroupKind{Group: "ownergc.io", Kind: "GCPolicy"}, "v1beta1", "v1alpha1")
	if err != nil || got.Resource.Resource != "gcpolicies" || got.Resource.Version != "v1alpha1" || got.Scope != meta.RESTScopeRoot {
		t.Fatalf("GCPolicy: %+v (%v), want gcpolicies at v1alpha1, cluster-scoped", got, err)
	}
	if want := []string{"ownergc.io/v1beta1", "ownergc.io/v1alpha1"}; len(gvs.asked) != 2 || gvs.asked[0] != want[0] || gvs.asked[1] != want[1] {
		t.Errorf("asked %v, want %v only", gvs.asked, want)
	}
	got, err = m.RESTMapping(schema.GroupKind{Group: "ownergc.io", Kind: "ClusterGCStatus"}, "v1alpha1")
	if err != nil || got.Scope != meta.RESTScopeNamespace {
		t.Fatalf("ClusterGCStatus: %+v (%v), want namespaced", got, err)
	}
	for _, gk := range []schema.GroupKind{{Group: "ownergc.io", Kind: "Widget"}, {Group: "example.com", Kind: "Widget"}} {
		if _, err := m.RESTMapping(gk, "v1alpha1"); !meta.IsNoMatchError(err) {
			t.Errorf("%s: %v, want no match", gk, err)
		}
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "ownergc.io", Kind: "GCPolicy"}); err == nil || n.asked != 1 {
		t.Errorf("at no version: %v, the next mapper asked %d times; want it asked", err, n.asked)
	}
	gvs.err = errors.New("connection refused")
	if _, err := m.RESTMapping(schema.GroupKind{Group: "ownergc.io", Kind: "GCPolicy"}, "v1alpha1"); err == nil || meta.IsNoMatchError(err) {
		t.Errorf("an unreachable API server: %v, want its error (not a no match)", err)
	}
}
