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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// quarantine is the terminated-Pod collector's quarantine of missing Nodes
// in these tests (40 s in production, as kube-controller-manager's).
const quarantine = 5 * time.Second

func enablePods(t *testing.T, threshold int32) {
	t.Helper()
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) {
		c.TerminatedPods = ownergcv1alpha1.TerminatedPodsCollector{Enabled: true, Threshold: ptr.To(threshold)}
	})
}

// Beyond the threshold the oldest terminated Pods go first — by creation
// time, not by name — after evicted ones; running Pods do not count, and a
// protected Pod counts but stays, the next oldest going instead.
func TestTerminatedPodsBeyondTheThresholdOldestFirst(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	removePodsOnCleanup(t, ns)
	node := createNode(t, "threshold-node").Name

	cp.SetPodPhase(t, createPod(t, ns, "running", node), corev1.PodRunning, "")
	cp.SetPodPhase(t, createPod(t, ns, "protected-oldest", node, protected), corev1.PodSucceeded, "")
	time.Sleep(1050 * time.Millisecond)
	// Names in the reverse order of age, so that the order by name would
	// choose differently.
	terminatedPods(t, ns, node, []string{"e-old", "d", "c", "b", "a-new"}, corev1.PodSucceeded)
	cp.SetPodPhase(t, createPod(t, ns, "z-evicted-newest", node), corev1.PodFailed, "Evicted")
	all := []string{"running", "protected-oldest", "e-old", "d", "c", "b", "a-new", "z-evicted-newest"}

	// 7 terminated, threshold 3: 4 go, the evicted one first, then the
	// oldest that are not protected.
	enablePods(t, 3)
	want := map[string]string{
		"running": "Running", "protected-oldest": "Succeeded", "b": "Succeeded", "a-new": "Succeeded",
		"z-evicted-newest": "gone", "e-old": "gone", "d": "gone", "c": "gone",
	}
	pods(t, ns, all).reach(t, framework.CascadeTimeout, want, "the 4 terminated Pods beyond the threshold should be deleted: the evicted one, then the oldest unprotected")
	keepPodStates(t, ns, want, "the threshold is reached: no more Pods go")

	// One more terminated Pod: the oldest unprotected one goes.
	time.Sleep(1050 * time.Millisecond)
	cp.SetPodPhase(t, createPod(t, ns, "newest", node), corev1.PodFailed, "")
	want["b"], want["newest"] = "gone", "Failed"
	waitPodState(t, ns, "b", "gone", "a fourth terminated Pod takes the oldest unprotected one")
	keepPodStates(t, ns, want, "the threshold is reached again")
}

// Pods bound to a Node that does not exist are left alone for the
// quarantine, then marked Failed with DisruptionTarget (DeletionByPodGC)
// and deleted; so are the Pods of a Node that is deleted. Pods on a Node
// that exists stay.
func TestPodsOfMissingNodesAreMarkedFailedThenDeleted(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{PodQuarantine: quarantine})
	disableCollectorsOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	removePodsOnCleanup(t, ns)
	enablePods(t, 100)

	live := createNode(t, "live-node").Name
	doomed := createNode(t, "doomed-node")
	onLive := createPod(t, ns, "on-live-node", live)
	cp.SetPodPhase(t, onLive, corev1.PodRunning, "")
	onDoomed := createPod(t, ns, "on-doomed-node", doomed.Name)
	cp.SetPodPhase(t, onDoomed, corev1.PodRunning, "")
	start := time.Now()
	ghost := createPod(t, ns, "on-ghost-node", "ghost-node")
	cp.SetPodPhase(t, ghost, corev1.PodRunning, "")
	held := createPod(t, ns, "on-ghost-node-held", "ghost-node", withFinalizer)
	cp.SetPodPhase(t, held, corev1.PodRunning, "")
	pending := createPod(t, ns, "pending-on-ghost-node", "ghost-node")

	// During the quarantine nothing happens (checked for most of it).
	framework.Consistently(t, max(quarantine-time.Since(start)-time.Second, 0), func() error {
		states := podStates(t, ns, []string{"on-ghost-node", "on-ghost-node-held", "pending-on-ghost-node"})
		for name, s := range states {
			if s != "Running" && s != "Pending" {
				return fmt.Errorf("Pod %s is %q during the quarantine", name, s)
			}
		}
		return nil
	}, "Pods of a missing Node must wait for the quarantine")
	waitPodState(t, ns, ghost.Name, "gone", "its Node does not exist")
	waitPodState(t, ns, pending.Name, "gone", "its Node does not exist")
	waitPodState(t, ns, held.Name, "Failed, terminating, DisruptionTarget=True (DeletionByPodGC)",
		"its Node does not exist: it is marked Failed with DisruptionTarget, then deleted (a finalizer keeps it)")
	// The API server's own timestamps (whole seconds) say when it was
	// deleted: not before the quarantine had passed since its creation.
	var heldNow corev1.Pod
	if err := cp.Client.Get(framework.Context(t), client.ObjectKeyFromObject(held), &heldNow); err != nil {
		t.Fatal(err)
	}
	if d := heldNow.DeletionTimestamp.Sub(heldNow.CreationTimestamp.Time); d < quarantine-time.Second {
		t.Errorf("Pod %s was deleted %s after its creation, before the quarantine of %s", held.Name, d, quarantine)
	}

	// A Node deleted later: its Pods go after the quarantine.
	if err := cp.Client.Delete(framework.Context(t), doomed); err != nil {
		t.Fatal(err)
	}
	waitPodState(t, ns, onDoomed.Name, "gone", "its Node was deleted")
	waitPodState(t, ns, onLive.Name, "Running", "its Node exists")
}

// A terminating Pod that was never scheduled is marked Failed and deleted
// (it exists only while a finalizer keeps it: the API server deletes an
// unscheduled Pod at once otherwise). A terminating Pod on a Node that is
// not Ready and tainted out of service is marked Failed and deleted at once,
// without waiting for its grace period; one on a Node without the taint is
// left to its kubelet.
func TestTerminatingPodsUnscheduledOrOutOfService(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	removePodsOnCleanup(t, ns)
	enablePods(t, 100)

	unscheduled := createPod(t, ns, "unscheduled", "", withFinalizer)
	shutDown := createNode(t, "shut-down-node", outOfService).Name
	notReady := createNode(t, "not-ready-node").Name
	onShutDown := createPod(t, ns, "on-shut-down-node", shutDown)
	cp.SetPodPhase(t, onShutDown, corev1.PodRunning, "")
	onNotReady := createPod(t, ns, "on-not-ready-node", notReady)
	cp.SetPodPhase(t, onNotReady, corev1.PodRunning, "")
	running := createPod(t, ns, "running-on-shut-down-node", shutDown)
	cp.SetPodPhase(t, running, corev1.PodRunning, "")

	deleteGracefully(t, unscheduled)
	deleteGracefully(t, onShutDown)
	deleteGracefully(t, onNotReady)
	waitPodState(t, ns, unscheduled.Name, "Failed, terminating", "a terminating Pod bound to no Node is marked Failed and deleted")
	waitPodState(t, ns, onShutDown.Name, "gone", "a terminating Pod on an out-of-service Node is deleted at once")
	keepPodStates(t, ns, map[string]string{onNotReady.Name: "Running, terminating", running.Name: "Running"},
		"a terminating Pod on a Node that is only not Ready is its kubelet's; a running Pod on an out-of-service Node is not terminating")
}
