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
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/fleet"
)

func conditions(s ownergcv1alpha1.ClusterGCStatusStatus) (ready, degraded *metav1.Condition) {
	return apimeta.FindStatusCondition(s.Conditions, ownergcv1alpha1.ConditionReady),
		apimeta.FindStatusCondition(s.Conditions, ownergcv1alpha1.ConditionDegraded)
}

// A cluster's status on the host follows its engine and its API server.
func TestClusterStatusConditions(t *testing.T) {
	r := &ClusterGCStatusReconciler{Replica: "ownergc-0"}
	engaged := time.Now()
	for _, c := range []struct {
		name                     string
		st                       fleet.MemberState
		probe                    error
		ready, degraded          metav1.ConditionStatus
		readyReason, degradedWhy string
	}{
		{"starting", fleet.MemberState{Engaged: engaged}, nil,
			metav1.ConditionFalse, metav1.ConditionFalse, ownergcv1alpha1.ReasonStarting, ownergcv1alpha1.ReasonAllResourcesAvailable},
		{"engine failed", fleet.MemberState{Engaged: engaged, Starts: 2, LastError: errors.New("boom")}, nil,
			metav1.ConditionFalse, metav1.ConditionTrue, ownergcv1alpha1.ReasonEngineFailed, ownergcv1alpha1.ReasonEngineFailed},
		{"unreachable", fleet.MemberState{Engaged: engaged, Starts: 1, LastError: errors.New("boom")}, errors.New("connection refused"),
			metav1.ConditionFalse, metav1.ConditionTrue, ownergcv1alpha1.ReasonEngineFailed, ownergcv1alpha1.ReasonUnreachable},
		{"over the object limit", fleet.MemberState{Engaged: engaged, Starts: 1, LastError: fmt.Errorf("%w: 12 > 10", fleet.ErrTooManyObjects)}, nil,
			metav1.ConditionFalse, metav1.ConditionTrue, ownergcv1alpha1.ReasonObjectLimitExceeded, ownergcv1alpha1.ReasonObjectLimitExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := r.status("tenant-a", ownergcv1alpha1.ClusterGCStatusStatus{}, c.st, c.probe)
			ready, degraded := conditions(s)
			if ready == nil || ready.Status != c.ready || ready.Reason != c.readyReason {
				t.Errorf("Ready = %+v, want %s %s", ready, c.ready, c.readyReason)
			}
			if degraded == nil || degraded.Status != c.degraded || degraded.Reason != c.degradedWhy {
				t.Errorf("Degraded = %+v, want %s %s", degraded, c.degraded, c.degradedWhy)
			}
			if s.Cluster != "tenant-a" || s.Replica != "ownergc-0" || s.EngineStarts != int32(c.st.Starts) || !s.Engaged.Time.Equal(engaged.Truncate(time.Second)) {
				t.Errorf("status %+v", s)
			}
		})
	}
}

// A Secret that engages no cluster gets a status that names the field at
// fault, with a reason of its own for a refused kubeconfig and for an
// unusable Secret, and names no replica (every replica writes the same).
func TestRefusedSecretStatus(t *testing.T) {
	for _, c := range []struct {
		name, reason string
		policy       fleet.KubeconfigPolicy
		kubeconfig   string
		field        string
	}{
		{"exec", ownergcv1alpha1.ReasonKubeconfigRefused, fleet.KubeconfigPolicy{}, `
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://example.invalid"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}}}]
`, "users[u].user.exec"},
		{"unparseable", ownergcv1alpha1.ReasonSecretInvalid, fleet.KubeconfigPolicy{}, "{not yaml", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			refusal := c.policy.Check([]byte(c.kubeconfig))
			if refusal == nil {
				t.Fatal("the kubeconfig was accepted")
			}
			s := refusedStatus("tenant-a", ownergcv1alpha1.ClusterGCStatusStatus{}, refusal)
			ready, degraded := conditions(s)
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != c.reason {
				t.Errorf("Ready = %+v, want False %s", ready, c.reason)
			}
			if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != c.reason || !strings.Contains(degraded.Message, c.field) {
				t.Errorf("Degraded = %+v, want True %s naming %q", degraded, c.reason, c.field)
			}
			if s.Cluster != "tenant-a" || s.Replica != "" || s.Engaged != nil {
				t.Errorf("status %+v: it should name the cluster and no replica", s)
			}
		})
	}
}

// An idle cluster's status computed again equals the one the API server
// stored (times to the second), so it is not written again until the
// rewrite interval: a status kept to the nanosecond never did, and every
// reconcile wrote it.
func TestAnUnchangedClusterStatusEqualsTheStoredOne(t *testing.T) {
	r := &ClusterGCStatusReconciler{Replica: "ownergc-0"}
	st := fleet.MemberState{Engaged: time.Date(2026, 11, 26, 10, 0, 0, 123456789, time.UTC), Starts: 1}
	first := r.status("tenant-a", ownergcv1alpha1.ClusterGCStatusStatus{}, st, nil)
	data, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	var stored ownergcv1alpha1.ClusterGCStatusStatus
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	again := r.status("tenant-a", stored, st, nil)
	if !apiequality.Semantic.DeepEqual(withoutUpdate(again), withoutUpdate(stored)) {
		t.Errorf("the status computed again differs from the stored one:\nstored %+v\nagain  %+v", stored, again)
	}
}

// What an engine's progress moves (counts, messages, Ready from Starting to
// Syncing) waits for the refresh; what a reader waits for or acts on (a
// condition's status or reason, the replica, the engine's starts and
// failures) is written at once.
func TestClusterProgressIsCountsMessagesAndStartingToSyncing(t *testing.T) {
	engaged := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	base := func() ownergcv1alpha1.ClusterGCStatusStatus {
		return ownergcv1alpha1.ClusterGCStatusStatus{Cluster: "tenant-a", Replica: "ownergc-0", Engaged: &engaged, EngineStarts: 1,
			Conditions: []metav1.Condition{
				{Type: ownergcv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ownergcv1alpha1.ReasonStarting, Message: "starting"},
				{Type: ownergcv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: ownergcv1alpha1.ReasonAllResourcesAvailable},
			}}
	}
	later := metav1.NewTime(engaged.Add(time.Minute))
	for _, c := range []struct {
		name     string
		change   func(s *ownergcv1alpha1.ClusterGCStatusStatus)
		progress bool
	}{
		{"nothing", func(*ownergcv1alpha1.ClusterGCStatusStatus) {}, true},
		{"counts", func(s *ownergcv1alpha1.ClusterGCStatusStatus) {
			s.MonitoredResources, s.Nodes, s.VirtualNodes = 60, 120, 3
		}, true},
		{"Starting to Syncing", func(s *ownergcv1alpha1.ClusterGCStatusStatus) {
			s.Conditions[0].Reason, s.Conditions[0].Message = ownergcv1alpha1.ReasonSyncing, "The graph is syncing 12 resources"
		}, true},
		{"Ready", func(s *ownergcv1alpha1.ClusterGCStatusStatus) {
			s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonSynced
		}, false},
		{"the engine failed", func(s *ownergcv1alpha1.ClusterGCStatusStatus) {
			s.Conditions[0].Reason = ownergcv1alpha1.ReasonEngineFailed
		}, false},
		{"degraded", func(s *ownergcv1alpha1.ClusterGCStatusStatus) {
			s.Conditions[1].Status, s.Conditions[1].Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonUnreachable
		}, false},
		{"failed resources", func(s *ownergcv1alpha1.ClusterGCStatusStatus) { s.FailedResources = 2 }, false},
		{"a deletion blocked", func(s *ownergcv1alpha1.ClusterGCStatusStatus) { s.BlockedDeletions = 1 }, false},
		{"engine started again", func(s *ownergcv1alpha1.ClusterGCStatusStatus) { s.EngineStarts = 2 }, false},
		{"another replica", func(s *ownergcv1alpha1.ClusterGCStatusStatus) { s.Replica = "ownergc-1" }, false},
		{"engaged again", func(s *ownergcv1alpha1.ClusterGCStatusStatus) { s.Engaged = &later }, false},
		{"a condition gone", func(s *ownergcv1alpha1.ClusterGCStatusStatus) { s.Conditions = s.Conditions[:1] }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := base()
			c.change(&next)
			if got := clusterProgressOnly(base(), next); got != c.progress {
				t.Errorf("clusterProgressOnly = %v, want %v", got, c.progress)
			}
		})
	}
	if clusterProgressOnly(ownergcv1alpha1.ClusterGCStatusStatus{}, base()) {
		t.Error("a first status (no conditions stored) is progress only")
	}
}

// startingFleet is a fleet of one cluster, engaged at a time a test sets,
// whose engine has not started; probe is its API server's answer.
type startingFleet struct {
	engaged time.Time
	probe   error
}

func (f *startingFleet) State(string) (fleet.MemberState, bool) {
	return fleet.MemberState{Engaged: f.engaged}, true
}
func (f *startingFleet) Refusal(string) error                               { return nil }
func (f *startingFleet) Probe(context.Context, string, time.Duration) error { return f.probe }
func (f *startingFleet) Subscribe(func(string))                             {}

// A cluster engaged moments ago whose engine is still starting has no
// status written (nor its ClusterGCStatus created) for its first refresh
// interval: an engine that syncs within it has its status written once,
// Ready. What fails (an API server that does not answer) is written at
// once, and a status still starting once the interval has passed.
func TestAStartingClusterHasItsStatusWrittenOnceSyncedOrFailing(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ownergcv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		engaged   time.Duration // ago
		probe     error
		written   bool
		wantReady string
	}{
		{"starting, engaged 2s ago", 2 * time.Second, nil, false, ""},
		{"unreachable, engaged 2s ago", 2 * time.Second, errors.New("connection refused"), true, ownergcv1alpha1.ReasonStarting},
		{"starting, engaged 11s ago", 11 * time.Second, nil, true, ownergcv1alpha1.ReasonStarting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "tenant-a", UID: "1",
				Labels: map[string]string{fleet.KubeconfigSecretLabel: "true"}}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret).WithStatusSubresource(&ownergcv1alpha1.ClusterGCStatus{}).Build()
			r := &ClusterGCStatusReconciler{Client: c, Fleet: &startingFleet{engaged: time.Now().Add(-tc.engaged), probe: tc.probe},
				Namespace: "fleet", Replica: "ownergc-0", RefreshInterval: 10 * time.Second}
			key := types.NamespacedName{Namespace: "fleet", Name: "tenant-a"}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			if err != nil {
				t.Fatal(err)
			}
			var cgs ownergcv1alpha1.ClusterGCStatus
			err = c.Get(context.Background(), key, &cgs)
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			ready, _ := conditions(cgs.Status)
			if written := err == nil && cgs.Status.LastUpdate != nil; written != tc.written {
				t.Errorf("status written: %v, want %v (%+v, %v)", written, tc.written, cgs.Status, err)
			}
			if created := err == nil; created != tc.written {
				t.Errorf("the ClusterGCStatus exists: %v, want %v: it is created with its first status", created, tc.written)
			}
			if tc.written && (ready == nil || ready.Reason != tc.wantReady) {
				t.Errorf("Ready %+v, want reason %s", ready, tc.wantReady)
			}
			if !tc.written && (res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Second) {
				t.Errorf("looked at again after %s, want within the refresh interval", res.RequeueAfter)
			}
		})
	}
}

// A status is created, then written; the creation's event usually reaches
// the cache before the write's, and the reconcile it triggers reads the
// status as it was created. From that copy the status is not written again
// (over a stale resourceVersion, which the API server would refuse as a
// conflict); once the cache holds the write, the unchanged status is not
// written either.
func TestAStatusReadFromACacheBehindItsLastWriteIsNotWrittenAgain(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ownergcv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "tenant-a", UID: "1",
		Labels: map[string]string{fleet.KubeconfigSecretLabel: "true"}}}
	var (
		created     *ownergcv1alpha1.ClusterGCStatus // as the creation returned it
		behind      bool                             // Get serves created
		writes      int
		conflicts   int
		statusCalls []string
	)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret).WithStatusSubresource(&ownergcv1alpha1.ClusterGCStatus{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				err := c.Create(ctx, obj, opts...)
				if cgs, ok := obj.(*ownergcv1alpha1.ClusterGCStatus); ok && err == nil {
					created = cgs.DeepCopy()
				}
				return err
			},
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if cgs, ok := obj.(*ownergcv1alpha1.ClusterGCStatus); ok && behind && created != nil {
					created.DeepCopyInto(cgs)
					return nil
				}
				return c.Get(ctx, key, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				statusCalls = append(statusCalls, obj.GetResourceVersion())
				err := c.SubResource(sub).Update(ctx, obj, opts...)
				switch {
				case apierrors.IsConflict(err):
					conflicts++
				case err == nil:
					writes++
				}
				return err
			},
		}).Build()
	// Still starting after a refresh interval: written at once.
	r := &ClusterGCStatusReconciler{Client: c, Fleet: &startingFleet{engaged: time.Now().Add(-time.Minute)},
		Namespace: "fleet", Replica: "ownergc-0", RefreshInterval: 10 * time.Second}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "fleet", Name: "tenant-a"}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if created == nil || writes != 1 {
		t.Fatalf("the first reconcile should create the status and write it once: created %v, %d writes", created != nil, writes)
	}

	behind = true
	res, err := r.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if writes != 1 || conflicts != 0 {
		t.Errorf("reconciled from the status as created (resourceVersion %s), the reconciler sent %d more status writes (%d refused as conflicts; resourceVersions %v): want none",
			created.ResourceVersion, len(statusCalls)-1, conflicts, statusCalls)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("a status read from a cache behind the last write should be looked at again (requeue %s)", res.RequeueAfter)
	}

	behind = false
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if writes != 1 || conflicts != 0 {
		t.Errorf("the cache caught up and the status is unchanged: %d writes, %d conflicts, want 1 and 0", writes, conflicts)
	}
}
