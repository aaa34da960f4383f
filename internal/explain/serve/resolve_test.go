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

package serve

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
)

type nopSink struct{}

func (nopSink) AttemptToDelete(*graph.Node)                          {}
func (nopSink) AttemptToOrphan(*graph.Node)                          {}
func (nopSink) InvalidOwnerNamespace(graph.Identity, graph.Identity) {}
func (nopSink) DeletionObserved(graph.Identity, []graph.OwnerRef)    {}
func (nopSink) ReferenceRemoved(graph.Identity, graph.OwnerRef)      {}

// noSnapshot is discovery before its first run.
type noSnapshot struct{}

func (noSnapshot) Snapshot() *discovery.Snapshot { return nil }

func newResolver(t *testing.T) *Resolver {
	t.Helper()
	verbs := []string{"delete", "get", "list", "watch"}
	d := discovery.New(discovery.Options{Client: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
			{Name: "nodes", Kind: "Node", Verbs: verbs},
		}},
	}}}})
	d.RunOnce(t.Context())
	g := graph.New(16)
	g.Observe(&graph.Object{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "settings", UID: "cm",
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node"},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "..", UID: "dotdot"},
			{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "widget"},
		}}, nopSink{})
	return NewResolver(d, g)
}

func TestResolverMapsQueriesToTheServedResource(t *testing.T) {
	r := newResolver(t)
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	tests := []struct {
		name  string
		query url.Values
		want  explain.Target
		err   string
	}{
		{name: "by name", query: explain.Query(configMaps, "ns", "settings"),
			want: explain.Target{Resource: configMaps, Kind: configMaps.GroupVersion().WithKind("ConfigMap"), Namespaced: true, Namespace: "ns", Name: "settings"}},
		{name: "a cluster-scoped object's namespace is ignored", query: explain.Query(nodes, "ns", "n1"),
			want: explain.Target{Resource: nodes, Kind: nodes.GroupVersion().WithKind("Node"), Name: "n1"}},
		{name: "by UID", query: url.Values{"uid": {"cm"}},
			want: explain.Target{Resource: configMaps, Kind: configMaps.GroupVersion().WithKind("ConfigMap"), Namespaced: true, Namespace: "ns", Name: "settings"}},
		{name: "a virtual node by UID", query: url.Values{"uid": {"node"}},
			want: explain.Target{Resource: nodes, Kind: nodes.GroupVersion().WithKind("Node"), Name: "n1"}},
		{name: "an unknown UID", query: url.Values{"uid": {"nobody"}}, err: explain.ErrNotFound.Error()},
		{name: "a UID whose name is not one path segment", query: url.Values{"uid": {"dotdot"}}, err: explain.ErrNotFound.Error()},
		{name: "a UID of a kind not served", query: url.Values{"uid": {"widget"}}, err: explain.ErrNotFound.Error()},
		{name: "a namespaced resource without a namespace", query: url.Values{"version": {"v1"}, "resource": {"configmaps"}, "name": {"settings"}},
			err: "v1/configmaps is namespaced: give a namespace"},
		{name: "a resource not served", query: url.Values{"group": {"example.com"}, "version": {"v1"}, "resource": {"widgets"}, "name": {"w"}},
			err: "the API server does not serve example.com/v1/widgets"},
		{name: "no version", query: url.Values{"resource": {"configmaps"}, "namespace": {"ns"}, "name": {"settings"}}, err: "give version, resource and name"},
		{name: "a name that is not one path segment", query: explain.Query(configMaps, "ns", ".."), err: "cannot be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(tc.query)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("resolved with error %v, want %+v", err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("resolved as %+v (error %v), want an error with %q", got, err, tc.err)
			case tc.err == "" && got != tc.want:
				t.Fatalf("resolved as %+v, want %+v", got, tc.want)
			}
		})
	}
	var invalid *explain.InvalidNameError
	if _, err := r.Resolve(explain.Query(configMaps, "ns", "a/b")); !errors.As(err, &invalid) {
		t.Errorf("a name with a slash: %v, want an InvalidNameError", err)
	}
	if _, err := NewResolver(noSnapshot{}, graph.New(16)).Resolve(explain.Query(configMaps, "ns", "settings")); err == nil {
		t.Error("resolved before the first discovery")
	}
}
