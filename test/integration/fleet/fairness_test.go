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
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// A large cascade in one member delays no small cascade in another: the
// members' collectors share their workers, each member's queues and client
// rate limit are its own, and a member holds no more of the shared workers
// than its pool size (20 by default). Asserted on order, not on time:
// member beta's cascade of 1,500 dependents, at 50 deletions a second, is
// under way when member gamma's owner of 10 dependents is deleted, and
// gamma's dependents are all gone while beta's cascade still has most of
// its dependents left.
func TestALargeCascadeInOneMemberDelaysNoSmallOneInAnother(t *testing.T) {
	const qps, large, small = 50, 1500, 10
	m, _ := startFleet(t, framework.FleetOptions{QPS: qps, Burst: qps})
	beta, gamma := clusters[1], clusters[2]
	bns := framework.CreateNamespace(t, beta.Client)
	gns := framework.CreateNamespace(t, gamma.Client)
	bigOwner := beta.Create(t, framework.ConfigMaps, bns, "big-owner")
	beta.CreateMany(t, framework.ConfigMaps, bns, "big", large, framework.OwnedBy(bigOwner.Ref(false)))
	smallOwner := gamma.Create(t, framework.ConfigMaps, gns, "small-owner")
	smallDeps := gamma.CreateMany(t, framework.ConfigMaps, gns, "small", small, framework.OwnedBy(smallOwner.Ref(false)))
	for i, cp := range map[int]*framework.ControlPlane{1: beta, 2: gamma} {
		ns := map[int]string{1: bns, 2: gns}[i]
		want := map[int]int{1: large + 1, 2: small + 1}[i]
		eng := m.Fleet.Engine(names[i])
		framework.Eventually(t, time.Minute, func() error {
			if n := configMapsIn(t, cp, ns); n != want {
				return fmt.Errorf("%d ConfigMaps in %s, want %d", n, ns, want)
			}
			if eng == nil || eng.Graph().KindLen(framework.ConfigMaps.GroupKind()) < want {
				return fmt.Errorf("member %s's graph does not hold the fixture yet", names[i])
			}
			return nil
		}, "member %s's engine should observe its fixture", names[i])
	}

	beta.DeleteWith(t, bigOwner, metav1.DeletePropagationBackground)
	waitConfigMapsAtMost(t, time.Minute, beta, bns, large-qps, "beta's large cascade should be under way")

	gamma.DeleteWith(t, smallOwner, metav1.DeletePropagationBackground)
	gamma.WaitGone(t, "gamma's owner was deleted while beta's large cascade ran", smallDeps...)
	if left := configMapsIn(t, beta, bns); left < large/2 {
		t.Errorf("when gamma's %d dependents were gone, beta's cascade had only %d of %d dependents left: gamma's should not wait for beta's", small, left, large)
	}
	waitConfigMapsAtMost(t, 2*time.Minute, beta, bns, 0, "beta's large cascade should finish")
}

// A member whose engine stops while its queues hold work — its kubeconfig
// Secret removed in the middle of a cascade — processes nothing of it
// afterwards: its dependents left are not deleted while it is out of the
// fleet. Another member's cascade meanwhile is collected whole, and once
// the member is engaged again its cascade finishes: nothing is lost or
// left stuck.
func TestAStoppedMembersQueuedWorkIsDroppedAndNoOtherIsLost(t *testing.T) {
	const qps, large, small = 50, 1000, 10
	m, ns := startFleet(t, framework.FleetOptions{QPS: qps, Burst: qps})
	beta, gamma := clusters[1], clusters[2]
	bns := framework.CreateNamespace(t, beta.Client)
	owner := beta.Create(t, framework.ConfigMaps, bns, "owner")
	beta.CreateMany(t, framework.ConfigMaps, bns, "dep", large, framework.OwnedBy(owner.Ref(false)))
	framework.Eventually(t, time.Minute, func() error {
		if eng := m.Fleet.Engine(names[1]); eng == nil || eng.Graph().KindLen(framework.ConfigMaps.GroupKind()) < large+1 {
			return fmt.Errorf("member %s's graph does not hold the fixture yet", names[1])
		}
		return nil
	}, "member %s's engine should observe its fixture", names[1])

	beta.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	waitConfigMapsAtMost(t, time.Minute, beta, bns, large-qps, "beta's cascade should be under way")
	if err := host().Clientset.CoreV1().Secrets(ns).Delete(framework.Context(t), names[1], metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the Secret of %s: %v", names[1], err)
	}
	m.WaitDisengaged(t, names[1], time.Minute)
	left := configMapsIn(t, beta, bns)
	if left == 0 {
		t.Fatalf("beta's cascade finished before its engine stopped: make it larger")
	}

	gns := framework.CreateNamespace(t, gamma.Client)
	smallOwner := gamma.Create(t, framework.ConfigMaps, gns, "owner")
	smallDeps := gamma.CreateMany(t, framework.ConfigMaps, gns, "dep", small, framework.OwnedBy(smallOwner.Ref(false)))
	gamma.DeleteWith(t, smallOwner, metav1.DeletePropagationBackground)
	gamma.WaitGone(t, "gamma's owner was deleted while beta's engine was stopped with work queued", smallDeps...)
	framework.Consistently(t, framework.Quiet, func() error {
		if n := configMapsIn(t, beta, bns); n != left {
			return fmt.Errorf("%d of beta's dependents left, %d when its engine stopped", n, left)
		}
		return nil
	}, "nothing of a stopped member's queued work may be processed")

	beta.WriteKubeconfigSecret(t, host(), ns, names[1])
	m.WaitSynced(t, names[1], engageTimeout)
	waitConfigMapsAtMost(t, 2*time.Minute, beta, bns, 0, "engaged again, beta should finish its cascade")
}

// waitConfigMapsAtMost waits until ns in cp holds at most most ConfigMaps
// (kube-root-ca.crt aside).
func waitConfigMapsAtMost(t *testing.T, timeout time.Duration, cp *framework.ControlPlane, ns string, most int, why string) {
	t.Helper()
	framework.Eventually(t, timeout, func() error {
		if n := configMapsIn(t, cp, ns); n > most {
			return fmt.Errorf("%d ConfigMaps left in %s, want at most %d", n, ns, most)
		}
		return nil
	}, "%s", why)
}

// configMapsIn counts the ConfigMaps of ns in cp, kube-root-ca.crt aside.
func configMapsIn(t *testing.T, cp *framework.ControlPlane, ns string) int {
	t.Helper()
	var l corev1.ConfigMapList
	if err := cp.Client.List(framework.Context(t), &l, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing the ConfigMaps of %s: %v", ns, err)
	}
	n := 0
	for _, cm := range l.Items {
		if cm.Name != "kube-root-ca.crt" {
			n++
		}
	}
	return n
}

// The members' API-level collectors and expiry run on the workers the fleet
// shares, as their collectors do: with the finished-Job collector and
// expiry enabled in two members, each member's finished Job past its TTL
// and its expired ConfigMap are deleted, another member's Job (its
// collector disabled) is left, and once they are done and the collectors
// disabled no worker is left running.
func TestMembersAPILevelCollectorsAndExpiryRunOnTheSharedWorkers(t *testing.T) {
	m, _ := startFleet(t, framework.FleetOptions{})
	expiring := func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{ownergcv1alpha1.TTLAnnotation: "1s"})
	}
	type fixture struct {
		cp  *framework.ControlPlane
		job *batchv1.Job
		cm  framework.Object
	}
	// enable turns both on or off in cp's GCPolicy.
	enable := func(cp *framework.ControlPlane, on bool) {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
			s.Collectors.FinishedJobs.Enabled = on
			s.Collectors.Expiry.Enabled = on
		})
	}
	var fixtures []fixture
	for i, cp := range clusters {
		enabled := i < 2 // alpha and beta; gamma keeps the defaults
		if enabled {
			enable(cp, true)
			t.Cleanup(func() { enable(cp, false) })
		}
		ns := framework.CreateNamespace(t, cp.Client)
		job := framework.NewJob(ns, "finished")
		job.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
		if err := cp.Client.Create(framework.Context(t), job); err != nil {
			t.Fatalf("creating Job %s in %s: %v", job.Name, names[i], err)
		}
		cp.FinishJob(t, job, batchv1.JobComplete, time.Now())
		f := fixture{cp: cp, job: job}
		if enabled {
			f.cm = cp.Create(t, framework.ConfigMaps, ns, "expiring", expiring)
		}
		fixtures = append(fixtures, f)
	}
	jobExists := func(f fixture) bool {
		err := f.cp.Client.Get(framework.Context(t), client.ObjectKeyFromObject(f.job), &batchv1.Job{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("reading Job %s: %v", f.job.Name, err)
		}
		return err == nil
	}
	for i, f := range fixtures[:2] {
		framework.Eventually(t, framework.CascadeTimeout, func() error {
			if jobExists(f) {
				return fmt.Errorf("the finished Job is still there")
			}
			return nil
		}, "member %s's finished Job should be deleted past its TTL", names[i])
		f.cp.WaitGone(t, "its ttl annotation has passed", f.cm)
	}
	if !jobExists(fixtures[2]) {
		t.Fatalf("member %s's finished Job was deleted, though its finished-Job collector is disabled", names[2])
	}
	for _, cp := range clusters[:2] {
		enable(cp, false)
	}
	framework.Eventually(t, 30*time.Second, func() error {
		if n := m.Fleet.WorkersRunning(); n > 0 {
			return fmt.Errorf("%d workers run", n)
		}
		return nil
	}, "with nothing left to do, no shared worker should run")
}
