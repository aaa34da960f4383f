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

func TestDependentOfAnOwnerThatNeverExistedIsCollected(t *testing.T) {
	ns := parallelNamespace(t)
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: uuid.NewUUID()}))
	cp.WaitGone(t, "its only owner does not exist", dep)
}

func TestDependentOfAnOwnerNameWithAnotherUIDIsCollectedAndTheNamesakeKept(t *testing.T) {
	ns := parallelNamespace(t)
	namesake := cp.Create(t, framework.ConfigMaps, ns, "owner")
	manager.WaitObserved(t, namesake)
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: uuid.NewUUID()}))
	cp.WaitGone(t, "the object named by its owner reference has another UID, so its owner is absent", dep)
	cur, ok := cp.Get(t, namesake)
	if !ok {
		t.Fatalf("the existing object with the owner's name (uid %s) must be left alone: it was deleted", namesake.UID)
	}
	if ts := cur.GetDeletionTimestamp(); ts != nil {
		t.Fatalf("the existing object with the owner's name (uid %s) must be left alone: it is being deleted (deletionTimestamp %v)", namesake.UID, ts)
	}
}

func TestDependentOfAnExistingOwnerIsKept(t *testing.T) {
	ns := parallelNamespace(t)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	dep := dependentOf(t, owner, "dep", false)
	blocking := dependentOf(t, owner, "blocking", true)
	cp.SurviveIntact(t, "their owner exists", owner, dep, blocking)
}
