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

package debug

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/graph"
)

type nopSink struct{}

func (nopSink) AttemptToDelete(*graph.Node)                          {}
func (nopSink) AttemptToOrphan(*graph.Node)                          {}
func (nopSink) InvalidOwnerNamespace(graph.Identity, graph.Identity) {}
func (nopSink) DeletionObserved(graph.Identity, []graph.OwnerRef)    {}
func (nopSink) ReferenceRemoved(graph.Identity, graph.OwnerRef)      {}

// twoComponents builds rs <- pod (blocking) and, unconnected, cm <- secret
// where the ConfigMap was never observed (virtual).
func twoComponents() *graph.Graph {
	g := graph.New(10)
	yes := true
	g.Observe(&graph.Object{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "ns", Name: "rs", UID: "rs-1"}, nopSink{})
	g.Observe(&graph.Object{Version: "v1", Kind: "Pod", Namespace: "ns", Name: "pod", UID: "pod-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-1", BlockOwnerDeletion: &yes}}}, nopSink{})
	g.Observe(&graph.Object{Version: "v1", Kind: "Secret", Namespace: "ns", Name: "s", UID: "s-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-1"}}}, nopSink{})
	return g
}

func get(t *testing.T, h http.Handler, url string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	return rec
}

func TestDOTHasEveryVertexAndDependentToOwnerEdges(t *testing.T) {
	rec := get(t, GraphHandler(twoComponents()), GraphPath)
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(body, "strict digraph full {\n") || !strings.HasSuffix(body, "}\n") {
		t.Fatalf("status %d, body:\n%s", rec.Code, body)
	}
	for _, want := range []string{
		`"pod-1" -> "rs-1";`,
		`"s-1" -> "cm-1";`,
		`    label="uid=rs-1\nnamespace=ns\nReplicaSet.v1.apps/rs\n"`,
		`    label="uid=cm-1\nnamespace=ns\nConfigMap.v1/cm\nvirtual\n"`,
		`    virtual="true"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("DOT output lacks %s:\n%s", want, body)
		}
	}
}

func TestUIDFilterKeepsTheConnectedObjectsOnly(t *testing.T) {
	body := get(t, GraphHandler(twoComponents()), GraphPath+"?uid=pod-1").Body.String()
	if !strings.Contains(body, `"rs-1" [`) || !strings.Contains(body, `"pod-1" [`) || strings.Contains(body, `"s-1"`) {
		t.Fatalf("filter by pod-1 should return the pod and its ReplicaSet only:\n%s", body)
	}
}

func TestJSON(t *testing.T) {
	rec := get(t, GraphHandler(twoComponents()), GraphPath+"?format=json&uid=s-1")
	var g JSONGraph
	if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	byUID := map[types.UID]JSONNode{}
	for _, n := range g.Nodes {
		byUID[n.UID] = n
	}
	if len(g.Nodes) != 2 || !byUID["cm-1"].Virtual || len(byUID["s-1"].Owners) != 1 || byUID["s-1"].Owners[0].Kind != "ConfigMap" {
		t.Fatalf("json graph: %+v", g)
	}
	if rec := get(t, GraphHandler(twoComponents()), GraphPath+"?format=yaml"); rec.Code != http.StatusBadRequest {
		t.Fatalf("unknown format should be refused, got %d", rec.Code)
	}
}
