package collector_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// When ownergc deletes an object whose owners are all gone, the object's own
// orphan or foregroundDeletion finalizer chooses the propagation policy.

func TestCollectedObjectWithOrphanFinalizerOrphansItsDependents(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	other := configMap(t, ns, "other", nil)
	mid := configMap(t, ns, "mid", owned(ref(owner, configMapGVK, false)), metav1.FinalizerOrphanDependents)
	leaf := configMap(t, ns, "leaf", owned(ref(mid, configMapGVK, true)))
	sharedLeaf := configMap(t, ns, "shared-leaf", owned(ref(other, configMapGVK, false), ref(mid, configMapGVK, false)))
	waitDependentInGraph(t, owner, mid, false)
	waitDependentInGraph(t, mid, leaf, true)
	waitDependentInGraph(t, mid, sharedLeaf, false)

	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitGone(t, mid, "its only owner was deleted; ownergc deletes it with the orphan policy and then orphans its dependents")
	waitOwners(t, leaf, "its owner carried the orphan finalizer, so it must be orphaned, not collected")
	waitOwners(t, sharedLeaf, "its orphaned owner's reference must be removed and the other kept", other)
	surviveAll(t, "orphaned objects are not collected", leaf, sharedLeaf)
}

func TestCollectedObjectWithForegroundFinalizerIsDeletedInTheForeground(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	mid := configMap(t, ns, "mid", owned(ref(owner, configMapGVK, false)), foregroundFinalizer)
	leaf := configMap(t, ns, "leaf", owned(ref(mid, configMapGVK, true)), holdFinalizer)
	releaseOnCleanup(t, leaf)
	waitDependentInGraph(t, owner, mid, false)
	waitDependentInGraph(t, mid, leaf, true)

	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitDeleting(t, leaf, "the blocking dependent of an object deleted in the foreground must be deleted", holdFinalizer)
	staysDeleting(t, "an object with the foregroundDeletion finalizer must be deleted in the foreground and wait for its blocking dependent", foregroundFinalizer, mid)

	release(t, leaf)
	order := goneOrder(t, leaf, mid)
	if order[0] > order[1] {
		t.Fatalf("mid was seen gone (poll %d) before its blocking dependent (poll %d)", order[1], order[0])
	}
}

func TestCollectedObjectWithoutFinalizerIsDeletedInTheBackground(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	mid := configMap(t, ns, "mid", owned(ref(owner, configMapGVK, false)))
	leaf := configMap(t, ns, "leaf", owned(ref(mid, configMapGVK, true)), holdFinalizer)
	releaseOnCleanup(t, leaf)
	waitDependentInGraph(t, owner, mid, false)
	waitDependentInGraph(t, mid, leaf, true)

	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitGone(t, mid, "an object without a propagation finalizer is deleted in the background: it must not wait for its held dependent")
	if _, ok := get(t, leaf); !ok {
		t.Fatalf("the held dependent is gone although its hold finalizer was never removed")
	}
	waitDeleting(t, leaf, "its only owner was collected", holdFinalizer)

	release(t, leaf)
	waitGone(t, leaf, "its hold finalizer was removed")
}
