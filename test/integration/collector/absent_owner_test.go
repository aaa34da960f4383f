package collector_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

func TestDependentOfAnOwnerThatNeverExistedIsCollected(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	dep := configMap(t, ns, "dep", owned(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: uuid.NewUUID()}))
	waitGone(t, dep, "its only owner does not exist")
}

func TestDependentOfAnOwnerNameWithAnotherUIDIsCollectedAndTheNamesakeKept(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	namesake := configMap(t, ns, "owner", nil)
	waitObserved(t, namesake)
	dep := configMap(t, ns, "dep", owned(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: uuid.NewUUID()}))
	waitGone(t, dep, "the object named by its owner reference has another UID, so its owner is absent")
	cur, ok := get(t, namesake)
	if !ok || cur.UID != namesake.UID || cur.DeletionTimestamp != nil {
		t.Fatalf("the existing object with the owner's name (uid %s) must be left alone: exists=%v uid=%s deletionTimestamp=%v",
			namesake.UID, ok, cur.UID, cur.DeletionTimestamp)
	}
}

func TestDependentOfAnExistingOwnerIsKept(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	dep := configMap(t, ns, "dep", owned(ref(owner, configMapGVK, false)))
	blocking := configMap(t, ns, "blocking", owned(ref(owner, configMapGVK, true)))
	waitDependentInGraph(t, owner, dep, false)
	waitDependentInGraph(t, owner, blocking, true)
	surviveAll(t, "their owner exists", owner, dep, blocking)
}
