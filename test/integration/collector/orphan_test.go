package collector_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

// orphanCase deletes an owner with del and checks that its dependents are
// orphaned (only the reference to that owner removed) and that the owner is
// finally deleted, its orphan finalizer removed by ownergc.
func orphanCase(t *testing.T, del func(t *testing.T, owner client.Object)) {
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	other := configMap(t, ns, "other", nil)
	only := configMap(t, ns, "only", owned(ref(owner, configMapGVK, false)))
	blocking := configMap(t, ns, "blocking", owned(ref(owner, configMapGVK, true)))
	shared := configMap(t, ns, "shared", owned(ref(other, configMapGVK, false), ref(owner, configMapGVK, true)))
	grandchild := configMap(t, ns, "grandchild", owned(ref(only, configMapGVK, false)))

	del(t, owner)
	waitGone(t, owner, "ownergc should orphan its dependents and then remove its orphan finalizer")
	waitOwners(t, only, "its only owner was deleted with the orphan policy")
	waitOwners(t, blocking, "its only owner was deleted with the orphan policy, blockOwnerDeletion notwithstanding")
	waitOwners(t, shared, "the orphaned owner's reference must be removed and the other one kept", other)
	waitOwners(t, grandchild, "its owner was orphaned, not deleted", only)
	surviveAll(t, "orphaned objects are not collected", only, blocking, shared, grandchild)
}

func TestOrphanPropagationOrphansDependentsAndDeletesTheOwner(t *testing.T) {
	t.Parallel()
	orphanCase(t, func(t *testing.T, owner client.Object) {
		deleteWith(t, owner, metav1.DeletePropagationOrphan)
	})
}

func TestDeprecatedOrphanDependentsOptionOrphansDependentsAndDeletesTheOwner(t *testing.T) {
	t.Parallel()
	orphanCase(t, func(t *testing.T, owner client.Object) {
		orphan := true
		deleteOpts(t, owner, metav1.DeleteOptions{OrphanDependents: &orphan})
	})
}
