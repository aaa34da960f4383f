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
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A node is 96 bytes, as before it kept the creation time: an object with
// neither expiry annotation pays nothing more for expiry (its owner
// references lost their slice's capacity, which the graph never used, and
// the creation time took its place). 96 bytes is a size class of Go's
// allocator; 104 would take 112.
func TestANodeIs96Bytes(t *testing.T) {
	if size := unsafe.Sizeof(Node{}); size != 96 {
		t.Errorf("a node is %d bytes, want 96", size)
	}
	if size := unsafe.Sizeof(nodeMeta{}); size != 64 {
		t.Errorf("a nodeMeta is %d bytes, want 64 (a size class)", size)
	}
}

// The expiry annotations are kept encoded in one interned string: every
// pair of values comes back as it was.
func TestExpiryKeysComeBack(t *testing.T) {
	for _, a := range []ExpiryAnnotations{
		{HasTTL: true}, {HasExpires: true}, {HasTTL: true, HasExpires: true},
		{TTL: "7d", HasTTL: true}, {Expires: "2026-07-01", HasExpires: true},
		{TTL: "x\x00y", Expires: "\x01\x80\xff", HasTTL: true, HasExpires: true},
		{TTL: string(make([]byte, 300)), HasTTL: true, Expires: "e", HasExpires: true},
	} {
		if got := expiryOfKey(a.key().Value()); got != a {
			t.Errorf("%+v came back as %+v", a, got)
		}
		if again := a.key(); a.key() != again {
			t.Errorf("%+v is not interned", a)
		}
	}
}

// Observing an annotated object again unchanged allocates nothing: its
// key is not built again.
func TestObservingAnUnchangedAnnotatedObjectDoesNotAllocate(t *testing.T) {
	g := New(16)
	o := obj("ConfigMap", "ns", "a", "6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	o.ResourceVersion, o.Created = "42", time.Unix(1_780_000_000, 0)
	o.Expiry = ExpiryAnnotations{TTL: "7d", HasTTL: true}
	r := &recorder{}
	g.Observe(o, r)
	if allocs := testing.AllocsPerRun(100, func() { g.Observe(o, r) }); allocs != 0 {
		t.Errorf("observing an unchanged annotated object allocated %v times", allocs)
	}
}

// ScanExpiry finds the annotated objects of every kind and every object of
// the kinds asked for, observed ones only, without a list.
func TestScanExpiry(t *testing.T) {
	g := New(16)
	r := &recorder{}
	annotated := obj("Secret", "ns", "annotated", "u-1")
	annotated.Expiry = ExpiryAnnotations{Expires: "2026-07-01", HasExpires: true}
	g.Observe(annotated, r)
	g.Observe(obj("Secret", "ns", "plain", "u-2"), r)
	g.Observe(obj("ConfigMap", "ns", "a", "u-3"), r)
	g.Observe(obj("ConfigMap", "other", "b", "u-4"), r)
	// A virtual owner is no object to expire.
	g.Observe(obj("ConfigMap", "ns", "owned", "u-5", ownedBy("Secret", "virtual", "u-6", false)), r)

	scan := func(all func(schema.GroupKind) bool) []string {
		var names []string
		g.ScanExpiry(all, func(o *Object) { names = append(names, o.Name) })
		slices.Sort(names)
		return names
	}
	if got := scan(nil); !slices.Equal(got, []string{"annotated"}) {
		t.Errorf("annotated objects: %v", got)
	}
	configMaps := func(gk schema.GroupKind) bool { return gk.Kind == "ConfigMap" }
	if got := scan(configMaps); !slices.Equal(got, []string{"a", "annotated", "b", "owned"}) {
		t.Errorf("annotated objects and ConfigMaps: %v", got)
	}
	annotated.Expiry = ExpiryAnnotations{}
	g.Observe(annotated, r)
	if got := scan(nil); len(got) != 0 {
		t.Errorf("after the annotation was removed: %v", got)
	}
}
