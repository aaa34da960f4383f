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
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

func TestDependentOfAnUnservedKindIsNeverCollected(t *testing.T) {
	ns := parallelNamespace(t)
	ghost := metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "casper", UID: uuid.NewUUID()}
	ghostOnly := cp.Create(t, framework.ConfigMaps, ns, "ghost-only", framework.OwnedBy(ghost))
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	mixed := cp.Create(t, framework.ConfigMaps, ns, "mixed", framework.OwnedBy(ghost, owner.Ref(false)))
	plain := cp.Create(t, framework.ConfigMaps, ns, "plain", framework.OwnedBy(owner.Ref(false)))
	manager.WaitLinked(t, owner, mixed, false)
	manager.WaitLinked(t, owner, plain, false)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its only owner was deleted", plain)
	cp.SurviveIntact(t, "an owner of a kind the API server does not serve can never be verified absent", ghostOnly, mixed)

	// The manager keeps working.
	owner2 := cp.Create(t, framework.ConfigMaps, ns, "owner-2")
	dep2 := dependentOf(t, owner2, "dep-2", true)
	cp.DeleteWith(t, owner2, metav1.DeletePropagationForeground)
	cp.WaitGone(t, "its only owner was deleted in the foreground", dep2)
	cp.WaitGone(t, "its only blocking dependent is gone", owner2)
	cp.MustExist(t, "the dependent of an unserved kind was deleted", ghostOnly)
}
