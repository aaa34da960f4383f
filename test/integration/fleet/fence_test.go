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
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ownergc/ownergc/test/framework"
)

// engineWitness runs beside each cluster's engine and records when it ran
// on which replica: a runnable the engine runs beside its own (Run), so it
// starts with the engine and the engine stops only after it has. It takes
// stopDelay to stop, as an engine does whose last requests are slow.
type engineWitness struct {
	mu        sync.Mutex
	runs      map[string][]witnessRun // by cluster
	stopDelay time.Duration
}

type witnessRun struct {
	replica     string
	start, stop time.Time // stop is zero while it runs
}

func (w *engineWitness) beside(replica string) func(cluster string) manager.Runnable {
	return func(cluster string) manager.Runnable {
		return manager.RunnableFunc(func(ctx context.Context) error {
			w.mu.Lock()
			i := len(w.runs[cluster])
			w.runs[cluster] = append(w.runs[cluster], witnessRun{replica: replica, start: time.Now()})
			w.mu.Unlock()
			<-ctx.Done()
			time.Sleep(w.stopDelay)
			w.mu.Lock()
			w.runs[cluster][i].stop = time.Now()
			w.mu.Unlock()
			return nil
		})
	}
}

// overlaps returns the runs of one cluster on different replicas that ran
// at the same time.
func (w *engineWitness) overlaps() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for cluster, runs := range w.runs {
		runs = append([]witnessRun(nil), runs...)
		sort.Slice(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
		for i := 1; i < len(runs); i++ {
			prev, next := runs[i-1], runs[i]
			if prev.stop.IsZero() || prev.stop.After(next.start) {
				errs = append(errs, fmt.Errorf("cluster %s: the engine on %s started at %s while the one on %s (started %s) still ran (stopped: %s)",
					cluster, next.replica, next.start.Format("15:04:05.000"), prev.replica, prev.start.Format("15:04:05.000"), stopped(prev.stop)))
			}
		}
	}
	return errors.Join(errs...)
}

func (w *engineWitness) replicasOf(cluster string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.runs[cluster] {
		out = append(out, r.replica)
	}
	return out
}

func stopped(t time.Time) string {
	if t.IsZero() {
		return "not yet"
	}
	return t.Format("15:04:05.000")
}

// A cluster that the coordinator hands to another replica never has two
// engines at once, even when the engine it leaves takes seconds to stop:
// the new replica's engine starts only once the old one's has stopped.
func TestAClusterHandedToAnotherReplicaNeverHasTwoEnginesAtOnce(t *testing.T) {
	ns := framework.CreateNamespace(t, host().Client)
	w := &engineWitness{runs: map[string][]witnessRun{}, stopDelay: 3 * time.Second}
	start := func(id string) *framework.FleetManager {
		return host().StartFleetManager(t, framework.FleetOptions{Namespace: ns, Shard: true, ReplicaID: id,
			LeaseDuration: shardLease, Beside: w.beside(id)})
	}
	// The first replica takes every cluster; the second, once it is seen,
	// is handed some (the same names as the sharding test, where the
	// rendezvous hash splits the clusters between them).
	first := start("ownergc-0")
	for i, cp := range clusters {
		cp.WriteKubeconfigSecret(t, host(), ns, names[i])
	}
	for _, name := range names {
		first.WaitSynced(t, name, engageTimeout)
	}
	second := start("ownergc-1")
	var moved string
	framework.Eventually(t, 2*time.Minute, func() error {
		for _, name := range names {
			if st, ok := second.Fleet.State(name); ok && st.Engine != nil && st.Engine.GraphSyncedCheck(nil) == nil {
				moved = name
				return nil
			}
		}
		return errors.New("the second replica runs no cluster's engine yet")
	}, "the coordinator should hand a cluster to the second replica")
	t.Logf("cluster %s moved: ran on %v", moved, w.replicasOf(moved))
	if err := w.overlaps(); err != nil {
		t.Fatal(err)
	}
	// And it is collected there.
	for i, cp := range clusters {
		if names[i] == moved {
			background(t, cp)
		}
	}
}

// A replica that cannot renew its heartbeat stops every engine it runs, as
// a leader that cannot renew stops leading, and starts them again once it
// holds the heartbeat again. The heartbeat is taken from it by writing
// another holder into its Lease and renewing it, as a replica that believes
// it expired would.
func TestAReplicaThatLosesItsHeartbeatStopsItsEngines(t *testing.T) {
	ns := framework.CreateNamespace(t, host().Client)
	const replica = "ownergc-hb"
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns, Shard: true, ReplicaID: replica, LeaseDuration: shardLease})
	clusters[0].WriteKubeconfigSecret(t, host(), ns, names[0])
	first := m.WaitSynced(t, names[0], engageTimeout)

	// Another holder, renewed every second for 3 Lease durations.
	leases := host().Clientset.CoordinationV1().Leases(ns)
	heartbeat := "ownergc-replica-" + replica
	intruder := "intruder/0"
	steal := func() error {
		l, err := leases.Get(context.Background(), heartbeat, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NowMicro()
		l.Spec.HolderIdentity, l.Spec.RenewTime = &intruder, &now
		l.Spec.LeaseDurationSeconds = ptr.To(int32(shardLease / time.Second))
		_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	}
	framework.Eventually(t, 10*time.Second, steal, "the heartbeat Lease %s should be taken", heartbeat)
	until := time.Now().Add(3 * shardLease)
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		for time.Now().Before(until) {
			time.Sleep(time.Second)
			_ = steal() // a conflict with the replica's own attempt: the next one wins
		}
	}()
	t.Cleanup(func() { <-renewing })

	// The replica's renewals fail for RenewDeadline (two thirds of the
	// duration); its engine stops while the intruder still holds it.
	framework.Eventually(t, 2*shardLease, func() error {
		if st, _ := m.Fleet.State(names[0]); st.Engine != nil {
			return fmt.Errorf("the engine still runs (%d starts)", st.Starts)
		}
		return nil
	}, "the engine of %s should stop once the replica has lost its heartbeat", names[0])
	if time.Now().After(until) {
		t.Fatalf("the engine stopped only after the intruder stopped renewing")
	}

	// Once the intruder stops renewing, its hold expires and the replica's
	// engine is built again.
	<-renewing
	again := m.WaitSynced(t, names[0], engageTimeout)
	if again == first {
		t.Errorf("the engine that ran before the heartbeat was lost runs again")
	}
	if st, _ := m.Fleet.State(names[0]); st.Starts < 2 {
		t.Errorf("the engine was built %d times, want at least 2", st.Starts)
	}
}
