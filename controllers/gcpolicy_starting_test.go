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
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/policy"
)

// startingEngine is an engine whose state a test moves: not discovered,
// discovered, synced, failing.
type startingEngine struct {
	Engine
	policy     *policy.Policy
	discovered bool
	status     engine.Status
}

func (e *startingEngine) Policy() *policy.Policy     { return e.policy }
func (e *startingEngine) SetPolicy(p *policy.Policy) { e.policy = p }
func (e *startingEngine) SettlePolicy()              {}
func (e *startingEngine) Status() engine.Status      { return e.status }
func (e *startingEngine) OnStatusChange(func())      {}
func (e *startingEngine) UnmatchedIgnored([]schema.GroupResource) ([]schema.GroupResource, bool) {
	return nil, e.discovered
}

// An engine that starts has its status written once it has synced, not
// while it discovers and syncs (three writes before, per member of a fleet
// engaged in a storm): the stored status, an earlier replica's Ready,
// stays until then, and the transitions recorded are those of what is
// written (the generation it puts in force is the one the stored status
// reports: no PolicyApplied). What fails is written at once, and so is what is still syncing
// once a refresh interval has passed since the first reconcile.
func TestAStartingEngineHasItsStatusWrittenOnceSynced(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ownergcv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	earlier := metav1.NewTime(time.Now().Add(-5 * time.Minute).Truncate(time.Second))
	stored := &ownergcv1alpha1.GCPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName, Generation: 1},
		Spec:       ownergcv1alpha1.DefaultSpec(),
		Status: ownergcv1alpha1.GCPolicyStatus{ObservedGeneration: 1, LastSyncTime: &earlier, MonitoredResources: 60,
			Conditions: []metav1.Condition{{Type: ownergcv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ownergcv1alpha1.ReasonSynced,
				Message: "synced", ObservedGeneration: 1, LastTransitionTime: earlier}}},
	}
	syncing := engine.Status{Monitored: 60, Syncing: []string{"configmaps"}}
	synced := engine.Status{Monitored: 60, Synced: true}
	failing := engine.Status{Monitored: 60, Syncing: []string{"configmaps"}, Failed: []engine.Failure{{Group: "example.com", Version: "v1", Message: "no"}}}

	type step struct {
		discovered bool
		status     engine.Status
		// since the first reconcile, as the step reconciles
		after      time.Duration
		written    bool
		wantReady  metav1.ConditionStatus
		wantEvents []string
	}
	for name, steps := range map[string][]step{
		"discovering, discovered, synced": {
			{false, syncing, 0, false, metav1.ConditionTrue, nil},
			{true, syncing, 2 * time.Second, false, metav1.ConditionTrue, nil},
			{true, synced, 3 * time.Second, true, metav1.ConditionTrue, nil},
		},
		"a failure while syncing": {
			{true, syncing, 0, false, metav1.ConditionTrue, nil},
			{true, failing, time.Second, true, metav1.ConditionFalse, []string{ReasonResourcesUnavailable}},
		},
		"still syncing after a refresh interval": {
			{true, syncing, 0, false, metav1.ConditionTrue, nil},
			{true, syncing, 11 * time.Second, true, metav1.ConditionFalse, nil},
			{true, synced, 12 * time.Second, true, metav1.ConditionTrue, []string{ReasonBecameReady}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored.DeepCopy()).WithStatusSubresource(&ownergcv1alpha1.GCPolicy{}).Build()
			eng := &startingEngine{policy: policy.Defaults()}
			rec := events.NewFakeRecorder(10)
			r := &GCPolicyReconciler{Client: c, Engine: eng, Recorder: rec, RefreshInterval: 10 * time.Second}
			req := ctrl.Request{NamespacedName: types.NamespacedName{Name: ownergcv1alpha1.PolicyName}}
			var first time.Time
			for i, s := range steps {
				eng.discovered, eng.status = s.discovered, s.status
				if i > 0 {
					r.startedAt = first.Add(-s.after) // as if s.after had passed
				}
				var before ownergcv1alpha1.GCPolicy
				if err := c.Get(context.Background(), req.NamespacedName, &before); err != nil {
					t.Fatal(err)
				}
				res, err := r.Reconcile(context.Background(), req)
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				if i == 0 {
					first = r.startedAt
				}
				var after ownergcv1alpha1.GCPolicy
				if err := c.Get(context.Background(), req.NamespacedName, &after); err != nil {
					t.Fatal(err)
				}
				if written := after.ResourceVersion != before.ResourceVersion; written != s.written {
					t.Errorf("step %d: status written: %v, want %v (Ready %+v)", i+1, written, s.written,
						apimeta.FindStatusCondition(after.Status.Conditions, ownergcv1alpha1.ConditionReady))
				}
				if !s.written && (res.RequeueAfter <= 0 || res.RequeueAfter > r.refresh()) {
					t.Errorf("step %d: looked at again after %s, want within the refresh interval", i+1, res.RequeueAfter)
				}
				if got := apimeta.FindStatusCondition(after.Status.Conditions, ownergcv1alpha1.ConditionReady); got == nil || got.Status != s.wantReady {
					t.Errorf("step %d: stored Ready %+v, want %s", i+1, got, s.wantReady)
				}
				var reasons []string
				for len(rec.Events) > 0 {
					e := <-rec.Events
					reasons = append(reasons, strings.Fields(e)[1])
				}
				if strings.Join(reasons, ",") != strings.Join(s.wantEvents, ",") {
					t.Errorf("step %d: events %v, want %v", i+1, reasons, s.wantEvents)
				}
			}
		})
	}
}

// PolicyApplied is recorded when the engine puts in force a generation the
// stored status does not report in force, not when an engine that starts
// again puts in force the one it reports.
func TestPolicyAppliedIsRecordedForAGenerationNotYetInForce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ownergcv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                      string
		generation, storedInForce int64
		want                      bool
	}{
		{"an engine starting again: the stored status reports this generation in force", 3, 3, false},
		{"a new generation", 4, 3, true},
		{"no generation reported in force yet", 1, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stored := &ownergcv1alpha1.GCPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName, Generation: c.generation},
				Spec:       ownergcv1alpha1.DefaultSpec(),
				Status:     ownergcv1alpha1.GCPolicyStatus{ObservedGeneration: c.storedInForce},
			}
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(&ownergcv1alpha1.GCPolicy{}).Build()
			eng := &startingEngine{policy: policy.Defaults(), discovered: true, status: engine.Status{Monitored: 60, Synced: true}}
			rec := events.NewFakeRecorder(10)
			r := &GCPolicyReconciler{Client: cl, Engine: eng, Recorder: rec, RefreshInterval: 10 * time.Second}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: ownergcv1alpha1.PolicyName}}); err != nil {
				t.Fatal(err)
			}
			if eng.policy.Generation != c.generation {
				t.Fatalf("the engine runs generation %d, want %d", eng.policy.Generation, c.generation)
			}
			var reasons []string
			for len(rec.Events) > 0 {
				reasons = append(reasons, strings.Fields(<-rec.Events)[1])
			}
			if got := slices.Contains(reasons, ReasonPolicyApplied); got != c.want {
				t.Errorf("PolicyApplied recorded: %v, want %v (events %v)", got, c.want, reasons)
			}
		})
	}
}
