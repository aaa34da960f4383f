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
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// recorder is a Sink that records the work the graph creates.
type recorder struct {
	deletes  []types.UID
	orphans  []types.UID
	invalids []string
	// refs are the references reported with invalids.
	refs []Identity
	// observed lists the deletions observed; removed the references
	// removed, as dependent->owner.
	observed []types.UID
	removed  []string
}

func (r *recorder) AttemptToDelete(n *Node) { r.deletes = append(r.deletes, n.UID()) }
func (r *recorder) AttemptToOrphan(n *Node) { r.orphans = append(r.orphans, n.UID()) }
func (r *recorder) InvalidOwnerNamespace(dep, owner Identity) {
	r.invalids = append(r.invalids, string(dep.UID)+"->"+string(owner.UID))
	r.refs = append(r.refs, owner)
}

func (r *recorder) DeletionObserved(id Identity, _ []OwnerRef) {
	r.observed = append(r.observed, id.UID)
}
func (r *recorder) ReferenceRemoved(id Identity, owner OwnerRef) {
	r.removed = append(r.removed, string(id.UID)+"->"+string(owner.UID()))
}

func (r *recorder) reset() { *r = recorder{} }

// obj builds an observed object; options modify it.
func obj(kind, namespace, name, uid string, opts ...func(*Object)) *Object {
	o := &Object{Group: "", Version: "v1", Kind: kind, Namespace: namespace, Name: name, UID: types.UID(uid)}
	if kind == "ReplicaSet" || kind == "Deployment" {
		o.Group, o.Version = "apps", "v1"
	}
	for _, f := range opts {
		f(o)
	}
	return o
}

func ownedBy(kind, name, uid string, block bool) func(*Object) {
	return func(o *Object) {
		apiVersion := "v1"
		if kind == "ReplicaSet" || kind == "Deployment" {
			apiVersion = "apps/v1"
		}
		o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{
			APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), BlockOwnerDeletion: &block,
		})
	}
}

// gone describes the deletion of the object of a kind at namespace/name,
// whatever its UID.
func gone(kind, namespace, name string) *Object {
	o := obj(kind, namespace, name, "")
	return o
}

func deleting(finalizer string) func(*Object) {
	return func(o *Object) {
		now := metav1.Now()
		o.DeletionTimestamp = &now
		if finalizer != "" {
			o.Finalizers = []string{finalizer}
		}
	}
}

func uids(s ...string) []types.UID {
	out := make([]types.UID, len(s))
	for i, u := range s {
		out[i] = types.UID(u)
	}
	return out
}

func sorted(u []types.UID) []types.UID {
	c := slices.Clone(u)
	slices.Sort(c)
	return c
}

func expectQueued(t *testing.T, step string, got []types.UID, want ...string) {
	t.Helper()
	if w := uids(want...); !slices.Equal(sorted(got), sorted(w)) {
		t.Fatalf("%s: attempt-to-delete got %v, want %v", step, got, w)
	}
}

func TestDependentBeforeOwnerCreatesVirtualNodeUntilObserved(t *testing.T) {
	g, r := New(10), &recorder{}

	g.Observe(obj("Pod", "ns", "p1", "pod-1", ownedBy("ReplicaSet", "rs", "rs-1", true)), r)
	expectQueued(t, "dependent observed first", r.deletes, "rs-1")
	if g.Len() != 2 || g.VirtualLen() != 1 {
		t.Fatalf("want 2 nodes, 1 virtual; got %d, %d", g.Len(), g.VirtualLen())
	}
	owner := g.Owner("rs-1")
	if !owner.Known || owner.Observed || owner.Identity.Namespace != "ns" || owner.Identity.Name != "rs" || owner.Identity.Group != "apps" {
		t.Fatalf("virtual owner has wrong state: %+v", owner)
	}

	r.reset()
	g.Observe(obj("ReplicaSet", "ns", "rs", "rs-1"), r)
	expectQueued(t, "owner observed under the referenced coordinates", r.deletes)
	if g.VirtualLen() != 0 || !g.Owner("rs-1").Observed {
		t.Fatalf("owner should be observed now; virtual=%d", g.VirtualLen())
	}
	if got := g.NodeFor("apps", "ReplicaSet", "ns", "rs"); got == nil || got.UID() != "rs-1" {
		t.Fatalf("observed owner is not indexed by name: %v", got)
	}
	deps := g.Dependents(g.Node("rs-1"), true)
	if len(deps) != 1 || deps[0].Identity.UID != "pod-1" || !deps[0].Blocking {
		t.Fatalf("blocking dependents of rs-1: %+v", deps)
	}
}

func TestOwnerDeletionQueuesDependentsAndRemembersAbsentOwner(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ReplicaSet", "ns", "rs", "rs-1"), r)
	g.Observe(obj("Pod", "ns", "p1", "pod-1", ownedBy("ReplicaSet", "rs", "rs-1", false)), r)
	g.Observe(obj("Pod", "ns", "p2", "pod-2", ownedBy("ReplicaSet", "rs", "rs-1", false)), r)
	r.reset()

	g.ObserveDeleted(gone("ReplicaSet", "ns", "rs"), r)
	expectQueued(t, "owner gone", r.deletes, "pod-1", "pod-2")
	if g.Owner("rs-1").Known {
		t.Fatal("deleted owner still in the graph")
	}
	id := Identity{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "ns", Name: "rs", UID: "rs-1"}
	if !g.AbsentOwners().Has(id) {
		t.Fatal("deleted owner with dependents is not in the absent-owner cache")
	}
	id.Version = "v1beta2"
	if !g.AbsentOwners().Has(id) {
		t.Fatal("absent-owner cache must not depend on the version")
	}

	// A leaf that disappears does not go into the absent-owner cache.
	r.reset()
	g.ObserveDeleted(gone("Pod", "ns", "p1"), r)
	expectQueued(t, "leaf gone", r.deletes)
	if g.AbsentOwners().Len() != 1 || g.Len() != 1 {
		t.Fatalf("after leaf removal: absent=%d nodes=%d", g.AbsentOwners().Len(), g.Len())
	}
}

func TestForegroundAndOrphanTransitionsQueueOnce(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ReplicaSet", "ns", "rs", "rs-1"), r)
	g.Observe(obj("Pod", "ns", "p1", "pod-1", ownedBy("ReplicaSet", "rs", "rs-1", true)), r)
	g.Observe(obj("Pod", "ns", "p2", "pod-2", ownedBy("ReplicaSet", "rs", "rs-1", false)), r)
	r.reset()

	g.Observe(obj("ReplicaSet", "ns", "rs", "rs-1", deleting(metav1.FinalizerDeleteDependents)), r)
	expectQueued(t, "foreground deletion starts", r.deletes, "pod-1", "pod-2", "rs-1")
	if s := g.Describe(g.Node("rs-1")); !s.DeletingDependents || !s.BeingDeleted {
		t.Fatalf("owner state after foreground deletion starts: %+v", s)
	}
	r.reset()
	g.Observe(obj("ReplicaSet", "ns", "rs", "rs-1", deleting(metav1.FinalizerDeleteDependents)), r)
	expectQueued(t, "same state observed again", r.deletes)

	g.Observe(obj("Deployment", "ns", "d", "d-1", deleting(metav1.FinalizerOrphanDependents)), r)
	g.Observe(obj("Deployment", "ns", "d", "d-1", deleting(metav1.FinalizerOrphanDependents)), r)
	if !slices.Equal(r.orphans, uids("d-1")) {
		t.Fatalf("orphan transition: got %v, want exactly [d-1]", r.orphans)
	}
}

func TestUnblockingAReferenceQueuesTheWaitingOwner(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ReplicaSet", "ns", "rs", "rs-1", deleting(metav1.FinalizerDeleteDependents)), r)
	g.Observe(obj("Pod", "ns", "p1", "pod-1", ownedBy("ReplicaSet", "rs", "rs-1", true)), r)
	expectQueued(t, "new dependent of a foreground-deleting owner", r.deletes, "rs-1", "pod-1")

	r.reset()
	g.Observe(obj("Pod", "ns", "p1", "pod-1", ownedBy("ReplicaSet", "rs", "rs-1", false)), r)
	expectQueued(t, "blockOwnerDeletion true -> false", r.deletes, "rs-1")

	g.Observe(obj("Pod", "ns", "p1", "pod-1", ownedBy("ReplicaSet", "rs", "rs-1", true)), r)
	r.reset()
	g.Observe(obj("Pod", "ns", "p1", "pod-1"), r)
	expectQueued(t, "blocking reference removed", r.deletes, "rs-1")
	if n := g.Describe(g.Node("rs-1")); n.Dependents != 0 {
		t.Fatalf("owner still lists the dependent that dropped its reference: %+v", n)
	}
}

func TestDeleteAndRecreateUnderTheSameName(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "cm", "cm-1"), r)
	g.Observe(obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "cm", "cm-1", false)), r)
	r.reset()

	g.Observe(obj("ConfigMap", "ns", "cm", "cm-2"), r)
	expectQueued(t, "name reused by a new object", r.deletes, "s-1")
	if g.Owner("cm-1").Known || !g.Owner("cm-2").Observed {
		t.Fatal("old UID must be gone and the new one observed")
	}
}

func TestInvalidNamespaceReferenceIsReportedAndChecked(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "other", "cm", "cm-1"), r)
	g.Observe(obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "cm", "cm-1", false)), r)
	expectQueued(t, "dependent names an owner in another namespace", r.deletes, "s-1")
	if !slices.Equal(r.invalids, []string{"s-1->cm-1"}) {
		t.Fatalf("invalid namespace reports: %v", r.invalids)
	}

	// The bad child first, then the owner: reported when the owner is observed.
	g2, r2 := New(10), &recorder{}
	g2.Observe(obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "cm", "cm-1", false)), r2)
	r2.reset()
	g2.Observe(obj("ConfigMap", "other", "cm", "cm-1"), r2)
	expectQueued(t, "owner observed in another namespace", r2.deletes, "s-1")
	if !slices.Equal(r2.invalids, []string{"s-1->cm-1"}) {
		t.Fatalf("invalid namespace reports: %v", r2.invalids)
	}
}

// A dependent that names, by UID, an owner observed in another namespace
// is reported with its reference as it states it: what is reported about
// it (an event in its namespace) names nothing of the other namespace, in
// either order of observation.
func TestInvalidNamespaceReportCarriesTheReferenceNotTheOwner(t *testing.T) {
	want := Identity{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "alias", UID: "cm-1"}
	owner := obj("ConfigMap", "other", "real-name", "cm-1")
	dependent := obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "alias", "cm-1", false))
	for _, order := range [][]*Object{{owner, dependent}, {dependent, owner}} {
		g, r := New(10), &recorder{}
		for _, o := range order {
			g.Observe(o, r)
		}
		if !slices.Equal(r.refs, []Identity{want}) {
			t.Errorf("observing %s then %s: reported references %+v, want only %+v", order[0].Name, order[1].Name, r.refs, want)
		}
	}
}

func TestVirtualDelete(t *testing.T) {
	t.Run("all dependents agree: node removed", func(t *testing.T) {
		g, r := New(10), &recorder{}
		g.Observe(obj("Secret", "ns", "s1", "s-1", ownedBy("ConfigMap", "cm", "cm-1", false)), r)
		g.Observe(obj("Secret", "ns", "s2", "s-2", ownedBy("ConfigMap", "cm", "cm-1", false)), r)
		r.reset()
		id := g.Owner("cm-1").Identity
		g.VirtualDelete(id, r)
		expectQueued(t, "virtual owner confirmed absent", r.deletes, "s-1", "s-2")
		if g.Owner("cm-1").Known || g.VirtualLen() != 0 || !g.AbsentOwners().Has(id) {
			t.Fatalf("virtual node should be gone and remembered absent")
		}
	})
	t.Run("dependents disagree: node kept under the other coordinates", func(t *testing.T) {
		g, r := New(10), &recorder{}
		g.Observe(obj("Secret", "ns", "s1", "s-1", ownedBy("ConfigMap", "cm", "x-1", false)), r)
		g.Observe(obj("Secret", "ns", "s2", "s-2", ownedBy("Secret", "sec", "x-1", false)), r)
		r.reset()
		first := g.Owner("x-1").Identity
		if retry := g.VirtualDelete(first, r); !retry {
			t.Fatal("a node kept under other coordinates must be looked at again")
		}
		expectQueued(t, "one identity confirmed absent", r.deletes, "s-1")
		now := g.Owner("x-1")
		if !now.Known || now.Observed || now.Identity.Kind != "Secret" || now.Identity.Name != "sec" {
			t.Fatalf("virtual node should now carry the other coordinates: %+v", now)
		}
		if !g.AbsentOwners().Has(first) {
			t.Fatal("verified-absent coordinates must be remembered")
		}
	})
	t.Run("observed node under other coordinates stays", func(t *testing.T) {
		g, r := New(10), &recorder{}
		g.Observe(obj("ConfigMap", "ns", "cm", "cm-1"), r)
		g.Observe(obj("Secret", "ns", "s1", "s-1", ownedBy("ConfigMap", "wrong-name", "cm-1", false)), r)
		r.reset()
		g.VirtualDelete(Identity{Kind: "ConfigMap", Version: "v1", Namespace: "ns", Name: "wrong-name", UID: "cm-1"}, r)
		expectQueued(t, "reference by wrong coordinates is dangling", r.deletes, "s-1")
		if !g.Owner("cm-1").Observed {
			t.Fatal("the observed owner must stay")
		}
	})
}

func TestVirtualNodeObservedWithOtherCoordinatesRechecksDependents(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("Secret", "ns", "s1", "s-1", ownedBy("ConfigMap", "guess", "cm-1", false)), r)
	r.reset()
	g.Observe(obj("ConfigMap", "ns", "real", "cm-1"), r)
	expectQueued(t, "observed name differs from the reference", r.deletes, "s-1")
}

func TestRemoveKind(t *testing.T) {
	setup := func() (*Graph, *recorder) {
		g, r := New(10), &recorder{}
		g.Observe(obj("ConfigMap", "ns", "owner", "cm-1"), r)
		g.Observe(obj("ConfigMap", "ns", "leaf", "cm-2"), r)
		g.Observe(obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "owner", "cm-1", false)), r)
		r.reset()
		return g, r
	}
	cm := schema.GroupKind{Kind: "ConfigMap"}

	t.Run("ignored: owners become virtual, leaves go", func(t *testing.T) {
		g, r := setup()
		if n := g.RemoveKind(cm, KindIgnored, r); n != 2 {
			t.Fatalf("RemoveKind returned %d, want 2", n)
		}
		expectQueued(t, "owner made virtual is verified", r.deletes, "cm-1")
		if o := g.Owner("cm-1"); !o.Known || o.Observed {
			t.Fatalf("owner should be virtual: %+v", o)
		}
		if g.Owner("cm-2").Known || g.KindLen(cm) != 0 {
			t.Fatal("leaf of an ignored kind must leave the graph")
		}
		// Observed again once un-ignored.
		g.Observe(obj("ConfigMap", "ns", "owner", "cm-1"), r)
		if !g.Owner("cm-1").Observed || g.VirtualLen() != 0 {
			t.Fatal("re-observed owner should be observed again")
		}
	})
	t.Run("deleted: like observed deletions", func(t *testing.T) {
		g, r := setup()
		g.RemoveKind(cm, KindDeleted, r)
		expectQueued(t, "dependents of deleted kind", r.deletes, "s-1")
		if g.Len() != 1 {
			t.Fatalf("only the secret should remain, have %d nodes", g.Len())
		}
	})
}

func TestDuplicateAndReorderedOwnerReferences(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "a", "a-1"), r)
	g.Observe(obj("ConfigMap", "ns", "b", "b-1"), r)
	g.Observe(obj("Secret", "ns", "s", "s-1",
		ownedBy("ConfigMap", "a", "a-1", false), ownedBy("ConfigMap", "a", "a-1", false), ownedBy("ConfigMap", "b", "b-1", false)), r)
	if d := g.Describe(g.Node("a-1")).Dependents; d != 1 {
		t.Fatalf("duplicate reference linked %d times", d)
	}
	g.Observe(obj("Secret", "ns", "s", "s-1", ownedBy("ConfigMap", "b", "b-1", false), ownedBy("ConfigMap", "a", "a-1", false)), r)
	if g.Describe(g.Node("a-1")).Dependents != 1 || g.Describe(g.Node("b-1")).Dependents != 1 {
		t.Fatal("reordering references must keep both links")
	}
}

func TestManyDependentsIndexStaysConsistent(t *testing.T) {
	g, r := New(10), &recorder{}
	g.Observe(obj("ConfigMap", "ns", "owner", "o"), r)
	const n = 200
	for i := 0; i < n; i++ {
		g.Observe(obj("Secret", "ns", fmt.Sprint("s", i), fmt.Sprint("s-", i), ownedBy("ConfigMap", "owner", "o", i%2 == 0)), r)
	}
	for i := 0; i < n; i += 3 {
		g.ObserveDeleted(gone("Secret", "ns", fmt.Sprint("s", i)), r)
	}
	want := n - (n+2)/3
	if got := len(g.Dependents(g.Node("o"), false)); got != want {
		t.Fatalf("dependents after removals: %d, want %d", got, want)
	}
	for _, d := range g.Dependents(g.Node("o"), false) {
		if d.Node.has(flagRemoved) {
			t.Fatalf("removed dependent %s still listed", d.Identity.UID)
		}
	}
	for i := 0; i < n; i++ {
		g.ObserveDeleted(gone("Secret", "ns", fmt.Sprint("s", i)), r)
	}
	if d := g.Describe(g.Node("o")).Dependents; d != 0 {
		t.Fatalf("dependents left: %d", d)
	}
}
