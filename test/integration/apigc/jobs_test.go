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

package apigc_test

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

func enableJobs(t *testing.T) {
	t.Helper()
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) {
		c.FinishedJobs.Enabled = true
	})
}

// A finished Job is deleted once its ttlSecondsAfterFinished has passed
// since its Complete or Failed condition, in the foreground (its Pods go
// first); Jobs without a TTL, unfinished, within their TTL or protected
// stay.
func TestFinishedJobsAfterTheirTTL(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	removePodsOnCleanup(t, ns)
	now := time.Now()
	finished := func(name string, cond batchv1.JobConditionType, at time.Time, opts ...jobOption) *batchv1.Job {
		j := createJob(t, ns, name, opts...)
		cp.FinishJob(t, j, cond, at)
		return j
	}
	withPod := finished("complete-ttl-0-with-pod", batchv1.JobComplete, now, ttl(0))
	jobPod := createPod(t, ns, "job-pod", "", withFinalizer, func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: withPod.Name, UID: withPod.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	})
	finished("failed-ttl-0", batchv1.JobFailed, now, ttl(0))
	finished("complete-2h-ago-ttl-1h", batchv1.JobComplete, now.Add(-2*time.Hour), ttl(3600))
	finished("complete-ttl-1h", batchv1.JobComplete, now, ttl(3600))
	finished("complete-no-ttl", batchv1.JobComplete, now.Add(-2*time.Hour))
	finished("protected-ttl-0", batchv1.JobComplete, now, ttl(0), protectedJob)
	createJob(t, ns, "running-ttl-0", ttl(0))
	all := []string{"complete-ttl-0-with-pod", "failed-ttl-0", "complete-2h-ago-ttl-1h", "complete-ttl-1h", "complete-no-ttl", "protected-ttl-0", "running-ttl-0"}

	enableJobs(t)
	want := map[string]string{
		"complete-ttl-0-with-pod": "deleted", "failed-ttl-0": "deleted", "complete-2h-ago-ttl-1h": "deleted",
		"complete-ttl-1h": "kept", "complete-no-ttl": "kept", "protected-ttl-0": "kept", "running-ttl-0": "kept",
	}
	jobs(t, ns, all).reach(t, framework.CascadeTimeout, want, "the finished Jobs whose TTL has passed should be deleted, and only those")
	jobs(t, ns, all).keep(t, framework.Quiet, want, "the other Jobs should stay")
	// Foreground: the Job waits, with the foregroundDeletion finalizer,
	// until its Pod (kept by a finalizer here) is gone.
	job := framework.Object{Kind: jobKind, Namespace: ns, Name: withPod.Name, UID: withPod.UID}
	cp.StayDeleting(t, "the Job was deleted in the foreground and its Pod is still there", metav1.FinalizerDeleteDependents, job)
	cp.RemoveFinalizer(t, framework.Object{Kind: podKind, Namespace: ns, Name: jobPod.Name, UID: jobPod.UID}, framework.HoldFinalizer)
	cp.WaitGone(t, "its Pod is gone, the owner-reference collector finishes the Job's foreground deletion", job)
}

var (
	jobKind = framework.Kind{GVR: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job", Namespaced: true}
	podKind = framework.Kind{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
)

// A Job whose TTL is raised before it expires stays; one whose TTL is
// lowered goes at once. (The live read of the TTL just before deleting,
// which matters when the cache has not seen a change yet, is shown by the
// unit test TestJobTTLIsCheckedLive: here the cache sees the change first.)
func TestFinishedJobTTLChanges(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	enableJobs(t)

	raised := createJob(t, ns, "ttl-raised", ttl(4))
	lowered := createJob(t, ns, "ttl-lowered", ttl(3600))
	cp.FinishJob(t, raised, batchv1.JobComplete, time.Now())
	cp.FinishJob(t, lowered, batchv1.JobComplete, time.Now())
	setTTL := func(j *batchv1.Job, seconds int32) {
		patch := client.MergeFrom(j.DeepCopy())
		j.Spec.TTLSecondsAfterFinished = ptr.To(seconds)
		if err := cp.Client.Patch(framework.Context(t), j, patch); err != nil {
			t.Fatalf("changing the TTL of %s: %v", j.Name, err)
		}
	}
	setTTL(raised, 3600)
	setTTL(lowered, 1)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if got := jobStates(t, ns, []string{lowered.Name}); got[lowered.Name] != "deleted" {
			return fmt.Errorf("%v", got)
		}
		return nil
	}, "a Job whose TTL was lowered to 1s should be deleted")
	// Past the first TTL (4 s), with a margin.
	framework.Consistently(t, 6*time.Second, func() error {
		if got := jobStates(t, ns, []string{raised.Name}); got[raised.Name] != "kept" {
			return fmt.Errorf("%v", got)
		}
		return nil
	}, "a Job whose TTL was raised to 1h must stay past its first TTL")
}
