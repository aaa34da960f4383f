package collector_test

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

func TestBackgroundCascadeDeletesDependentsWhoseOwnersAreGone(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	child := configMap(t, ns, "child", owned(ref(owner, configMapGVK, false)))
	grandchild := configMap(t, ns, "grandchild", owned(ref(child, configMapGVK, false)))

	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitGone(t, child, "its only owner was deleted")
	waitGone(t, grandchild, "its owner was collected")
}

func TestObjectWithALiveOwnerIsKeptAndLosesItsDanglingReference(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	gone := configMap(t, ns, "gone", nil)
	alive := configMap(t, ns, "alive", nil)
	dep := configMap(t, ns, "dep", owned(ref(gone, configMapGVK, false), ref(alive, configMapGVK, false)))

	deleteWith(t, gone, metav1.DeletePropagationBackground)
	framework.Eventually(t, cascadeTimeout, func() error {
		cur, ok := get(t, dep)
		if !ok {
			return fmt.Errorf("dependent with a live owner was deleted")
		}
		if got := ownerUIDs(cur); !slices.Equal(got, []string{string(alive.UID)}) {
			return fmt.Errorf("owner references are %v, want only the live owner %s", got, alive.UID)
		}
		return nil
	}, "the dangling reference should be removed and the dependent kept")
	survives(t, dep, "it still has a live owner")
}
