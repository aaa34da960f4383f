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
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// Fault: a CRD's preferred version changes in the middle of a cascade over
// its objects — a version added (served, stored, preferred), or the
// preferred version no longer served. The kind is watched again at the new
// version, from an empty cache: every dependent is still collected, however
// soon after the change their owner goes.
func TestCascadeAcrossAPreferredVersionChange(t *testing.T) {
	const dependents = 200
	for _, tc := range []struct {
		name   string
		change func(framework.CRD) framework.CRD
	}{
		{"version added", func(s framework.CRD) framework.CRD {
			s.Versions = []string{"v1", "v2"}
			return s
		}},
		{"preferred version no longer served", func(s framework.CRD) framework.CRD {
			s.Versions, s.Storage, s.Unserved = []string{"v1", "v2"}, "v1", []string{"v2"}
			return s
		}},
	} {
		for _, delay := range []time.Duration{0, time.Second} {
			t.Run(fmt.Sprintf("%s, owner deleted %s later", tc.name, delay), func(t *testing.T) {
				ns := framework.CreateNamespace(t, cp.Client)
				crd := framework.CRD{Group: framework.UniqueGroup("versions"), Kind: "Sprocket", Plural: "sprockets", Versions: []string{"v1"}}
				if tc.name == "preferred version no longer served" {
					crd.Versions = []string{"v1", "v2"} // v2 preferred, v1 stored
					crd.Storage = "v1"
				}
				sprockets, _ := cp.CreateCRD(t, crd)
				m := cp.StartManager(t, framework.ManagerOptions{})
				waitWatched(t, m, sprockets.GroupKind(), true)

				owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
				labels := map[string]string{"ownergc.test/dependent": "true"}
				deps := cp.CreateMany(t, sprockets, ns, "dependent", dependents, framework.OwnedBy(owner.Ref(false)), framework.WithLabels(labels))
				m.WaitObserved(t, deps...)

				cp.UpdateCRD(t, tc.change(crd))
				time.Sleep(delay) // the cascade starts this long after the change
				cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
				framework.Eventually(t, framework.CascadeTimeout, func() error {
					if n := cp.Count(t, sprockets, ns, "ownergc.test/dependent=true"); n > 0 {
						return fmt.Errorf("%d of %d dependents remain; %s", n, dependents, m.Describe(deps[0]))
					}
					return nil
				}, "every dependent of the deleted owner should be collected")
			})
		}
	}
}

// Fault: a CRD's preferred version changes while a foreground deletion of
// one of its objects waits for its last blocking dependents (one of the
// same kind, one ConfigMap). Once they go, the owner goes.
func TestForegroundDeletionAcrossAPreferredVersionChange(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	crd := framework.CRD{Group: framework.UniqueGroup("fgversions"), Kind: "Cog", Plural: "cogs", Versions: []string{"v1"}}
	cogs, _ := cp.CreateCRD(t, crd)
	m := cp.StartManager(t, framework.ManagerOptions{})
	waitWatched(t, m, cogs.GroupKind(), true)

	owner := cp.Create(t, cogs, ns, "owner")
	cogDep := cp.Create(t, cogs, ns, "blocking-cog", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	cmDep := cp.Create(t, framework.ConfigMaps, ns, "blocking-configmap", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	m.WaitObserved(t, owner, cogDep, cmDep)
	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	cp.WaitDeleting(t, cogDep, framework.HoldFinalizer, "ownergc deletes the blocking dependents first")
	cp.WaitDeleting(t, cmDep, framework.HoldFinalizer, "ownergc deletes the blocking dependents first")

	crd.Versions = []string{"v1", "v2"}
	cp.UpdateCRD(t, crd)
	cp.WaitDeleting(t, owner, metav1.FinalizerDeleteDependents, "its blocking dependents are still there")
	cp.RemoveFinalizer(t, cmDep, framework.HoldFinalizer)
	cp.RemoveFinalizer(t, cogDep, framework.HoldFinalizer)
	cp.WaitGone(t, "the blocking dependents are gone, so is the owner", cmDep, cogDep, owner)
}
