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

package collector_test

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/test/framework"
)

const foregroundFinalizer = metav1.FinalizerDeleteDependents

func TestForegroundDeletesBlockingDependentsBeforeTheOwner(t *testing.T) {
	ns := parallelNamespace(t)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	b1 := cp.Create(t, framework.ConfigMaps, ns, "blocking-1", framework.OwnedBy(owner.Ref(true)))
	b2 := cp.Create(t, framework.ConfigMaps, ns, "blocking-2", framework.OwnedBy(owner.Ref(true)))
	nb := cp.Create(t, framework.ConfigMaps, ns, "non-blocking", framework.OwnedBy(owner.Ref(false)))
	manager.WaitLinked(t, owner, b1, true)
	manager.WaitLinked(t, owner, b2, true)
	manager.WaitLinked(t, owner, nb, false)

	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	order := goneOrder(t, b1, b2, owner)
	if order[0] > order[2] || order[1] > order[2] {
		t.Fatalf("the owner was seen gone (poll %d) before its blocking dependents (polls %d, %d)", order[2], order[0], order[1])
	}
	cp.WaitGone(t, "its only owner was deleted in the foreground", nb)
}

func TestForegroundOwnerWaitsForABlockingDependentThatCannotBeDeletedYet(t *testing.T) {
	owner, held := deleteOwnerOfAHeldDependent(t, true)
	cp.WaitDeleting(t, held, framework.HoldFinalizer, "ownergc should delete the blocking dependent of an owner deleted in the foreground")
	cp.StayDeleting(t, "its blocking dependent still exists", foregroundFinalizer, owner)

	cp.Release(t, held)
	cp.WaitGone(t, "its last blocking dependent is gone", owner)
}

func TestForegroundOwnerDoesNotWaitForANonBlockingDependent(t *testing.T) {
	owner, held := deleteOwnerOfAHeldDependent(t, false)
	cp.WaitGone(t, "its only dependent does not block its deletion", owner)
	cp.WaitHeldDeleting(t, held, "its only owner was deleted")

	cp.Release(t, held)
}

func TestForegroundDeletesAChainBottomUp(t *testing.T) {
	// Several chains at once, to give races between the collector's
	// workers a chance to show.
	const chains = 6
	ns := parallelNamespace(t)
	var as, bs, cs []framework.Object
	for i := range chains {
		a := cp.Create(t, framework.ConfigMaps, ns, fmt.Sprintf("a-%d", i))
		b := cp.Create(t, framework.ConfigMaps, ns, fmt.Sprintf("b-%d", i), framework.OwnedBy(a.Ref(true)))
		c := cp.CreateHeld(t, framework.ConfigMaps, ns, fmt.Sprintf("c-%d", i), framework.OwnedBy(b.Ref(true)))
		as, bs, cs = append(as, a), append(bs, b), append(cs, c)
	}
	for i := range chains {
		manager.WaitLinked(t, as[i], bs[i], true)
		manager.WaitLinked(t, bs[i], cs[i], true)
	}

	for _, a := range as {
		cp.DeleteWith(t, a, metav1.DeletePropagationForeground)
	}
	for i := range chains {
		cp.WaitDeleting(t, cs[i], framework.HoldFinalizer, "the bottom of a chain deleted in the foreground must be deleted")
		cp.WaitDeleting(t, bs[i], foregroundFinalizer, "a dependent with dependents of an owner deleted in the foreground must itself be deleted in the foreground")
	}
	cp.StayDeleting(t, "the bottom of each chain still exists", foregroundFinalizer, append(slices.Clone(as), bs...)...)

	var all []framework.Object
	for i := range chains {
		cp.RemoveFinalizer(t, cs[i], framework.HoldFinalizer)
		all = append(all, cs[i], bs[i], as[i])
	}
	order := goneOrder(t, all...)
	for i := range chains {
		c, b, a := order[3*i], order[3*i+1], order[3*i+2]
		if c > b || b > a {
			t.Errorf("chain %d not deleted bottom-up: first seen gone at polls c=%d b=%d a=%d", i, c, b, a)
		}
	}
}

func TestForegroundDeletionOfAnOwnershipCycleFinishes(t *testing.T) {
	ns := parallelNamespace(t)
	a := cp.Create(t, framework.ConfigMaps, ns, "a")
	b := cp.Create(t, framework.ConfigMaps, ns, "b", framework.OwnedBy(a.Ref(true)))
	cur := cp.Update(t, a, func(u *unstructured.Unstructured) {
		u.SetOwnerReferences([]metav1.OwnerReference{b.Ref(true)})
	})
	if got := framework.OwnerUIDs(cur); !slices.Equal(got, []types.UID{b.UID}) {
		t.Fatalf("a's owner references are %v, want b's uid %s", got, b.UID)
	}
	manager.WaitLinked(t, a, b, true)
	manager.WaitLinked(t, b, a, true)

	cp.DeleteWith(t, a, metav1.DeletePropagationForeground)
	cp.WaitGone(t, "a cycle deleted in the foreground must not deadlock", a)
	cp.WaitGone(t, "a cycle deleted in the foreground must not deadlock", b)
}

// deleteOwnerOfAHeldDependent creates, in a namespace of the test's own, an
// owner and a dependent held by HoldFinalizer (blocking the owner's
// deletion when block), then deletes the owner in the foreground.
func deleteOwnerOfAHeldDependent(t *testing.T, block bool) (owner, held framework.Object) {
	t.Helper()
	owner = cp.Create(t, framework.ConfigMaps, parallelNamespace(t), "owner")
	held = heldDependentOf(t, owner, "held", block)
	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	return owner, held
}
