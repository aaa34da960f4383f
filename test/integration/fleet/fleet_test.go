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
	"runtime"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// engageTimeout bounds how long a cluster takes from its Secret to a synced
// engine.
const engageTimeout = 2 * time.Minute

// startFleet starts a fleet manager whose Secrets namespace, on the host,
// holds a Secret for every cluster, and waits until every engine has synced.
func startFleet(t *testing.T, o framework.FleetOptions) (*framework.FleetManager, string) {
	t.Helper()
	ns := framework.CreateNamespace(t, host().Client)
	o.Namespace = ns
	m := host().StartFleetManager(t, o)
	for i, cp := range clusters {
		cp.WriteKubeconfigSecret(t, host(), ns, names[i])
	}
	for _, name := range names {
		m.WaitSynced(t, name, engageTimeout)
	}
	return m, ns
}

// An idle fleet runs no workers, and stopping the fleet manager
// stops every member's engine and ends cleanly:
// an engine's run ends with the fleet, not only with its engagement, which
// the provider ends after the manager has waited for the fleet (waiting for
// it, the manager ran out its grace period and exited with an error).
func TestStoppingTheFleetStopsEveryEngineAndExitsCleanly(t *testing.T) {
	m, _ := startFleet(t, framework.FleetOptions{})
	// Idle, the members' queues hold none of the workers they share.
	framework.Eventually(t, 30*time.Second, func() error {
		if n := m.Fleet.WorkersRunning(); n > 0 {
			return fmt.Errorf("%d workers run", n)
		}
		return nil
	}, "an idle fleet should run no workers")
	m.Stop()
	if err := m.ExitError(); err != nil {
		t.Fatalf("the fleet manager did not stop cleanly: %v", err)
	}
	if left := m.Fleet.Clusters(); len(left) > 0 {
		t.Fatalf("engines still engaged once the fleet manager stopped: %v", left)
	}
}

// background deletes an owner in the background in cp and waits for its
// dependents to be collected.
func background(t *testing.T, cp *framework.ControlPlane) {
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	child := cp.Create(t, framework.ConfigMaps, ns, "child", framework.OwnedBy(owner.Ref(false)))
	grandchild := cp.Create(t, framework.ConfigMaps, ns, "grandchild", framework.OwnedBy(child.Ref(false)))
	alive := cp.Create(t, framework.ConfigMaps, ns, "alive")
	shared := cp.Create(t, framework.ConfigMaps, ns, "shared", framework.OwnedBy(owner.Ref(false), alive.Ref(false)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its only owner was deleted", child)
	cp.WaitGone(t, "its owner was collected", grandchild)
	cp.WaitOwners(t, shared, "the dangling reference should be removed and the dependent kept", alive.UID)
	cp.Survive(t, "it has a live owner", shared, alive)
}

// foreground deletes an owner in the foreground in cp and waits for it and
// its dependents to be deleted.
func foreground(t *testing.T, cp *framework.ControlPlane) {
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	blocking := cp.Create(t, framework.ConfigMaps, ns, "blocking", framework.OwnedBy(owner.Ref(true)))
	nonBlocking := cp.Create(t, framework.ConfigMaps, ns, "non-blocking", framework.OwnedBy(owner.Ref(false)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	cp.WaitGone(t, "its owner was deleted in the foreground", blocking, nonBlocking)
	cp.WaitGone(t, "its blocking dependents are gone", owner)
}

// orphan deletes an owner with the orphan policy in cp and waits for its
// dependents to be orphaned.
func orphan(t *testing.T, cp *framework.ControlPlane) {
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	other := cp.Create(t, framework.ConfigMaps, ns, "other")
	only := cp.Create(t, framework.ConfigMaps, ns, "only", framework.OwnedBy(owner.Ref(true)))
	shared := cp.Create(t, framework.ConfigMaps, ns, "shared", framework.OwnedBy(other.Ref(false), owner.Ref(true)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationOrphan)
	cp.WaitGone(t, "ownergc should orphan its dependents and remove its orphan finalizer", owner)
	cp.WaitOwners(t, only, "its only owner was deleted with the orphan policy")
	cp.WaitOwners(t, shared, "the orphaned owner's reference must be removed and the other one kept", other.UID)
	cp.SurviveIntact(t, "orphaned objects are not collected", only, shared)
}

// customResources creates a CRD in cp and waits for a cascade through its
// custom resources.
func customResources(t *testing.T, cp *framework.ControlPlane) {
	ns := framework.CreateNamespace(t, cp.Client)
	gizmos, _ := cp.CreateCRD(t, framework.CRD{
		Group: framework.UniqueGroup("fleet"), Kind: "Gizmo", Plural: "gizmos", Scope: apiextensionsv1.NamespaceScoped,
	})
	owner := cp.Create(t, gizmos, ns, "owner")
	crDep := cp.Create(t, gizmos, ns, "gizmo", framework.OwnedBy(owner.Ref(false)))
	cmDep := cp.Create(t, framework.ConfigMaps, ns, "configmap", framework.OwnedBy(owner.Ref(false)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its custom resource owner was deleted", crDep, cmDep)
}

// Every cluster of the fleet is collected by its own engine: cascades of
// every propagation policy, and through the custom resources of a CRD created
// after the engine started; each engine's queues and API-level collectors
// report in series labelled with its cluster.
func TestEveryClusterIsCollected(t *testing.T) {
	m, ns := startFleet(t, framework.FleetOptions{})
	checkReported(t, m, ns)
	for i, cp := range clusters {
		t.Run(names[i], func(t *testing.T) {
			t.Run("background", func(t *testing.T) { background(t, cp) })
			t.Run("foreground", func(t *testing.T) { foreground(t, cp) })
			t.Run("orphan", func(t *testing.T) { orphan(t, cp) })
			t.Run("crd", func(t *testing.T) { customResources(t, cp) })
		})
	}
	t.Run("metrics", checkClusterMetrics)
}

// Removing a cluster's Secret stops that cluster's engine: its garbage is
// left alone, while the other clusters are still collected; writing the
// Secret again engages it again, and the garbage left meanwhile is
// collected.
func TestRemovingAClusterSecretStopsItsEngine(t *testing.T) {
	m, ns := startFleet(t, framework.FleetOptions{})
	with3 := settledGoroutines()
	removed := clusters[2]
	if err := host().Clientset.CoreV1().Secrets(ns).Delete(framework.Context(t), names[2], metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the Secret of %s: %v", names[2], err)
	}
	m.WaitDisengaged(t, names[2], time.Minute)
	waitStatusGone(t, ns, names[2])
	// The engine's goroutines (informers, workers, queues) are gone: about
	// a third of the fleet's.
	with2 := settledGoroutines()
	t.Logf("goroutines: %d with three clusters, %d with two", with3, with2)
	if with3-with2 < 20 {
		t.Errorf("removing a cluster ended only %d goroutines (%d → %d): is its engine still running?", with3-with2, with3, with2)
	}

	ns2 := framework.CreateNamespace(t, removed.Client)
	owner := removed.Create(t, framework.ConfigMaps, ns2, "owner")
	dep := removed.Create(t, framework.ConfigMaps, ns2, "dep", framework.OwnedBy(owner.Ref(false)))
	removed.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	for i, cp := range clusters[:2] {
		t.Run(names[i], func(t *testing.T) { background(t, cp) })
	}
	removed.Survive(t, "no engine collects the cluster whose Secret was removed", dep)

	removed.WriteKubeconfigSecret(t, host(), ns, names[2])
	m.WaitSynced(t, names[2], engageTimeout)
	removed.WaitGone(t, "the cluster is engaged again and its owner is gone", dep)
}

// A cluster whose API server stops answering delays no other: the others'
// cascades complete while it is down, the host reports it Degraded
// (Unreachable), and once its API server is back it is collected again and
// no longer Degraded.
func TestAnUnreachableClusterDoesNotDelayTheOthers(t *testing.T) {
	m, ns := startFleet(t, framework.FleetOptions{})
	down := clusters[2]
	if err := down.StopAPIServer(); err != nil {
		t.Fatalf("stopping the API server of %s: %v", names[2], err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = down.StartAPIServer(nil)
		}
	})
	waitStatus(t, m, ns, names[2], "True", "True", "Unreachable")
	for i, cp := range clusters[:2] {
		t.Run(names[i], func(t *testing.T) {
			start := time.Now()
			background(t, cp)
			t.Logf("cascade in %s while %s is down: %s", names[i], names[2], time.Since(start).Round(10*time.Millisecond))
		})
	}
	waitStatus(t, m, ns, names[0], "True", "False", "")

	if err := down.StartAPIServer(nil); err != nil {
		t.Fatalf("starting the API server of %s again: %v", names[2], err)
	}
	restarted = true
	// Watches resume with backoff: allow it longer than a refresh.
	waitStatusWithin(t, m, 2*time.Minute, ns, names[2], "True", "False", "")
	t.Run(names[2], func(t *testing.T) { background(t, down) })
}

// settledGoroutines counts the process's goroutines once the count stops
// moving (goroutines of stopped informers and workers take a moment to end).
func settledGoroutines() int {
	last := runtime.NumGoroutine()
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			return n
		}
		last = n
	}
	return last
}
