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
