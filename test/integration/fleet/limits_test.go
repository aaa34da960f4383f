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
	"strings"
	"testing"
	"time"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// A member whose graph outgrows --max-objects-per-cluster has its engine
// stopped, and its status says why with a reason of its own, while another
// member goes on being collected.
func TestAMemberOverTheObjectLimitStopsAlone(t *testing.T) {
	// How many objects each member holds now, from an unbounded fleet.
	m, _ := startFleet(t, framework.FleetOptions{})
	held := 0
	for _, name := range names[1:] {
		g := m.Fleet.Engine(name).Graph()
		held = max(held, g.Len()+g.VirtualLen())
	}
	m.Stop()

	const more = 300
	limit := held + more/2
	ns := framework.CreateNamespace(t, host().Client)
	m = host().StartFleetManager(t, framework.FleetOptions{Namespace: ns, MaxObjects: limit, OverLimitRetryAfter: time.Hour})
	for _, i := range []int{1, 2} {
		clusters[i].WriteKubeconfigSecret(t, host(), ns, names[i])
		m.WaitSynced(t, names[i], engageTimeout)
	}

	// The last member grows past the limit.
	big := clusters[2]
	bigNS := framework.CreateNamespace(t, big.Client)
	for i := range more {
		big.Create(t, framework.ConfigMaps, bigNS, fmt.Sprintf("filler-%d", i))
	}
	cgs := waitStatus(t, m, ns, names[2], "False", "True", ownergcv1alpha1.ReasonObjectLimitExceeded)
	for _, c := range cgs.Status.Conditions {
		if !strings.Contains(c.Message, fmt.Sprint(limit)) {
			t.Errorf("condition %s says %q, which does not name the limit %d", c.Type, c.Message, limit)
		}
	}
	if st, _ := m.Fleet.State(names[2]); st.Engine != nil {
		t.Errorf("the engine of the member over the limit still runs")
	}
	t.Run("the other member is collected", func(t *testing.T) { background(t, clusters[1]) })
	waitStatus(t, m, ns, names[1], "True", "False", "")
}

// With --shard, a Secret's name makes the names of the cluster's engine
// Lease: the longest name a Secret may have engages its cluster (its engine
// Lease's name is shortened with a hash).
func TestLongSecretNamesWhenSharding(t *testing.T) {
	ns := framework.CreateNamespace(t, host().Client)
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns, Shard: true, ReplicaID: "replica-0", LeaseDuration: 6 * time.Second})
	longest := strings.Repeat("a", 253)
	clusters[1].WriteKubeconfigSecret(t, host(), ns, longest)
	m.WaitSynced(t, longest, engageTimeout)
}

// A replica started with many kubeconfig Secrets present engages every
// cluster at once, and their monitors list a few kinds at a time: never
// more lists at once than the bound, and the bound reached (the lists went
// through it); every cluster syncs, and one of them is collected.
func TestManyClustersEngagedAtOnceListAFewKindsAtATime(t *testing.T) {
	const bound = 3
	ns := framework.CreateNamespace(t, host().Client)
	var engaged []string
	for round := range 3 {
		for i, cp := range clusters {
			name := fmt.Sprintf("%s-%d", names[i], round)
			cp.WriteKubeconfigSecret(t, host(), ns, name)
			engaged = append(engaged, name)
		}
	}
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns, ConcurrentLists: bound})
	for _, name := range engaged {
		m.WaitSynced(t, name, engageTimeout)
	}
	most, size := m.Fleet.ListsAtOnce()
	if size != bound || most != bound {
		t.Fatalf("the %d engines listed %d kinds at once at most, within a bound of %d: want the bound (%d) reached and never passed",
			len(engaged), most, size, bound)
	}
	background(t, clusters[1])
}
