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

package expiry_test

import (
	"fmt"
	"testing"
	"time"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// Only the leader schedules: a standby, with the same graph, schedules
// nothing. When the leader goes without releasing its lease, what comes
// due before the standby takes over is deleted by the new leader at once,
// found in the graph it already holds.
func TestOnlyTheLeaderSchedulesAndANewLeaderFindsEverythingDue(t *testing.T) {
	const leaseDuration = 8 * time.Second
	lease := fmt.Sprintf("expiry-%d", time.Now().UnixNano())
	leader := startOwnManager(t, managerOptions{lease: lease, leaseDuration: leaseDuration})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		select {
		case <-leader.mgr.Elected():
			return nil
		default:
			return fmt.Errorf("not elected yet")
		}
	}, "the first manager should lead")
	standby := startOwnManager(t, managerOptions{lease: lease, leaseDuration: leaseDuration})
	resetOnCleanup(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())

	ns := framework.CreateNamespace(t, cp.Client)
	later := cp.Create(t, framework.ConfigMaps, ns, "later", ttl("1h"))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := expiryStatus(t, leader.engine); !st.Running || st.Scheduled < 1 {
			return fmt.Errorf("the leader's expiry: %+v", st)
		}
		if !standbyKnows(standby, later) {
			return fmt.Errorf("the standby has not observed %s", later)
		}
		return nil
	}, "the leader should schedule the object, and the standby observe it")
	if st := expiryStatus(t, standby.engine); st.Running || st.Scheduled != 0 {
		t.Fatalf("the standby schedules: %+v", st)
	}

	// The leader goes without releasing its lease; objects come due before
	// the standby may take over.
	// Due 5 s from now: the leader stops before, the standby may take over
	// only once the lease, renewed until the stop, has expired (8 s).
	dueAt := time.Now().Add(5 * time.Second)
	due := cp.Create(t, framework.ConfigMaps, ns, "due", expires(dueAt.UTC().Format(time.RFC3339Nano)))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if !standbyKnows(standby, due) {
			return fmt.Errorf("the standby has not observed %s", due)
		}
		return nil
	}, "the standby should observe the object")
	leader.Stop()
	stopped := time.Now()
	cp.Survive(t, "no leader while the lease has not expired", due)
	var elected time.Time
	framework.Eventually(t, 2*leaseDuration+framework.CascadeTimeout, func() error {
		select {
		case <-standby.mgr.Elected():
			elected = time.Now()
			return nil
		default:
			return fmt.Errorf("not elected yet, %s after the leader stopped", time.Since(stopped).Round(time.Second))
		}
	}, "the standby should take over once the lease expires")
	if !elected.After(dueAt) {
		t.Fatalf("the standby took over at %s, before the object's time %s: the test did not leave it due without a leader", elected, dueAt)
	}
	gone := cp.WaitGoneWithin(t, framework.CascadeTimeout, "the new leader finds the object due in its graph and deletes it", due)
	if took := gone.Sub(elected); took > 10*time.Second {
		t.Errorf("the new leader deleted the due object %s after it was elected, want at once", took)
	}
	cp.SurviveIntact(t, "its time is to come", later)
	if st := expiryStatus(t, standby.engine); !st.Running || st.Deleted < 1 || st.Scheduled < 1 {
		t.Errorf("the new leader's expiry: %+v", st)
	}
}

// standbyKnows reports whether m's graph has observed o.
func standbyKnows(m *manager, o framework.Object) bool {
	return m.engine.Graph().Owner(o.UID).Observed
}
