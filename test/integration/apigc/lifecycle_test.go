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
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// collectorCase is one collector, with a way to make an object it must
// delete and to tell whether that object is still there.
type collectorCase struct {
	name   string
	index  int // in engine.Status.Collectors
	enable func(*ownergcv1alpha1.Collectors, bool)
	status func(*ownergcv1alpha1.CollectorsStatus) ownergcv1alpha1.CollectorStatus
	// stale creates an object the collector deletes once enabled.
	stale func(t *testing.T, ns, name string)
	// present tells whether it is still there (not being deleted).
	present func(t *testing.T, ns, name string) bool
}

// notCollected creates a stale object, name, and checks that it stays for
// the quiet period: the collector is off (so the test says).
func (tc collectorCase) notCollected(t *testing.T, ns, name, off string) {
	t.Helper()
	tc.stale(t, ns, name)
	framework.Consistently(t, framework.Quiet, func() error {
		if !tc.present(t, ns, name) {
			return fmt.Errorf("it was deleted")
		}
		return nil
	}, "the %s collector is %s: nothing is collected", tc.name, off)
}

var collectorCases = []collectorCase{{
	name: "terminatedPods", index: 0,
	enable: func(c *ownergcv1alpha1.Collectors, on bool) {
		c.TerminatedPods = ownergcv1alpha1.TerminatedPodsCollector{Enabled: on, Threshold: ptr.To[int32](1)}
	},
	status: func(s *ownergcv1alpha1.CollectorsStatus) ownergcv1alpha1.CollectorStatus { return s.TerminatedPods },
	// An older terminated Pod than the one kept by the threshold of 1.
	stale: func(t *testing.T, ns, name string) {
		terminatedPods(t, ns, "", []string{name, name + "-newer"}, corev1.PodSucceeded)
	},
	present: func(t *testing.T, ns, name string) bool { return podStates(t, ns, []string{name})[name] == "Succeeded" },
}, {
	name: "finishedJobs", index: 1,
	enable: func(c *ownergcv1alpha1.Collectors, on bool) { c.FinishedJobs.Enabled = on },
	status: func(s *ownergcv1alpha1.CollectorsStatus) ownergcv1alpha1.CollectorStatus { return s.FinishedJobs },
	stale: func(t *testing.T, ns, name string) {
		cp.FinishJob(t, createJob(t, ns, name, ttl(0)), batchv1.JobComplete, time.Now())
	},
	present: func(t *testing.T, ns, name string) bool { return jobStates(t, ns, []string{name})[name] == "kept" },
}, {
	name: "certificateSigningRequests", index: 2,
	enable: func(c *ownergcv1alpha1.Collectors, on bool) { c.CertificateSigningRequests.Enabled = on },
	status: func(s *ownergcv1alpha1.CollectorsStatus) ownergcv1alpha1.CollectorStatus {
		return s.CertificateSigningRequests
	},
	stale: func(t *testing.T, ns, name string) {
		cp.CreateCSR(t, framework.CSRSpec{Name: ns + "-" + name, Conditions: map[certificatesv1.RequestConditionType]time.Duration{denied: 2 * time.Hour}})
	},
	present: func(t *testing.T, ns, name string) bool { return csrsLeft(t, []string{ns + "-" + name})[ns+"-"+name] },
}}

// Each collector is off by default and runs nothing (no informer, no
// worker); enabled live it syncs its own cache — the Ready condition waits
// for it — collects, and reports in status.collectors; disabled live it
// stops, and collects nothing more.
func TestCollectorsAreEnabledAndDisabledLive(t *testing.T) {
	m := cp.StartManager(t, framework.ManagerOptions{StatusRefresh: time.Second})
	disableCollectorsOnCleanup(t)
	for _, tc := range collectorCases {
		t.Run(tc.name, func(t *testing.T) {
			ns := framework.CreateNamespace(t, cp.Client)
			removePodsOnCleanup(t, ns)
			running := func() bool { return m.Engine.Status().Collectors[tc.index].Running }
			if running() {
				t.Fatalf("the %s collector runs while the policy leaves it off: %+v", tc.name, m.Engine.Status().Collectors[tc.index])
			}
			tc.notCollected(t, ns, "before", "off")

			p := setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) { tc.enable(c, true) })
			ready := apimeta.FindStatusCondition(p.Status.Conditions, ownergcv1alpha1.ConditionReady)
			if !strings.Contains(ready.Message, "collectors have synced their caches: "+tc.name) {
				t.Errorf("Ready: %q, want it to say the %s collector's cache has synced", ready.Message, tc.name)
			}
			if st := m.Engine.Status().Collectors[tc.index]; !st.Running || !st.Synced {
				t.Errorf("the GCPolicy is Ready, the collector is %+v: want running and synced", st)
			}
			framework.Eventually(t, framework.CascadeTimeout, func() error {
				if tc.present(t, ns, "before") {
					return fmt.Errorf("still there")
				}
				return nil
			}, "enabled, the %s collector should collect", tc.name)
			framework.Eventually(t, framework.CascadeTimeout, func() error {
				st := framework.PolicyStatus(t, cp.Client).Collectors
				if st == nil {
					return fmt.Errorf("no status.collectors")
				}
				if c := tc.status(st); !c.Enabled || !c.Synced || c.Deleted < 1 || c.LastRun == nil {
					return fmt.Errorf("status.collectors.%s: %+v", tc.name, c)
				}
				return nil
			}, "status.collectors.%s should report it enabled, synced, with a deletion and a last run", tc.name)

			setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) { tc.enable(c, false) })
			framework.Eventually(t, framework.CascadeTimeout, func() error {
				if running() {
					return fmt.Errorf("still running")
				}
				if c := tc.status(framework.PolicyStatus(t, cp.Client).Collectors); c.Enabled || c.Synced {
					return fmt.Errorf("status.collectors.%s: %+v", tc.name, c)
				}
				return nil
			}, "disabled, the %s collector should stop and say so", tc.name)
			tc.notCollected(t, ns, "after", "off again")
			removePods(t, ns)
		})
	}
}

// In DryRun every collector decides, logs and counts, and writes nothing —
// no status patch, no deletion; switched to Enforce, they collect.
func TestDryRunCollectorsWriteNothing(t *testing.T) {
	const user = "ownergc-apigc-dry-run"
	m := cp.StartManager(t, framework.ManagerOptions{User: user, PodQuarantine: quarantine})
	disableCollectorsOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	removePodsOnCleanup(t, ns)

	node := createNode(t, "dry-run-node").Name
	orphan := createPod(t, ns, "on-ghost-node", "ghost-node", withFinalizer)
	cp.SetPodPhase(t, orphan, corev1.PodRunning, "")
	unscheduled := createPod(t, ns, "unscheduled", "", withFinalizer)
	deleteGracefully(t, unscheduled)
	terminatedPods(t, ns, node, []string{"oldest", "newer"}, corev1.PodSucceeded)
	cp.FinishJob(t, createJob(t, ns, "job", ttl(0)), batchv1.JobComplete, time.Now())
	csr := cp.CreateCSR(t, framework.CSRSpec{Name: ns + "-denied", Conditions: map[certificatesv1.RequestConditionType]time.Duration{denied: 2 * time.Hour}})
	pods := []string{"on-ghost-node", "unscheduled", "oldest", "newer"}
	before := podStates(t, ns, pods)

	// Threshold 1: of the two terminated Pods, "oldest" is beyond it.
	setCollectors(t, ownergcv1alpha1.ModeDryRun, func(c *ownergcv1alpha1.Collectors) {
		c.TerminatedPods = ownergcv1alpha1.TerminatedPodsCollector{Enabled: true, Threshold: ptr.To[int32](1)}
		c.FinishedJobs.Enabled = true
		c.CertificateSigningRequests.Enabled = true
	})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		st := m.Engine.Status().Collectors
		// Pods: "oldest" beyond the threshold, the orphan, the unscheduled
		// terminating one.
		if st[0].DryRunDeletions < 3 || st[1].DryRunDeletions != 1 || st[2].DryRunDeletions != 1 {
			return fmt.Errorf("dry-run deletions: Pods %d, Jobs %d, requests %d", st[0].DryRunDeletions, st[1].DryRunDeletions, st[2].DryRunDeletions)
		}
		return nil
	}, "in DryRun every collector should decide its deletions")
	framework.Consistently(t, framework.Quiet, func() error {
		if got := podStates(t, ns, pods); fmt.Sprint(got) != fmt.Sprint(before) {
			return fmt.Errorf("Pods changed:%s\nbefore:%s", describe(got), describe(before))
		}
		if got := jobStates(t, ns, []string{"job"}); got["job"] != "kept" {
			return fmt.Errorf("the Job was deleted")
		}
		if !csrsLeft(t, []string{csr.Name})[csr.Name] {
			return fmt.Errorf("the request was deleted")
		}
		return nil
	}, "in DryRun nothing is written")
	if writes := writesTo(t, user, "pods", "jobs", "certificatesigningrequests"); len(writes) > 0 {
		t.Fatalf("ownergc wrote in DryRun: %v", writes)
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		st := framework.PolicyStatus(t, cp.Client).Collectors
		if st == nil || st.FinishedJobs.DryRunDeletions != 1 || st.CertificateSigningRequests.DryRunDeletions != 1 || st.TerminatedPods.DryRunDeletions < 3 {
			return fmt.Errorf("status.collectors %+v", st)
		}
		return nil
	}, "status.collectors should count the dry-run deletions")

	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(*ownergcv1alpha1.Collectors) {})
	waitPodState(t, ns, "oldest", "gone", "in Enforce the Pod beyond the threshold is deleted")
	waitPodState(t, ns, "on-ghost-node", "Failed, terminating, DisruptionTarget=True (DeletionByPodGC)", "in Enforce the orphan is marked Failed and deleted")
	waitPodState(t, ns, "unscheduled", "Failed, terminating", "in Enforce the unscheduled terminating Pod is marked Failed and deleted")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if jobStates(t, ns, []string{"job"})["job"] != "deleted" || csrsLeft(t, []string{csr.Name})[csr.Name] {
			return fmt.Errorf("Job %v, request left %v", jobStates(t, ns, []string{"job"}), csrsLeft(t, []string{csr.Name}))
		}
		return nil
	}, "in Enforce the Job and the request are deleted")
}

// A Node's Lease in kube-node-lease, owned by the Node, goes with it: the
// owner-reference collector does this, no API-level collector is needed.
func TestNodeLeaseGoesWithItsNode(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	ctx := framework.Context(t)
	const leaseNamespace = corev1.NamespaceNodeLease
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	node := createNode(t, "leased-node")
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: node.Name, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: ptr.To[int32](40)},
	}
	if err := cp.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	leaseObject := framework.Object{Kind: framework.Kind{GVR: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease", Namespaced: true},
		Namespace: leaseNamespace, Name: lease.Name, UID: lease.UID}
	cp.SurviveIntact(t, "its Node exists", leaseObject)
	if err := cp.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	cp.WaitGone(t, "its owner, the Node, was deleted", leaseObject)
}
