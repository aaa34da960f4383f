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

package faults_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// Fault: a dependent has two references to its owner's UID, one that does
// not block its deletion and one that does (the API server keeps both). The
// owner's foreground deletion waits for it, whatever the order of the
// references.
func TestDuplicateReferencesWithDifferentBlockOwnerDeletion(t *testing.T) {
	for _, order := range []string{"blocking last", "blocking first"} {
		t.Run(order, func(t *testing.T) {
			ns := framework.CreateNamespace(t, cp.Client)
			m := cp.StartManager(t, framework.ManagerOptions{})
			owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
			refs := []metav1.OwnerReference{owner.Ref(false), owner.Ref(true)}
			if order == "blocking first" {
				refs[0], refs[1] = refs[1], refs[0]
			}
			dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(refs...), framework.WithFinalizers(framework.HoldFinalizer))
			if cur, _ := cp.Get(t, dep); len(cur.GetOwnerReferences()) != 2 {
				t.Fatalf("the API server kept %d references, want both", len(cur.GetOwnerReferences()))
			}
			m.WaitObserved(t, owner, dep)
			deletions := cp.WatchDeletions(t, framework.ConfigMaps, ns)

			cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
			cp.WaitDeleting(t, dep, framework.HoldFinalizer, "ownergc deletes the blocking dependent first")
			cp.Survive(t, "the owner must wait for its blocking dependent", owner)
			cp.RemoveFinalizer(t, dep, framework.HoldFinalizer)
			cp.WaitGone(t, "its blocking dependent is gone", dep, owner)
			deletions.AssertDeletedBefore(t, []string{dep.Name}, owner.Name)
		})
	}
}
