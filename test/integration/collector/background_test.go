package collector_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

func TestBackgroundCascadeDeletesDependentsWhoseOwnersAreGone(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	child := cp.Create(t, framework.ConfigMaps, ns, "child", framework.OwnedBy(owner.Ref(false)))
	grandchild := cp.Create(t, framework.ConfigMaps, ns, "grandchild", framework.OwnedBy(child.Ref(false)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its only owner was deleted", child)
	cp.WaitGone(t, "its owner was collected", grandchild)
}

func TestObjectWithALiveOwnerIsKeptAndLosesItsDanglingReference(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	gone := cp.Create(t, framework.ConfigMaps, ns, "gone")
	alive := cp.Create(t, framework.ConfigMaps, ns, "alive")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(gone.Ref(false), alive.Ref(false)))

	cp.DeleteWith(t, gone, metav1.DeletePropagationBackground)
	cp.WaitOwners(t, dep, "the dangling reference should be removed and the dependent kept", alive.UID)
	cp.Survive(t, "it still has a live owner", dep)
}
