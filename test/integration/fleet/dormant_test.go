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

package fleet_test

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// A member's kinds with no object are not watched (the fleet's default):
// its engine reports them dormant, and the periodic check finds the first
// object of such a kind, which is then watched and collected like any
// other.
func TestAMembersKindsWithNoObjectAreCheckedNotWatched(t *testing.T) {
	m, _ := startFleet(t, framework.FleetOptions{})
	cp := clusters[1]
	eng := m.Fleet.Engine(names[1])
	if st := eng.Status(); st.Dormant == 0 || st.Dormant >= st.Monitored {
		t.Fatalf("%d of %d monitored kinds dormant: an idle member has kinds with objects and kinds without", st.Dormant, st.Monitored)
	}

	gizmos, _ := cp.CreateCRD(t, framework.CRD{Group: framework.UniqueGroup("dormant"), Kind: "Gizmo", Plural: "gizmos", Scope: apiextensionsv1.NamespaceScoped})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := eng.KindState(gizmos.GroupKind()); !st.Dormant {
			return fmt.Errorf("kind state %+v", st)
		}
		return nil
	}, "a new kind with no object should go dormant once listed")

	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	dep := cp.Create(t, gizmos, ns, "dependent", framework.OwnedBy(owner.Ref(false)))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := eng.KindState(gizmos.GroupKind()); !st.Watched || !st.Synced {
			return fmt.Errorf("kind state %+v", st)
		}
		return nil
	}, "the periodic check (every %s) should find the kind's first object and watch the kind", framework.FleetDormantCheck)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its only owner was deleted", dep)
}
