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

// orphanCase deletes an owner with del and checks that its dependents are
// orphaned (only the reference to that owner removed) and that the owner is
// finally deleted, its orphan finalizer removed by ownergc.
func orphanCase(t *testing.T, del func(t *testing.T, owner framework.Object)) {
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	other := cp.Create(t, framework.ConfigMaps, ns, "other")
	only := cp.Create(t, framework.ConfigMaps, ns, "only", framework.OwnedBy(owner.Ref(false)))
	blocking := cp.Create(t, framework.ConfigMaps, ns, "blocking", framework.OwnedBy(owner.Ref(true)))
	shared := cp.Create(t, framework.ConfigMaps, ns, "shared", framework.OwnedBy(other.Ref(false), owner.Ref(true)))
	grandchild := cp.Create(t, framework.ConfigMaps, ns, "grandchild", framework.OwnedBy(only.Ref(false)))

	del(t, owner)
	cp.WaitGone(t, "ownergc should orphan its dependents and then remove its orphan finalizer", owner)
	cp.WaitOwners(t, only, "its only owner was deleted with the orphan policy")
	cp.WaitOwners(t, blocking, "its only owner was deleted with the orphan policy, blockOwnerDeletion notwithstanding")
	cp.WaitOwners(t, shared, "the orphaned owner's reference must be removed and the other one kept", other.UID)
	cp.WaitOwners(t, grandchild, "its owner was orphaned, not deleted", only.UID)
	cp.SurviveIntact(t, "orphaned objects are not collected", only, blocking, shared, grandchild)
}

func TestOrphanPropagationOrphansDependentsAndDeletesTheOwner(t *testing.T) {
	t.Parallel()
	orphanCase(t, func(t *testing.T, owner framework.Object) {
		cp.DeleteWith(t, owner, metav1.DeletePropagationOrphan)
	})
}

func TestDeprecatedOrphanDependentsOptionOrphansDependentsAndDeletesTheOwner(t *testing.T) {
	t.Parallel()
	orphanCase(t, func(t *testing.T, owner framework.Object) {
		orphan := true
		cp.DeleteWithOptions(t, owner, metav1.DeleteOptions{OrphanDependents: &orphan}) //nolint:staticcheck // SA1019: this test is about the deprecated option
	})
}
