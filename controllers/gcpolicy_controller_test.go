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

package controllers

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/expiry"
	"github.com/ownergc/ownergc/internal/policy"
)

// The policy is reconciled when someone changes it, not when its status is
// written (by the reconciler itself, most of the time).
func TestOnlyChangesToThePolicyReconcileIt(t *testing.T) {
	base := func() *ownergcv1alpha1.GCPolicy {
		return &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName, Generation: 3, ResourceVersion: "10",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}}
	}
	now := metav1.NewTime(time.Now())
	for name, tc := range map[string]struct {
		change func(*ownergcv1alpha1.GCPolicy)
		want   bool
	}{
		"its status":                {func(p *ownergcv1alpha1.GCPolicy) { p.Status.Graph.Nodes, p.Status.LastSyncTime = 42, &now }, false},
		"its spec (the generation)": {func(p *ownergcv1alpha1.GCPolicy) { p.Generation++ }, true},
		"a label":                   {func(p *ownergcv1alpha1.GCPolicy) { p.Labels["a"] = "x" }, true},
		"an annotation":             {func(p *ownergcv1alpha1.GCPolicy) { p.Annotations["e"] = "f" }, true},
	} {
		t.Run(name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			cur.ResourceVersion = "11"
			if got := policyChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("reconciled: %v, want %v", got, tc.want)
			}
		})
	}
	if !policyChanged().Create(event.CreateEvent{Object: base()}) || !policyChanged().Delete(event.DeleteEvent{Object: base()}) {
		t.Error("the policy's creation and deletion must reconcile it")
	}
}

// Every API-level collector the engine runs is reported in the field of
// status.collectors named after it, and every field reports one: a collector
// added without a field (or a field named after no collector) fails here
// rather than going unreported.
func TestEveryAPICollectorIsReportedInTheFieldOfItsName(t *testing.T) {
	store := policy.NewStore()
	collectors, err := engine.NewAPICollectors(apigc.Options{Policy: store}, expiry.New(expiry.Options{Policy: store}))
	if err != nil {
		t.Fatal(err)
	}
	var statuses []apigc.Status
	for i, c := range collectors {
		st := c.Status()
		st.Enabled, st.Deleted = true, int64(i+1)
		statuses = append(statuses, st)
	}
	data, err := json.Marshal(collectorsStatus(statuses))
	if err != nil {
		t.Fatal(err)
	}
	var reported map[string]ownergcv1alpha1.CollectorStatus
	if err := json.Unmarshal(data, &reported); err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses {
		if got := reported[st.Name]; !got.Enabled || got.Deleted != st.Deleted {
			t.Errorf("collector %s is reported as %+v in status.collectors.%s, want enabled with %d deleted", st.Name, got, st.Name, st.Deleted)
		}
	}
	if fields := slices.Sorted(maps.Keys(reported)); len(fields) != len(statuses) || len(collectorFields) != len(statuses) {
		t.Errorf("status.collectors has the fields %v and the controller fills %d, for %d collectors", fields, len(collectorFields), len(statuses))
	}
}

// A status is written at once when what a reader waits for or acts on
// changes (conditions, blocked deletions, ...); when only the engine's
// progress moves (the graph's size, the number of monitored resources,
// Ready's message while Syncing), once the stored one is a refresh interval
// old; and, when only lastSyncTime would change, once a heartbeat has
// passed (a fleet member's) or at every refresh (no heartbeat).
func TestAStatusIsWrittenOnChangeProgressOnRefreshAndTheTimeOnHeartbeat(t *testing.T) {
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(time.Now().Add(-d)); return &t }
	syncing := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: ownergcv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ownergcv1alpha1.ReasonSyncing, Message: msg}}
	}
	stored := func(synced *metav1.Time) ownergcv1alpha1.GCPolicyStatus {
		return ownergcv1alpha1.GCPolicyStatus{MonitoredResources: 63, Graph: ownergcv1alpha1.GraphStatus{Nodes: 200}, LastSyncTime: synced,
			Conditions: syncing("Syncing 3 of 63 monitored resources into the graph: a, b, c")}
	}
	now := metav1.Now()
	lastRun := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	for name, tc := range map[string]struct {
		heartbeat time.Duration
		stored    ownergcv1alpha1.GCPolicyStatus
		change    func(*ownergcv1alpha1.GCPolicyStatus)
		skip      bool
	}{
		"the time alone, within the heartbeat": {time.Minute, stored(ago(30 * time.Second)), func(*ownergcv1alpha1.GCPolicyStatus) {}, true},
		"the time alone, the heartbeat passed": {time.Minute, stored(ago(61 * time.Second)), func(*ownergcv1alpha1.GCPolicyStatus) {}, false},
		"the graph's size, within the refresh": {time.Minute, stored(ago(2 * time.Second)), func(s *ownergcv1alpha1.GCPolicyStatus) {
			s.Graph.Nodes++
			s.MonitoredResources++
		}, true},
		"the graph's size, the refresh passed": {time.Minute, stored(ago(11 * time.Second)), func(s *ownergcv1alpha1.GCPolicyStatus) { s.Graph.Nodes++ }, false},
		"what is still syncing, within the refresh": {time.Minute, stored(ago(time.Second)), func(s *ownergcv1alpha1.GCPolicyStatus) {
			s.Conditions = syncing("Syncing 1 of 63 monitored resources into the graph: c")
		}, true},
		"Ready, within the refresh": {time.Minute, stored(ago(time.Second)), func(s *ownergcv1alpha1.GCPolicyStatus) {
			s.Conditions = []metav1.Condition{{Type: ownergcv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ownergcv1alpha1.ReasonSynced, Message: "synced"}}
		}, false},
		"a blocked deletion, within the refresh": {time.Minute, stored(ago(time.Second)), func(s *ownergcv1alpha1.GCPolicyStatus) { s.BlockedDeletions = 1 }, false},
		"a condition added, within the heartbeat": {time.Minute, stored(ago(time.Second)), func(s *ownergcv1alpha1.GCPolicyStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ownergcv1alpha1.ConditionDegraded})
		}, false},
		"never written": {time.Minute, stored(nil), func(*ownergcv1alpha1.GCPolicyStatus) {}, false},
		"no heartbeat: the time alone waits for the refresh": {0, stored(ago(time.Second)), func(*ownergcv1alpha1.GCPolicyStatus) {}, true},
		"no heartbeat: every refresh writes":                 {0, stored(ago(11 * time.Second)), func(*ownergcv1alpha1.GCPolicyStatus) {}, false},
		// The API server keeps times to the second: a collector's lastRun
		// computed again to the nanosecond is the same.
		"a time as stored, within the heartbeat": {time.Minute, func() ownergcv1alpha1.GCPolicyStatus {
			s := stored(ago(30 * time.Second))
			s.Collectors = &ownergcv1alpha1.CollectorsStatus{FinishedJobs: ownergcv1alpha1.CollectorStatus{LastRun: &metav1.Time{Time: lastRun.Truncate(time.Second)}}}
			return s
		}(), func(s *ownergcv1alpha1.GCPolicyStatus) {
			s.Collectors.FinishedJobs.LastRun = &metav1.Time{Time: lastRun}
		}, true},
		"written by a replica whose clock is ahead": {time.Minute, stored(ago(-30 * time.Second)), func(*ownergcv1alpha1.GCPolicyStatus) {}, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &GCPolicyReconciler{Heartbeat: tc.heartbeat}
			next := *tc.stored.DeepCopy()
			next.LastSyncTime = &now
			tc.change(&next)
			later, got := r.notYet(tc.stored, next)
			if got != tc.skip {
				t.Errorf("left unwritten: %v, want %v", got, tc.skip)
			}
			if got && (later <= 0 || later > r.refresh()) {
				t.Errorf("looked at again after %s, want within the refresh interval (%s)", later, r.refresh())
			}
		})
	}
}
