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

package framework

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pods and Jobs as the API-level collectors find them: the control plane
// runs no kubelet and no Job controller, so their status is the test's
// (SetPodPhase, FinishJob).

// NewPod returns a Pod to create in ns, bound to node ("" for none).
func NewPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "example.com/image"}}},
	}
}

// SetPodPhase sets a Pod's phase (and status reason) through the status
// subresource, as a kubelet would.
func (cp *ControlPlane) SetPodPhase(t testing.TB, p *corev1.Pod, phase corev1.PodPhase, reason string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Pod{}
		if err := cp.Client.Get(Context(t), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status.Phase, cur.Status.Reason = phase, reason
		return cp.Client.Status().Update(Context(t), cur)
	})
	if err != nil {
		t.Fatalf("setting the phase of Pod %s to %s: %v", p.Name, phase, err)
	}
}

// NewJob returns a Job to create in ns.
func NewJob(ns, name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "example.com/image"}}}}},
	}
}

// FinishJob gives a Job a finished status, as the Job controller would:
// Complete (or Failed) since at.
func (cp *ControlPlane) FinishJob(t testing.TB, j *batchv1.Job, condition batchv1.JobConditionType, at time.Time) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &batchv1.Job{}
		if err := cp.Client.Get(Context(t), client.ObjectKeyFromObject(j), cur); err != nil {
			return err
		}
		when := metav1.NewTime(at)
		cur.Status.StartTime = ptr.To(metav1.NewTime(at.Add(-time.Minute)))
		cond := func(c batchv1.JobConditionType) batchv1.JobCondition {
			return batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: when, LastProbeTime: when, Reason: "Test"}
		}
		if condition == batchv1.JobComplete {
			cur.Status.CompletionTime = &when
			cur.Status.Succeeded = 1
			cur.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
		} else {
			cur.Status.Failed = 1
			cur.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
		}
		return cp.Client.Status().Update(Context(t), cur)
	})
	if err != nil {
		t.Fatalf("finishing Job %s: %v", j.Name, err)
	}
}
