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

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ownergc/ownergc/internal/explain"
)

var (
	now        = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// cm is a listed ConfigMap, created an hour before now.
func cm(name string, uid types.UID, refs ...metav1.OwnerReference) *listedObject {
	return &listedObject{
		meta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, OwnerReferences: refs,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		kind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, resource: configMaps, namespaced: true,
	}
}

func ownedBy(o *listedObject, controller, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.meta.Name, UID: o.meta.UID,
		Controller: ptr.To(controller), BlockOwnerDeletion: ptr.To(block)}
}

func deleting(o *listedObject, ago time.Duration, finalizers ...string) *listedObject {
	t := metav1.NewTime(now.Add(-ago))
	o.meta.DeletionTimestamp, o.meta.Finalizers = &t, finalizers
	return o
}

func TestBuildDependents(t *testing.T) {
	root := deleting(cm("root", "r"), 2*time.Minute, metav1.FinalizerDeleteDependents)
	held := deleting(cm("held", "h", ownedBy(root, true, true)), time.Minute, "example.com/hold")
	loose := cm("loose", "l", ownedBy(root, false, false), metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "s"})
	grandchild := cm("grandchild", "g", ownedBy(held, false, true), ownedBy(held, false, true)) // a duplicate reference
	// A cycle below the root: a -> b -> a.
	a := cm("a", "a", ownedBy(loose, false, false))
	b := cm("b", "b", ownedBy(a, false, false))
	a.meta.OwnerReferences = append(a.meta.OwnerReferences, ownedBy(b, false, false))
	unrelated := cm("unrelated", "u")

	tree := &Tree{Direction: DirectionDependents,
		Root: buildDependents(root.ref(), root.meta, []*listedObject{unrelated, b, a, grandchild, loose, held, root})}
	var out strings.Builder
	if err := renderTree(&out, tree, now, false); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME                       REF                   AGE   STATUS
ns          ConfigMap/root                                   60m   Deleting for 2m (foreground: waits for 1 blocking dependent); finalizers: foregroundDeletion
ns          ├─ConfigMap/held           controller,blocking   60m   Deleting for 60s; finalizers: example.com/hold
ns          │ └─ConfigMap/grandchild   blocking              60m
ns          └─ConfigMap/loose          -                     60m   1 other owner
ns            └─ConfigMap/a            -                     60m   1 other owner
ns              └─ConfigMap/b          -                     60m
ns                └─ConfigMap/a        -                     60m   Cycle: it is already on the path above: the references form a cycle
`
	if got := trimLines(out.String()); got != want {
		t.Errorf("rendered tree:\n%s\nwant:\n%s", got, want)
	}
}

// trimLines removes the spaces at the end of each line.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

func TestBuildOwners(t *testing.T) {
	top := cm("top", "t")
	middle := deleting(cm("middle", "m", ownedBy(top, false, false)), 30*time.Second, "example.com/hold")
	leaf := cm("leaf", "l", ownedBy(middle, true, true),
		metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "ghost", UID: "ghost"})
	lookups := map[types.UID]ownerLookup{
		"m":     {ref: middle.ref(), obj: &metav1.PartialObjectMetadata{ObjectMeta: middle.meta}, status: explain.OwnerSolid},
		"t":     {ref: top.ref(), status: explain.OwnerDangling, reason: "no such object"},
		"ghost": {ref: objectRef{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "ghost", UID: "ghost"}, status: explain.OwnerUnverifiable, reason: "its kind is not served"},
	}
	lookup := func(_ context.Context, ns string, r metav1.OwnerReference) ownerLookup {
		if ns != "ns" {
			t.Errorf("looking up %s for a dependent in namespace %q", r.Name, ns)
		}
		return lookups[r.UID]
	}
	tree := &Tree{Direction: DirectionOwners, Root: buildOwners(context.Background(), leaf.ref(), leaf.meta, lookup)}
	var out strings.Builder
	if err := renderTree(&out, tree, now, false); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME                 REF                   AGE   STATUS
ns          ConfigMap/leaf                             60m
ns          ├─ConfigMap/middle   controller,blocking   60m   Deleting for 30s; finalizers: example.com/hold
ns          │ └─ConfigMap/top    -                     -     Dangling: no such object
            └─Ghost/ghost        -                     -     Unverifiable: its kind is not served
`
	if got := trimLines(out.String()); got != want {
		t.Errorf("rendered tree:\n%s\nwant:\n%s", got, want)
	}
}

// Colours go only into the last column, and only when asked for.
func TestRenderTreeColours(t *testing.T) {
	root := deleting(cm("root", "r"), time.Minute, "example.com/hold")
	tree := &Tree{Direction: DirectionDependents, Root: buildDependents(root.ref(), root.meta, nil)}
	var plain, coloured strings.Builder
	_ = renderTree(&plain, tree, now, false)
	_ = renderTree(&coloured, tree, now, true)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("colours without a terminal:\n%q", plain.String())
	}
	if !strings.Contains(coloured.String(), "\x1b[33mDeleting for 60s; finalizers: example.com/hold\x1b[0m") {
		t.Errorf("a deleting object should be yellow:\n%q", coloured.String())
	}
}

func TestIndexDependentsKeepsEachObjectOnce(t *testing.T) {
	owner := cm("owner", "o")
	dup := cm("dup", "d", ownedBy(owner, false, false), ownedBy(owner, false, true))
	if got := indexDependents([]*listedObject{dup})["o"]; len(got) != 1 {
		t.Errorf("an object with two references to one owner is listed %d times", len(got))
	}
}

func TestListingIncomplete(t *testing.T) {
	l := listing{failed: []string{"API group metrics.k8s.io/v1beta1 (discovery failed: 503)"},
		forbidden: []string{"a", "b", "c", "d", "e", "f", "g", "h"}}
	got := l.incomplete()
	want := []string{"API group metrics.k8s.io/v1beta1 (discovery failed: 503)", "8 resources you may not list (a, b, c, d, e, f and 2 more)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("incomplete: %q, want %q", got, want)
	}
}
