package collector_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

func TestDependentOfAnUnservedKindIsNeverCollected(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	ghost := metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "casper", UID: uuid.NewUUID()}
	ghostOnly := configMap(t, ns, "ghost-only", owned(ghost))
	owner := configMap(t, ns, "owner", nil)
	mixed := configMap(t, ns, "mixed", owned(ghost, ref(owner, configMapGVK, false)))
	plain := configMap(t, ns, "plain", owned(ref(owner, configMapGVK, false)))
	waitDependentInGraph(t, owner, mixed, false)
	waitDependentInGraph(t, owner, plain, false)

	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitGone(t, plain, "its only owner was deleted")
	surviveAll(t, "an owner of a kind the API server does not serve can never be verified absent", ghostOnly, mixed)

	// The manager keeps working.
	owner2 := configMap(t, ns, "owner-2", nil)
	dep2 := configMap(t, ns, "dep-2", owned(ref(owner2, configMapGVK, true)))
	waitDependentInGraph(t, owner2, dep2, true)
	deleteWith(t, owner2, metav1.DeletePropagationForeground)
	waitGone(t, dep2, "its only owner was deleted in the foreground")
	waitGone(t, owner2, "its only blocking dependent is gone")
	if _, ok := get(t, ghostOnly); !ok {
		t.Fatalf("the dependent of an unserved kind was deleted")
	}
}
