package collector_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

const foregroundFinalizer = metav1.FinalizerDeleteDependents

func TestForegroundDeletesBlockingDependentsBeforeTheOwner(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	b1 := configMap(t, ns, "blocking-1", owned(ref(owner, configMapGVK, true)))
	b2 := configMap(t, ns, "blocking-2", owned(ref(owner, configMapGVK, true)))
	nb := configMap(t, ns, "non-blocking", owned(ref(owner, configMapGVK, false)))
	waitDependentInGraph(t, owner, b1, true)
	waitDependentInGraph(t, owner, b2, true)
	waitDependentInGraph(t, owner, nb, false)

	deleteWith(t, owner, metav1.DeletePropagationForeground)
	order := goneOrder(t, b1, b2, owner)
	if order[0] > order[2] || order[1] > order[2] {
		t.Fatalf("the owner was seen gone (poll %d) before its blocking dependents (polls %d, %d)", order[2], order[0], order[1])
	}
	waitGone(t, nb, "its only owner was deleted in the foreground")
}

func TestForegroundOwnerWaitsForABlockingDependentThatCannotBeDeletedYet(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	held := configMap(t, ns, "held", owned(ref(owner, configMapGVK, true)), holdFinalizer)
	releaseOnCleanup(t, held)
	waitDependentInGraph(t, owner, held, true)

	deleteWith(t, owner, metav1.DeletePropagationForeground)
	waitDeleting(t, held, "ownergc should delete the blocking dependent of an owner deleted in the foreground", holdFinalizer)
	staysDeleting(t, "its blocking dependent still exists", foregroundFinalizer, owner)

	release(t, held)
	waitGone(t, held, "its hold finalizer was removed")
	waitGone(t, owner, "its last blocking dependent is gone")
}

func TestForegroundOwnerDoesNotWaitForANonBlockingDependent(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	held := configMap(t, ns, "held", owned(ref(owner, configMapGVK, false)), holdFinalizer)
	releaseOnCleanup(t, held)
	waitDependentInGraph(t, owner, held, false)

	deleteWith(t, owner, metav1.DeletePropagationForeground)
	waitGone(t, owner, "its only dependent does not block its deletion")
	if _, ok := get(t, held); !ok {
		t.Fatalf("the held dependent is gone although its hold finalizer was never removed")
	}
	waitDeleting(t, held, "its only owner was deleted", holdFinalizer)

	release(t, held)
	waitGone(t, held, "its hold finalizer was removed")
}

func TestForegroundDeletesAChainBottomUp(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	a := configMap(t, ns, "a", nil)
	b := configMap(t, ns, "b", owned(ref(a, configMapGVK, true)))
	c := configMap(t, ns, "c", owned(ref(b, configMapGVK, true)), holdFinalizer)
	releaseOnCleanup(t, c)
	waitDependentInGraph(t, a, b, true)
	waitDependentInGraph(t, b, c, true)

	deleteWith(t, a, metav1.DeletePropagationForeground)
	waitDeleting(t, c, "the bottom of a chain deleted in the foreground must be deleted", holdFinalizer)
	waitDeleting(t, b, "a dependent with dependents of an owner deleted in the foreground must itself be deleted in the foreground", foregroundFinalizer)
	staysDeleting(t, "the bottom of the chain still exists", foregroundFinalizer, a, b)

	release(t, c)
	order := goneOrder(t, c, b, a)
	if !(order[0] <= order[1] && order[1] <= order[2]) {
		t.Fatalf("chain not deleted bottom-up: first seen gone at polls c=%d b=%d a=%d", order[0], order[1], order[2])
	}
}

func TestForegroundDeletionOfAnOwnershipCycleFinishes(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	a := configMap(t, ns, "a", nil)
	b := configMap(t, ns, "b", owned(ref(a, configMapGVK, true)))
	a = update(t, a, func(cur *corev1.ConfigMap) {
		cur.SetOwnerReferences(owned(ref(b, configMapGVK, true)))
	})
	if got := ownerUIDs(a); len(got) != 1 || got[0] != string(b.UID) {
		t.Fatalf("a's owner references are %v, want b's uid %s", got, b.UID)
	}
	waitDependentInGraph(t, a, b, true)
	waitDependentInGraph(t, b, a, true)

	deleteWith(t, a, metav1.DeletePropagationForeground)
	waitGone(t, a, "a cycle deleted in the foreground must not deadlock")
	waitGone(t, b, "a cycle deleted in the foreground must not deadlock")
}
