package collector_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

var clusterRoleGVK = rbacv1.SchemeGroupVersion.WithKind("ClusterRole")

// clusterRole creates a cluster-scoped ClusterRole with a generated name,
// deleted when the test ends.
func clusterRole(t *testing.T, refs []metav1.OwnerReference) *rbacv1.ClusterRole {
	t.Helper()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "ownergc-test-", OwnerReferences: refs}}
	if err := k8s.Create(ctx(t), cr); err != nil {
		t.Fatalf("creating ClusterRole: %v", err)
	}
	t.Cleanup(func() {
		if err := k8s.Delete(ctx(t), cr); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ClusterRole %s: %v", cr.Name, err)
		}
	})
	return cr
}

func TestDependentReferencingAnOwnerInAnotherNamespaceIsCollectedWithAWarning(t *testing.T) {
	t.Parallel()
	nsA := framework.CreateNamespace(t, k8s)
	nsB := framework.CreateNamespace(t, k8s)
	owner := configMap(t, nsA, "owner", nil)
	waitObserved(t, owner)

	dep := configMap(t, nsB, "dep", owned(ref(owner, configMapGVK, false)))
	waitGone(t, dep, "a namespaced owner must be in its dependent's namespace; no such owner exists in that namespace")
	waitEvent(t, nsB, dep.UID, corev1.EventTypeWarning, "OwnerRefInvalidNamespace")
	survives(t, owner, "the owner in the other namespace is not the dependent's owner and has no owners itself")
}

func TestClusterScopedDependentOfANamespacedKindIsNeverCollected(t *testing.T) {
	t.Parallel()
	owner := metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: "no-such-config-map-" + string(uuid.NewUUID())[:8], UID: uuid.NewUUID(),
	}
	dep := clusterRole(t, owned(owner))
	waitEvent(t, metav1.NamespaceDefault, dep.UID, corev1.EventTypeWarning, "OwnerRefInvalidNamespace")
	survives(t, dep, "a cluster-scoped object naming a namespaced owner has an unresolvable reference and cannot be collected")
}

func TestNamespacedDependentOfAClusterScopedOwnerIsCollected(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := clusterRole(t, nil)
	dep := configMap(t, ns, "dep", owned(ref(owner, clusterRoleGVK, false)))
	kept := configMap(t, ns, "kept", nil)
	waitDependentInGraph(t, owner, dep, false)

	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitGone(t, dep, "its cluster-scoped owner was deleted")
	if _, ok := get(t, kept); !ok {
		t.Fatalf("an unrelated object without owners was deleted")
	}
}
