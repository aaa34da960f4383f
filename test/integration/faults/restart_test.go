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

package faults_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

const dependentLabel = "ownergc.test/dependent=true"

var dependentLabels = map[string]string{"ownergc.test/dependent": "true"}

// waitNone waits until no dependent of the test remains in ns.
func waitNone(t *testing.T, k framework.Kind, ns string, total int, why string) {
	t.Helper()
	framework.Eventually(t, 2*framework.CascadeTimeout, func() error {
		if n := cp.Count(t, k, ns, dependentLabel); n > 0 {
			return fmt.Errorf("%d of %d dependents remain", n, total)
		}
		return nil
	}, "every dependent should be collected: %s", why)
}

// Fault: kube-apiserver is stopped and started again on the same etcd in
// the middle of a 500-dependent cascade. The cascade finishes once it is
// back, and an owner that still exists keeps its dependents.
func TestAPIServerRestartMidCascade(t *testing.T) {
	const dependents = 500
	ns := framework.CreateNamespace(t, cp.Client)
	m := cp.StartManager(t, framework.ManagerOptions{QPS: 50, Burst: 50})

	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	kept := cp.Create(t, framework.ConfigMaps, ns, "kept-owner")
	cp.CreateMany(t, framework.ConfigMaps, ns, "dependent", dependents, framework.OwnedBy(owner.Ref(false)), framework.WithLabels(dependentLabels))
	keptDeps := cp.CreateMany(t, framework.ConfigMaps, ns, "kept", 20, framework.OwnedBy(kept.Ref(false)))
	m.WaitObserved(t, keptDeps...)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if n := cp.Count(t, framework.ConfigMaps, ns, dependentLabel); n > dependents-50 {
			return fmt.Errorf("%d dependents remain", n)
		}
		return nil
	}, "the cascade should be under way")
	if err := cp.RestartAPIServer(nil); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	remaining := cp.Count(t, framework.ConfigMaps, ns, dependentLabel)
	t.Logf("%d of %d dependents remained when kube-apiserver came back", remaining, dependents)
	if remaining == 0 {
		t.Fatal("the cascade finished before the restart: nothing was interrupted")
	}
	waitNone(t, framework.ConfigMaps, ns, dependents, "the cascade resumes after the restart")
	cp.Survive(t, "their owner exists", keptDeps...)
}

// Fault: watch expiry. etcd's history is compacted and kube-apiserver
// restarted while the collector runs: every watch resumes from a
// resourceVersion that is gone (410) and every informer lists again.
// Deletions made meanwhile are found, cascades still work, and nothing with
// a live owner is lost.
func TestWatchExpiryAfterCompaction(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	m := cp.StartManager(t, framework.ManagerOptions{})
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	kept := cp.Create(t, framework.ConfigMaps, ns, "kept-owner")
	deps := cp.CreateMany(t, framework.ConfigMaps, ns, "dependent", 50, framework.OwnedBy(owner.Ref(false)), framework.WithLabels(dependentLabels))
	keptDeps := cp.CreateMany(t, framework.ConfigMaps, ns, "kept", 20, framework.OwnedBy(kept.Ref(false)))
	m.WaitObserved(t, append(deps, keptDeps...)...)

	// The owner is deleted right as kube-apiserver comes back, while the
	// collector's watches are reconnecting; then etcd's history is
	// compacted and kube-apiserver restarted again, so that no watch can
	// resume from where it was: the deletion is found by relisting.
	if err := cp.RestartAPIServer(nil); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	rev, err := cp.CompactEtcd()
	if err != nil {
		t.Fatalf("compacting etcd: %v", err)
	}
	t.Logf("compacted etcd at revision %d", rev)
	if err := cp.RestartAPIServer(nil); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	waitNone(t, framework.ConfigMaps, ns, len(deps), "their owner was deleted around the compaction")
	cp.Survive(t, "their owner exists", keptDeps...)

	// Cascades still work.
	later := cp.Create(t, framework.ConfigMaps, ns, "later-owner")
	laterDeps := cp.CreateMany(t, framework.ConfigMaps, ns, "later", 20, framework.OwnedBy(later.Ref(false)))
	cp.DeleteWith(t, later, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "their owner was deleted after the relist", laterDeps...)
}
