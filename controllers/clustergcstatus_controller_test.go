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
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
