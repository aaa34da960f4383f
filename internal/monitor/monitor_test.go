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

package monitor

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
)

// blockingSink holds the graph (and so the observation in flight) until
// released.
type blockingSink struct{ entered, release chan struct{} }

func (b *blockingSink) AttemptToDelete(*graph.Node) {
	select {
	case b.entered <- struct{}{}:
		<-b.release
	default:
	}
}
func (b *blockingSink) AttemptToOrphan(*graph.Node)                          {}
func (b *blockingSink) InvalidOwnerNamespace(graph.Identity, graph.Identity) {}
func (b *blockingSink) DeletionObserved(graph.Identity, []graph.OwnerRef)    {}
func (b *blockingSink) ReferenceRemoved(graph.Identity, graph.OwnerRef)      {}

func testMonitor(g *graph.Graph) *monitor {
	res := discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	m := &monitor{res: res, gvr: discovery.FormatGVR(res.GroupVersionResource)}
	m.gen, _ = g.StartMonitor(res.GroupKind())
	return m
}

func configMapMeta(name, uid string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), OwnerReferences: owners}}
}

// Stopping a monitor waits for the observation in flight, and nothing is
// observed after it.
func TestStopWaitsForTheObservationInFlight(t *testing.T) {
	g := graph.New(10)
	sink := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	s := &Set{opts: Options{Graph: g, Sink: sink, Changed: func() {}}}
	m := testMonitor(g)

	// An object with an owner not in the graph: observing it reports the
	// virtual owner to the sink, which holds the observation.
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid"}
	st := &store{m: m, s: s}
	go func() { st.observe(configMapMeta("dep", "dep-uid", owner), false) }()
	<-sink.entered
	halted := make(chan struct{})
	go func() { m.halt(); close(halted) }()
	select {
	case <-halted:
		t.Fatal("halt returned while an observation was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(sink.release)
	select {
	case <-halted:
	case <-time.After(10 * time.Second):
		t.Fatal("halt did not return once the observation finished")
	}

	st.observe(configMapMeta("late", "late-uid"), false)
	st.observe(configMapMeta("dep", "dep-uid"), true)
	st.replace(graph.NewListing(0))
	if g.Node("late-uid") != nil || g.Node("dep-uid") == nil || m.synced.Load() {
		t.Fatal("a halted monitor changed the graph or became synced")
	}
}

// The graph learns from a listed object (observed as it arrives) its
// deletion state, which finalizer, owners; its deletion removes it.
func TestObservingAListedObject(t *testing.T) {
	now := metav1.Now()
	yes := true
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid", BlockOwnerDeletion: &yes}
	tests := []struct {
		name string
		meta metav1.ObjectMeta
		want graph.NodeState
	}{
		{"alive", metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{owner}},
			graph.NodeState{Observed: true, HasOwners: true}},
		{"deleted in the foreground", metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{"example.com/x", metav1.FinalizerDeleteDependents}},
			graph.NodeState{Observed: true, BeingDeleted: true, DeletingDependents: true}},
		{"orphaning", metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerOrphanDependents}},
			graph.NodeState{Observed: true, BeingDeleted: true, Orphaning: true}},
		{"finalizers, not deleted", metav1.ObjectMeta{Finalizers: []string{metav1.FinalizerOrphanDependents}},
			graph.NodeState{Observed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := testStore()
			g := s.opts.Graph
			in := &metav1.PartialObjectMetadata{ObjectMeta: tt.meta}
			in.Namespace, in.Name, in.UID, in.ResourceVersion = "ns", "obj", "obj-uid", "5"
			st.replace(listOf(st, in))
			n := g.Node("obj-uid")
			if n == nil {
				t.Fatal("not observed")
			}
			got := g.Describe(n)
			tt.want.Identity = graph.Identity{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "obj", UID: "obj-uid"}
			if got != tt.want {
				t.Fatalf("observed %+v, want %+v", got, tt.want)
			}
			st.observe(in, true)
			if g.Node("obj-uid") != nil {
				t.Fatal("a deletion did not remove the node")
			}
		})
	}
}

// A list observes every object in it and the deletion of every observed
// object of the kind it does not contain; the first one makes the monitor
// synced. What Cached returns then is the listed object, exactly.
func TestAListReplacesWhatTheGraphHeld(t *testing.T) {
	s, st := testStore()
	g, m := s.opts.Graph, st.m
	yes := true
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "s-uid", Controller: &yes}
	a, b := configMapMeta("a", "a-uid", owner), configMapMeta("b", "b-uid")
	a.ResourceVersion, b.ResourceVersion = "10", "11"
	st.replace(listOf(st, a, b))
	if !m.synced.Load() {
		t.Fatal("the monitor is not synced after its first list")
	}
	got, ok := s.Cached(m.res.GroupKind(), "ns", "a")
	if !ok {
		t.Fatal("Cached found nothing at ns/a after the list")
	}
	want := a.DeepCopy()
	want.SetGroupVersionKind(configMapGVK)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Cached(ns/a) =\n%+v\nwant\n%+v", got, want)
	}

	// A relist after a watch expired: b was deleted meanwhile, c created,
	// a unchanged. Objects are observed as they arrive; b goes when the
	// list is complete.
	c := configMapMeta("c", "c-uid")
	c.ResourceVersion = "12"
	relisted := listOf(st, a.DeepCopy(), c)
	// The list's observer runs beside the monitor: c is observed soon
	// after it arrives, b stays until the list is complete.
	for deadline := time.Now().Add(10 * time.Second); g.Node("c-uid") == nil && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if g.Node("c-uid") == nil || g.Node("b-uid") == nil {
		t.Error("while the relist streams: want c observed within 10 s and b still there")
	}
	st.replace(relisted)
	if g.Node("b-uid") != nil {
		t.Error("an object missing from the relist is still in the graph")
	}
	if g.Node("c-uid") == nil {
		t.Error("an object new in the relist is not in the graph")
	}
	if got, ok := s.Cached(m.res.GroupKind(), "ns", "a"); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("after the relist Cached(ns/a) = %+v, %v; want it unchanged", got, ok)
	}
}

// A streamed list is observed in the order it arrived, however far its
// observer is behind: an object listed and then changed before the list
// ended is left in its last state, and once replace returns every object is
// in the graph.
func TestAStreamedListIsObservedInArrivalOrder(t *testing.T) {
	s, st := testStore()
	list := graph.NewListing(0)
	add := func(o *metav1.PartialObjectMetadata) {
		list.Add(o.Namespace, o.Name)
		st.list(o)
	}
	first := configMapMeta("changed", "changed-uid")
	first.ResourceVersion = "1"
	add(first)
	n := 3*listingBuffer + 1
	for i := range n {
		add(configMapMeta(fmt.Sprintf("obj-%d", i), fmt.Sprintf("obj-%d-uid", i)))
	}
	last := configMapMeta("changed", "changed-uid")
	last.ResourceVersion = "2"
	add(last)
	st.replace(list)
	for i := range n {
		if st.s.opts.Graph.Node(types.UID(fmt.Sprintf("obj-%d-uid", i))) == nil {
			t.Fatalf("obj-%d of a list of %d is not in the graph when replace returned", i, n)
		}
	}
	got, ok := s.Cached(configMapGVK.GroupKind(), "ns", "changed")
	if !ok || got.ResourceVersion != "2" {
		t.Fatalf("an object changed while the list streamed: cached %v at resourceVersion %q, want the last state (2)", ok, got.GetResourceVersion())
	}
}

// A watch event after a list that never completed (its stream broke) is
// observed after every object that list delivered: the deletion of an
// object the list had is not overtaken by the list's observation of it.
func TestAWatchEventWaitsForAnUnfinishedList(t *testing.T) {
	_, st := testStore()
	n := 2 * listingBuffer
	for i := range n {
		st.list(configMapMeta(fmt.Sprintf("obj-%d", i), fmt.Sprintf("obj-%d-uid", i)))
	}
	gone := fmt.Sprintf("obj-%d", n-1)
	st.observe(configMapMeta(gone, gone+"-uid"), true)
	g := st.s.opts.Graph
	if g.Node(types.UID(gone+"-uid")) != nil {
		t.Fatalf("%s is in the graph after its deletion was observed: the list's observation overtook it", gone)
	}
	for i := range n - 1 {
		if g.Node(types.UID(fmt.Sprintf("obj-%d-uid", i))) == nil {
			t.Fatalf("obj-%d, delivered by the unfinished list, is not in the graph", i)
		}
	}
	if st.listing != nil {
		t.Fatal("the unfinished list's observer still runs after a watch event")
	}
}

// listOf hands objs to st as a list's objects and returns the list's names.
func listOf(st *store, objs ...*metav1.PartialObjectMetadata) *graph.Listing {
	l := graph.NewListing(len(objs))
	for _, o := range objs {
		l.Add(o.Namespace, o.Name)
		st.list(o)
	}
	return l
}
