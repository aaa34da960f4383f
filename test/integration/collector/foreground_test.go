package collector_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// Several chains at once, to give races between the collector's
	// workers a chance to show.
	const chains = 6
	ns := framework.CreateNamespace(t, k8s)
	var as, bs, cs []client.Object
	for i := range chains {
		a := configMap(t, ns, fmt.Sprintf("a-%d", i), nil)
		b := configMap(t, ns, fmt.Sprintf("b-%d", i), owned(ref(a, configMapGVK, true)))
		c := configMap(t, ns, fmt.Sprintf("c-%d", i), owned(ref(b, configMapGVK, true)), holdFinalizer)
		releaseOnCleanup(t, c)
		as, bs, cs = append(as, a), append(bs, b), append(cs, c)
	}
	for i := range chains {
		waitDependentInGraph(t, as[i], bs[i], true)
		waitDependentInGraph(t, bs[i], cs[i], true)
	}

	for _, a := range as {
		deleteWith(t, a, metav1.DeletePropagationForeground)
	}
	for i := range chains {
		waitDeleting(t, cs[i], "the bottom of a chain deleted in the foreground must be deleted", holdFinalizer)
		waitDeleting(t, bs[i], "a dependent with dependents of an owner deleted in the foreground must itself be deleted in the foreground", foregroundFinalizer)
	}
	staysDeleting(t, "the bottom of each chain still exists", foregroundFinalizer, append(slices.Clone(as), bs...)...)

	var all []client.Object
	for i := range chains {
		release(t, cs[i])
		all = append(all, cs[i], bs[i], as[i])
	}
	order := goneOrder(t, all...)
	for i := range chains {
		c, b, a := order[3*i], order[3*i+1], order[3*i+2]
		if !(c <= b && b <= a) {
			t.Errorf("chain %d not deleted bottom-up: first seen gone at polls c=%d b=%d a=%d", i, c, b, a)
		}
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
