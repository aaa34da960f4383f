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

package graph

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// widget is a namespaced custom kind; options modify it.
func widget(namespace, name, uid string, opts ...func(*Object)) *Object {
	o := obj("Widget", namespace, name, uid, opts...)
	o.Group, o.Version = "example.com", "v1"
	return o
}

var widgetKind = schema.GroupKind{Group: "example.com", Kind: "Widget"}

func blockingUIDs(g *Graph, owner string) []string {
	var out []string
	for _, d := range g.Dependents(g.Node(types.UID(owner)), true) {
		out = append(out, string(d.Identity.UID))
	}
	slices.Sort(out)
	return out
}

// The API server keeps several references to one owner UID that differ in
// a field. A dependent blocks its owner when any of them blocks, whatever
// their order, and stops blocking only when none does.
func TestDuplicateReferencesToOneOwnerEachCount(t *testing.T) {
	for _, order := range []string{"blocking first", "blocking last"} {
		t.Run(order, func(t *testing.T) {
			g, r := New(10), &recorder{}
			g.Observe(obj("ConfigMap", "ns", "owner", "o-1"), r)
			refs := []func(*Object){ownedBy("ConfigMap", "owner", "o-1", false), ownedBy("ConfigMap", "owner", "o-1", true)}
			if order == "blocking first" {
				slices.Reverse(refs)
			}
			g.Observe(obj("Secret", "ns", "dep", "d-1", refs...), r)
			if got := blockingUIDs(g, "o-1"); !slices.Equal(got, []string{"d-1"}) {
				t.Fatalf("blocking dependents of the owner: %v, want [d-1]", got)
			}
			if d := g.Describe(g.Node("o-1")).Dependents; d != 1 {
				t.Fatalf("the dependent is linked %d times, want once", d)
			}

			g.Observe(obj("ConfigMap", "ns", "owner", "o-1", deleting(metav1.FinalizerDeleteDependents)), r)
			r.reset()
			// Drop the blocking duplicate: the owner may finish now.
			g.Observe(obj("Secret", "ns", "dep", "d-1", ownedBy("ConfigMap", "owner", "o-1", false)), r)
			expectQueued(t, "last blocking reference dropped", r.deletes, "o-1")
			if got := blockingUIDs(g, "o-1"); len(got) != 0 {
				t.Fatalf("blocking dependents after the blocking reference went: %v", got)
			}
			if d := g.Describe(g.Node("o-1")).Dependents; d != 1 {
				t.Fatalf("the dependent must stay linked by its other reference, dependents=%d", d)
			}
		})
	}
}

// A kind the API server stops serving keeps every node, with its owner
// links: a dependent of that kind still blocks its owner's foreground
// deletion, and nothing of that kind is known gone.
func TestUnservedKindKeepsItsNodesUnverified(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "owner", "o-1", deleting(metav1.FinalizerDeleteDependents)), r)
	g.Observe(widget("ns", "blocker", "w-1", ownedBy("ConfigMap", "owner", "o-1", true)), r)
	g.Observe(widget("ns", "leaf", "w-2"), r)
	g.Observe(obj("Secret", "ns", "s", "s-1", func(o *Object) {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "leaf", UID: "w-2"}}
	}), r)
	r.reset()

	if n := g.RemoveKind(widgetKind, KindUnserved, r); n != 2 {
		t.Fatalf("RemoveKind returned %d, want 2", n)
	}
	expectQueued(t, "unserved nodes are verified", r.deletes, "w-1", "w-2")
	if g.AbsentOwners().Len() != 0 {
		t.Fatal("an unserved kind's objects must not be recorded absent")
	}
	for _, uid := range []string{"w-1", "w-2"} {
		if s := g.Describe(g.Node(types.UID(uid))); s.Removed || s.Observed {
			t.Fatalf("%s must stay in the graph, unobserved: %+v", uid, s)
		}
	}
	if got := blockingUIDs(g, "o-1"); !slices.Equal(got, []string{"w-1"}) {
		t.Fatalf("the unserved dependent must still block its owner: %v", got)
	}
	if d := g.Describe(g.Node("w-2")).Dependents; d != 1 {
		t.Fatalf("the unserved owner must keep its dependent, has %d", d)
	}

	// Served again: observed again, links unchanged, nothing to do.
	r.reset()
	gen, again := g.StartMonitor(widgetKind)
	if !again {
		t.Fatal("StartMonitor must report that the kind was observed before")
	}
	w := widget("ns", "blocker", "w-1", ownedBy("ConfigMap", "owner", "o-1", true))
	w.Monitor = gen
	g.Observe(w, r)
	expectQueued(t, "re-observed: decisions that waited for it are made now", r.deletes, "w-1")
	if g.VirtualLen() != 1 || !g.Describe(g.Node("w-1")).Observed {
		t.Fatalf("w-1 should be observed again and only w-2 virtual; virtual=%d", g.VirtualLen())
	}
	r.reset()
	if n := g.ResyncKind(widgetKind, r); n != 1 {
		t.Fatalf("ResyncKind reported %d nodes, want the one the list did not contain", n)
	}
	expectQueued(t, "after the list", r.deletes, "w-2")
}

// When a kind's CRD is deleted, its objects are gone, virtual nodes of the
// kind included.
func TestDeletedKindRemovesVirtualNodesToo(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(widget("ns", "seen", "w-1"), r)
	g.Observe(obj("Secret", "ns", "a", "s-1", func(o *Object) {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "seen", UID: "w-1"}}
	}), r)
	g.Observe(obj("Secret", "ns", "b", "s-2", func(o *Object) {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "unseen", UID: "w-9"}}
	}), r)
	r.reset()
	if n := g.RemoveKind(widgetKind, KindDeleted, r); n != 2 {
		t.Fatalf("RemoveKind returned %d, want 2", n)
	}
	expectQueued(t, "dependents of a deleted kind", r.deletes, "s-1", "s-2")
	if g.Node("w-1") != nil || g.Node("w-9") != nil || g.VirtualLen() != 0 {
		t.Fatal("nodes of a deleted kind must leave the graph")
	}
}

// Observations from a monitor that was replaced (the kind re-watched at
// another version) or stopped are ignored.
func TestStaleMonitorObservationsAreIgnored(t *testing.T) {
	g, r := New(10), &recorder{}
	old, _ := g.StartMonitor(widgetKind)
	w := widget("ns", "a", "w-1")
	w.Monitor = old
	g.Observe(w, r)

	cur, _ := g.StartMonitor(widgetKind)
	late := widget("ns", "a", "w-1")
	late.Monitor = old
	g.ObserveDeleted(late, r)
	if g.Node("w-1") == nil {
		t.Fatal("a deletion reported by the replaced monitor removed the node")
	}
	recreated := widget("ns", "a", "w-2")
	recreated.Monitor = old
	g.Observe(recreated, r)
	if g.Node("w-2") != nil || g.Node("w-1") == nil {
		t.Fatal("an observation by the replaced monitor changed the graph")
	}

	w.Monitor = cur
	g.Observe(w, r)
	g.RemoveKind(widgetKind, KindUnserved, r)
	w2 := widget("ns", "b", "w-3")
	w2.Monitor = cur
	g.Observe(w2, r)
	if g.Node("w-3") != nil {
		t.Fatal("an observation after the kind stopped being watched changed the graph")
	}
}

// A deletion removes the node with the deleted object's UID, never a newer
// object of the same name.
func TestObserveDeletedRemovesOnlyThatUID(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "cm", "cm-2"), r)
	g.ObserveDeleted(obj("ConfigMap", "ns", "cm", "cm-1"), r)
	if g.Node("cm-2") == nil {
		t.Fatal("the deletion of cm-1 removed cm-2, which has its name")
	}
	g.ObserveDeleted(obj("ConfigMap", "ns", "cm", "cm-2"), r)
	if g.Node("cm-2") != nil {
		t.Fatal("cm-2 should be removed")
	}
}

// Dependents that name one owner UID by three different coordinates: each
// live read that finds nothing moves the virtual node to the next
// coordinates, so every one of them is verified in turn.
func TestVirtualDeleteTriesEveryCandidateInTurn(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("Secret", "ns", "s1", "s-1", ownedBy("ConfigMap", "a", "x", false)), r)
	g.Observe(obj("Secret", "ns", "s2", "s-2", ownedBy("ConfigMap", "b", "x", false)), r)
	g.Observe(obj("Secret", "ns", "s3", "s-3", ownedBy("ConfigMap", "c", "x", false)), r)
	var tried []string
	for range 3 {
		id := g.Owner("x").Identity
		tried = append(tried, id.Name)
		if !g.VirtualDelete(id, r) {
			t.Fatalf("after verifying %s the node should stay under another candidate", id.Name)
		}
	}
	slices.Sort(tried)
	if !slices.Equal(tried, []string{"a", "b", "c"}) {
		t.Fatalf("candidates tried: %v, want each of a, b and c once", tried)
	}
}

// Resync finds all the work the graph holds, for a collector that starts
// taking work (a replica that becomes the leader).
func TestResyncReportsPendingWork(t *testing.T) {
	g, quiet := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "solid", "o-solid"), quiet)
	g.Observe(obj("Secret", "ns", "fine", "s-fine", ownedBy("ConfigMap", "solid", "o-solid", false)), quiet)
	g.Observe(obj("ConfigMap", "ns", "gone", "o-gone"), quiet)
	g.Observe(obj("Secret", "ns", "orphaned", "s-dangling", ownedBy("ConfigMap", "gone", "o-gone", false)), quiet)
	g.ObserveDeleted(gone("ConfigMap", "ns", "gone"), quiet)
	g.Observe(obj("Secret", "ns", "v", "s-virtual-owner", ownedBy("ConfigMap", "never", "o-virtual", false)), quiet)
	g.Observe(obj("ConfigMap", "ns", "fg", "o-fg", deleting(metav1.FinalizerDeleteDependents)), quiet)
	g.Observe(obj("Secret", "ns", "fgdep", "s-fgdep", ownedBy("ConfigMap", "fg", "o-fg", true)), quiet)
	g.Observe(obj("ConfigMap", "ns", "or", "o-orphan", deleting(metav1.FinalizerOrphanDependents)), quiet)
	g.Observe(obj("ConfigMap", "other", "elsewhere", "o-elsewhere"), quiet)
	g.Observe(obj("Secret", "ns", "bad", "s-badns", ownedBy("ConfigMap", "elsewhere", "o-elsewhere", false)), quiet)

	r := &recorder{}
	g.Resync(r)
	expectQueued(t, "resync", r.deletes, "s-dangling", "o-virtual", "o-fg", "s-fgdep", "s-badns")
	if !slices.Equal(r.orphans, uids("o-orphan")) {
		t.Fatalf("owners to orphan: %v, want [o-orphan]", r.orphans)
	}
	if !slices.Equal(r.invalids, []string{"s-badns->o-elsewhere"}) {
		t.Fatalf("invalid namespace reports: %v", r.invalids)
	}
}

// Deletions of objects with owners, and references removed, are reported
// (for dry-run's shadow agreement), once each, whoever made them.
func TestDeletionsAndReferenceRemovalsAreObserved(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "owner", "o-1"), r)
	g.Observe(obj("Secret", "ns", "fg", "s-fg", ownedBy("ConfigMap", "owner", "o-1", true)), r)
	g.Observe(obj("Secret", "ns", "bg", "s-bg", ownedBy("ConfigMap", "owner", "o-1", false)), r)
	g.Observe(obj("Secret", "ns", "orphan", "s-or", ownedBy("ConfigMap", "owner", "o-1", false)), r)
	r.reset()

	g.Observe(obj("Secret", "ns", "fg", "s-fg", ownedBy("ConfigMap", "owner", "o-1", true), deleting(metav1.FinalizerDeleteDependents)), r)
	g.ObserveDeleted(gone("Secret", "ns", "fg"), r)
	g.ObserveDeleted(gone("Secret", "ns", "bg"), r)
	g.ObserveDeleted(gone("ConfigMap", "ns", "owner"), r) // no owners: not reported
	if !slices.Equal(r.observed, uids("s-fg", "s-bg")) {
		t.Fatalf("deletions observed: %v, want s-fg once (when it started) and s-bg", r.observed)
	}
	g.Observe(obj("Secret", "ns", "orphan", "s-or"), r)
	if !slices.Equal(r.removed, []string{"s-or->o-1"}) {
		t.Fatalf("references removed: %v", r.removed)
	}
}
