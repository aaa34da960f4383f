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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// When ownergc deletes an object whose owners are all gone, the object's own
// orphan or foregroundDeletion finalizer chooses the propagation policy.

func TestCollectedObjectWithOrphanFinalizerOrphansItsDependents(t *testing.T) {
	ns := parallelNamespace(t)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	other := cp.Create(t, framework.ConfigMaps, ns, "other")
	mid := cp.Create(t, framework.ConfigMaps, ns, "mid", framework.OwnedBy(owner.Ref(false)), framework.WithFinalizers(metav1.FinalizerOrphanDependents))
	leaf := cp.Create(t, framework.ConfigMaps, ns, "leaf", framework.OwnedBy(mid.Ref(true)))
	sharedLeaf := cp.Create(t, framework.ConfigMaps, ns, "shared-leaf", framework.OwnedBy(other.Ref(false), mid.Ref(false)))
	manager.WaitLinked(t, owner, mid, false)
	manager.WaitLinked(t, mid, leaf, true)
	manager.WaitLinked(t, mid, sharedLeaf, false)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its only owner was deleted; ownergc deletes it with the orphan policy and then orphans its dependents", mid)
	cp.WaitOwners(t, leaf, "its owner carried the orphan finalizer, so it must be orphaned, not collected")
	cp.WaitOwners(t, sharedLeaf, "its orphaned owner's reference must be removed and the other kept", other.UID)
	cp.SurviveIntact(t, "orphaned objects are not collected", leaf, sharedLeaf)
}

func TestCollectedObjectWithForegroundFinalizerIsDeletedInTheForeground(t *testing.T) {
	ns := parallelNamespace(t)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	mid := dependentOf(t, owner, "mid", false, framework.WithFinalizers(metav1.FinalizerDeleteDependents))
	leaf := heldDependentOf(t, mid, "leaf", true)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitDeleting(t, leaf, framework.HoldFinalizer, "the blocking dependent of an object deleted in the foreground must be deleted")
	cp.StayDeleting(t, "an object with the foregroundDeletion finalizer must be deleted in the foreground and wait for its blocking dependent", metav1.FinalizerDeleteDependents, mid)

	cp.RemoveFinalizer(t, leaf, framework.HoldFinalizer)
	order := goneOrder(t, leaf, mid)
	if order[0] > order[1] {
		t.Fatalf("mid was seen gone (poll %d) before its blocking dependent (poll %d)", order[1], order[0])
	}
}

func TestCollectedObjectWithoutFinalizerIsDeletedInTheBackground(t *testing.T) {
	ns := parallelNamespace(t)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	mid := dependentOf(t, owner, "mid", false)
	leaf := heldDependentOf(t, mid, "leaf", true)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "an object without a propagation finalizer is deleted in the background: it must not wait for its held dependent", mid)
	cp.WaitHeldDeleting(t, leaf, "its only owner was collected")

	cp.Release(t, leaf)
}
