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
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLookupGivesBackWhatWasObserved: the graph is the monitors' store, so
// what the collector reads of an object (preconditions, patches of owner
// references and finalizers) must be exactly what was observed.
func TestLookupGivesBackWhatWasObserved(t *testing.T) {
	yes, no := true, false
	// Decoding gives local times, and so does Lookup.
	deleted := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC).Local())
	for _, tc := range []struct {
		name string
		obj  Object
	}{
		{"plain", Object{ResourceVersion: "12345"}},
		{"opaque resourceVersion", Object{ResourceVersion: "007"}},
		{"non-numeric resourceVersion", Object{ResourceVersion: "abc/9"}},
		{"huge resourceVersion", Object{ResourceVersion: "123456789012345678901234"}},
		{"no resourceVersion", Object{}},
		{"being deleted with finalizers", Object{ResourceVersion: "9", DeletionTimestamp: &deleted,
			Finalizers: []string{metav1.FinalizerDeleteDependents, "example.com/keep"}}},
		{"finalizers without deletion", Object{ResourceVersion: "9", Finalizers: []string{"example.com/keep"}}},
		{"protected", Object{ResourceVersion: "9", Protected: true}},
		{"created", Object{ResourceVersion: "9", Created: time.Unix(1_780_000_000, 0)}},
		{"expiry annotations", Object{ResourceVersion: "9", Created: time.Unix(1_780_000_000, 0),
			Expiry: ExpiryAnnotations{TTL: "7d", HasTTL: true, Expires: "2026-07-01", HasExpires: true}}},
		{"an empty ttl", Object{ResourceVersion: "9", Expiry: ExpiryAnnotations{HasTTL: true}}},
		{"an expiry only, with bytes a key could be confused by", Object{ResourceVersion: "9",
			Expiry: ExpiryAnnotations{Expires: "\x00\x03ab\xff", HasExpires: true}}},
		{"owner references with every form of the optional booleans", Object{ResourceVersion: "10", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Secret", Name: "a", UID: "u-a"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "b", UID: "u-b", Controller: &yes, BlockOwnerDeletion: &no},
			{APIVersion: "example.com/v1beta1", Kind: "Widget", Name: "c", UID: "u-c", Controller: &no, BlockOwnerDeletion: &yes},
			{APIVersion: "v1", Kind: "Secret", Name: "a2", UID: "u-a", BlockOwnerDeletion: &yes},
		}}},
		{"an apiVersion with an empty group", Object{ResourceVersion: "11", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "/v1", Kind: "Secret", Name: "a", UID: "u-a", Controller: &yes},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(16)
			want := tc.obj
			want.Version, want.Kind, want.Namespace, want.Name, want.UID = "v1", "ConfigMap", "ns", "obj", "uid-1"
			in := want
			g.Observe(&in, &recorder{})
			got, ok := g.Lookup(schema.GroupKind{Kind: "ConfigMap"}, "ns", "obj")
			if !ok {
				t.Fatal("Lookup found nothing at ns/obj after observing it")
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("Lookup gave back\n%+v\nafter observing\n%+v", *got, want)
			}
			// A new observation that changes only an optional boolean is
			// kept too.
			if len(want.OwnerReferences) > 0 {
				changed := want
				changed.OwnerReferences = append([]metav1.OwnerReference(nil), want.OwnerReferences...)
				changed.OwnerReferences[0].Controller = &no
				in = changed
				g.Observe(&in, &recorder{})
				if got, _ := g.Lookup(schema.GroupKind{Kind: "ConfigMap"}, "ns", "obj"); !reflect.DeepEqual(*got, changed) {
					t.Errorf("after an update of controller: Lookup gave back\n%+v\nwant\n%+v", *got, changed)
				}
			}
		})
	}
}

func TestLookupFindsOnlyObservedObjects(t *testing.T) {
	g := New(16)
	cm := schema.GroupKind{Kind: "ConfigMap"}
	g.Observe(obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "owner", "o-1", true)), &recorder{})
	if _, ok := g.Lookup(cm, "ns", "owner"); ok {
		t.Error("Lookup found a virtual owner; only observed objects are stored")
	}
	g.Observe(obj("ConfigMap", "ns", "owner", "o-1"), &recorder{})
	if o, ok := g.Lookup(cm, "ns", "owner"); !ok || o.UID != "o-1" {
		t.Errorf("Lookup after observing the owner = %v, %v; want uid o-1", o, ok)
	}
	g.ObserveDeleted(gone("ConfigMap", "ns", "owner"), &recorder{})
	if _, ok := g.Lookup(cm, "ns", "owner"); ok {
		t.Error("Lookup found an object observed deleted")
	}
}

// TestStoredMetadataIsSmall: the common object's metadata costs its node
// the resourceVersion's 8 bytes, its creation time's 8 and a nil pointer.
func TestStoredMetadataIsSmall(t *testing.T) {
	const objects = 10000
	g := New(16)
	g.Observe(obj("ConfigMap", "ns", "warm", "warm"), &recorder{})
	objs := make([]*Object, objects)
	for i := range objs {
		objs[i] = obj("ConfigMap", "ns", "obj-"+strconv.Itoa(i), "uid-"+strconv.Itoa(i))
		objs[i].ResourceVersion = strconv.Itoa(1_000_000 + i)
		objs[i].Created = time.Unix(1_780_000_000+int64(i), 0)
	}
	before := heapAlloc()
	for _, o := range objs {
		g.Observe(o, &recorder{})
	}
	after := heapAlloc()
	var metas int
	g.mu.RLock()
	g.uids.each(func(n *Node) {
		if n.meta != nil {
			metas++
		}
	})
	g.mu.RUnlock()
	if metas != 0 {
		t.Errorf("%d nodes allocated a nodeMeta for plain objects", metas)
	}
	// The node (96 bytes), its UID's 16 and two index slots.
	if per := (after - before) / objects; per > 160 {
		t.Errorf("observing a plain object took %d bytes, want at most 160", per)
	}
	runtime.KeepAlive(objs)
}

func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Observing an object again unchanged allocates nothing: relists and
// resyncs observe every object.
func TestObservingAnUnchangedObjectDoesNotAllocate(t *testing.T) {
	g := New(16)
	yes := true
	o := &Object{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a", UID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		ResourceVersion: "42", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "s",
			UID: "6ba7b811-9dad-11d1-80b4-00c04fd430c8", Controller: &yes, BlockOwnerDeletion: &yes}}}
	r := &recorder{}
	g.Observe(o, r)
	if allocs := testing.AllocsPerRun(100, func() { g.Observe(o, r) }); allocs != 0 {
		t.Errorf("observing an unchanged object allocated %v times", allocs)
	}
}
