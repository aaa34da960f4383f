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
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// Each comparison runs ownergc's collector alone on a workload, then
// kube-controller-manager with only the corresponding controller on an
// identical workload (in another namespace, or under another name prefix),
// and asserts that both end in the same state: the same objects deleted,
// the same ones kept. The workload is complete before either starts, as
// both decide from a first full list.

// podWorkload creates, in this order (the order of creation matters: Pods
// that become terminated while the collector works — marked Failed — are
// older than the terminated Pods of the threshold, so that the excess they
// add falls on them, whoever's pass runs first):
//   - terminating unscheduled (kept by a finalizer), orphans on a Node that
//     does not exist (one kept by a finalizer), a terminating Pod on an
//     out-of-service Node, a terminating and a running Pod on a Node that
//     exists;
//   - then, a second apart, five terminated Pods and an evicted one.
func podWorkload(t *testing.T, ns, node, shutDown string) []string {
	t.Helper()
	unscheduled := createPod(t, ns, "unscheduled-terminating", "", withFinalizer)
	deleteGracefully(t, unscheduled)
	cp.SetPodPhase(t, createPod(t, ns, "orphan-held", "cmp-ghost-node", withFinalizer), corev1.PodRunning, "")
	cp.SetPodPhase(t, createPod(t, ns, "orphan", "cmp-ghost-node"), corev1.PodRunning, "")
	onShutDown := createPod(t, ns, "terminating-out-of-service", shutDown)
	cp.SetPodPhase(t, onShutDown, corev1.PodRunning, "")
	deleteGracefully(t, onShutDown)
	terminating := createPod(t, ns, "terminating", node)
	cp.SetPodPhase(t, terminating, corev1.PodRunning, "")
	deleteGracefully(t, terminating)
	cp.SetPodPhase(t, createPod(t, ns, "running", node), corev1.PodRunning, "")
	time.Sleep(1050 * time.Millisecond)
	terminatedPods(t, ns, node, []string{"terminated-1", "terminated-2", "terminated-3", "terminated-4", "terminated-5"}, corev1.PodSucceeded)
	time.Sleep(1050 * time.Millisecond)
	cp.SetPodPhase(t, createPod(t, ns, "evicted-6", node), corev1.PodFailed, "Evicted")
	return []string{"unscheduled-terminating", "orphan-held", "orphan", "terminating-out-of-service", "terminating", "running",
		"terminated-1", "terminated-2", "terminated-3", "terminated-4", "terminated-5", "evicted-6"}
}

// The terminated-Pod collector and kube-controller-manager's
// pod-garbage-collector-controller, both with a threshold of 3, delete the
// same Pods and mark the same ones Failed. kube-controller-manager
// quarantines missing Nodes for 40 s and passes every 20 s, so its half
// takes about a minute; ownergc's quarantine is shortened.
func TestTerminatedPodsLikeKubeControllerManager(t *testing.T) {
	node := createNode(t, "cmp-node").Name
	shutDown := createNode(t, "cmp-shut-down-node", outOfService).Name
	// What both must reach: the excess of terminated Pods (the evicted one,
	// then the oldest) gone, the orphans marked Failed with DisruptionTarget
	// and deleted, the unscheduled terminating Pod marked Failed and
	// deleted, the terminating Pod on the out-of-service Node deleted.
	want := map[string]string{
		"unscheduled-terminating":    "Failed, terminating",
		"orphan-held":                "Failed, terminating, DisruptionTarget=True (DeletionByPodGC)",
		"orphan":                     "gone",
		"terminating-out-of-service": "gone",
		"terminating":                "Running, terminating",
		"running":                    "Running",
		"terminated-1":               "gone", "terminated-2": "gone", "evicted-6": "gone",
		"terminated-3": "Succeeded", "terminated-4": "Succeeded", "terminated-5": "Succeeded",
	}

	// ownergc alone.
	nsOwnergc := framework.CreateNamespace(t, cp.Client)
	m := cp.StartManager(t, framework.ManagerOptions{PodQuarantine: quarantine})
	disableCollectorsOnCleanup(t)
	names := podWorkload(t, nsOwnergc, node, shutDown)
	enablePods(t, 3)
	ownergc := pods(t, nsOwnergc, names).reach(t, framework.CascadeTimeout, want, "ownergc should reach the expected state")
	keepPodStates(t, nsOwnergc, want, "ownergc should delete nothing more")
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) { *c = ownergcv1alpha1.DefaultSpec().Collectors })
	m.Stop()
	removePods(t, nsOwnergc)

	// kube-controller-manager alone, on an identical workload.
	nsKCM := framework.CreateNamespace(t, cp.Client)
	removePodsOnCleanup(t, nsKCM)
	podWorkload(t, nsKCM, node, shutDown)
	start := time.Now()
	cp.StartKubeControllerManagerWithFlags(t, []string{"--terminated-pod-gc-threshold=3"}, "pod-garbage-collector-controller")
	// Its orphans are handled on the first pass after the quarantine (40 to
	// 60 s); every other rule already ran on its first pass, and the passes
	// after find only Pods it deleted already (held by finalizers), so its
	// state is final once the orphans are handled.
	sameAsKCM(t, pods(t, nsKCM, names), ownergc, start, 100*time.Second)
	t.Logf("kube-controller-manager reached ownergc's state in %s; deleted by both: %v", time.Since(start).Round(time.Second), sortedKeys(ownergc, "gone"))
}

// jobWorkload creates Jobs finished (or not) in every way that matters to
// the TTL controller.
func jobWorkload(t *testing.T, ns string) []string {
	t.Helper()
	now := time.Now()
	finished := func(name string, cond batchv1.JobConditionType, at time.Time, opts ...jobOption) {
		cp.FinishJob(t, createJob(t, ns, name, opts...), cond, at)
	}
	finished("complete-ttl-0", batchv1.JobComplete, now, ttl(0))
	finished("failed-ttl-0", batchv1.JobFailed, now, ttl(0))
	finished("complete-ttl-3s", batchv1.JobComplete, now, ttl(3))
	finished("complete-2h-ago-ttl-1h", batchv1.JobComplete, now.Add(-2*time.Hour), ttl(3600))
	finished("complete-ttl-1h", batchv1.JobComplete, now, ttl(3600))
	finished("failed-no-ttl", batchv1.JobFailed, now.Add(-2*time.Hour))
	createJob(t, ns, "running-ttl-0", ttl(0))
	deleting := createJob(t, ns, "being-deleted-ttl-0", ttl(0), func(j *batchv1.Job) { j.Finalizers = []string{framework.HoldFinalizer} })
	cp.FinishJob(t, deleting, batchv1.JobComplete, now)
	if err := cp.Client.Delete(framework.Context(t), deleting, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.RemoveFinalizer(t, framework.Object{Kind: jobKind, Namespace: ns, Name: deleting.Name, UID: deleting.UID}, framework.HoldFinalizer)
	})
	return []string{"complete-ttl-0", "failed-ttl-0", "complete-ttl-3s", "complete-2h-ago-ttl-1h", "complete-ttl-1h", "failed-no-ttl",
		"running-ttl-0", "being-deleted-ttl-0"}
}

// The finished-Job collector and kube-controller-manager's
// ttl-after-finished-controller delete the same Jobs. (Without an
// owner-reference collector, a Job kube-controller-manager deletes in the
// foreground stays with the foregroundDeletion finalizer: it counts as
// deleted.)
func TestFinishedJobsLikeKubeControllerManager(t *testing.T) {
	want := map[string]string{
		"complete-ttl-0": "deleted", "failed-ttl-0": "deleted", "complete-ttl-3s": "deleted", "complete-2h-ago-ttl-1h": "deleted",
		"complete-ttl-1h": "kept", "failed-no-ttl": "kept", "running-ttl-0": "kept", "being-deleted-ttl-0": "kept",
	}
	nsOwnergc := framework.CreateNamespace(t, cp.Client)
	m := cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	names := jobWorkload(t, nsOwnergc)
	enableJobs(t)
	ownergc := jobs(t, nsOwnergc, names).reach(t, framework.CascadeTimeout, want, "ownergc should reach the expected state")
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) { *c = ownergcv1alpha1.DefaultSpec().Collectors })
	m.Stop()

	nsKCM := framework.CreateNamespace(t, cp.Client)
	jobWorkload(t, nsKCM)
	start := time.Now()
	cp.StartKubeControllerManagerWithFlags(t, nil, "ttl-after-finished-controller")
	sameAsKCM(t, jobs(t, nsKCM, names), ownergc, start, time.Minute)
	t.Logf("deleted by both: %v", sortedKeys(ownergc, "deleted"))
}

// The CertificateSigningRequest collector, with its defaults, and kube-
// controller-manager's certificatesigningrequest-cleaner-controller delete
// the same requests. The cleaner passes once when it starts and then every
// hour: it is started a few seconds after its informer
// (--controller-start-interval), so that its first pass sees the requests.
func TestCertificateSigningRequestsLikeKubeControllerManager(t *testing.T) {
	kept := map[string]bool{"issued-approved-10m-ago": true, "denied-10m-ago": true, "approved-unissued-2h-ago": true, "pending": true}
	left := func(prefix string) observed[bool] {
		var names []string
		for _, s := range comparedCSRs(prefix) {
			names = append(names, s.Name)
		}
		return observed[bool]{"requests left", func() map[string]bool {
			out := map[string]bool{}
			for name := range csrsLeft(t, names) {
				out[strings.TrimPrefix(name, prefix)] = true
			}
			return out
		}}
	}

	m := cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	for _, s := range comparedCSRs("ownergc-") {
		cp.CreateCSR(t, s)
	}
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) { c.CertificateSigningRequests.Enabled = true })
	ownergc := left("ownergc-").reach(t, framework.CascadeTimeout, kept, "ownergc should delete the stale requests")
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) { *c = ownergcv1alpha1.DefaultSpec().Collectors })
	m.Stop()

	for _, s := range comparedCSRs("kcm-") {
		cp.CreateCSR(t, s)
	}
	start := time.Now()
	cp.StartKubeControllerManagerWithFlags(t, []string{"--controller-start-interval=3s"}, "certificatesigningrequest-cleaner-controller")
	sameAsKCM(t, left("kcm-"), ownergc, start, time.Minute)
	t.Logf("kept by both: %v", sortedKeys(ownergc, true))
}
