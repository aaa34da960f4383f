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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

// A large cascade in one member delays no small cascade in another: each
// member's engine has its workers, queues and client rate limit of its
// own. Asserted on order, not on time: member beta's cascade of 1,500
// dependents, at 50 deletions a second, is under way when member gamma's
// owner of 10 dependents is deleted, and gamma's dependents are all gone
// while beta's cascade still has most of its dependents left.
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
	framework.Eventually(t, time.Minute, func() error {
		if n := configMapsIn(t, beta, bns); n > large-qps {
			return fmt.Errorf("%d of beta's dependents left", n)
		}
		return nil
	}, "beta's large cascade should be under way")

	gamma.DeleteWith(t, smallOwner, metav1.DeletePropagationBackground)
	gamma.WaitGone(t, "gamma's owner was deleted while beta's large cascade ran", smallDeps...)
	if left := configMapsIn(t, beta, bns); left < large/2 {
		t.Errorf("when gamma's %d dependents were gone, beta's cascade had only %d of %d dependents left: gamma's should not wait for beta's", small, left, large)
	}
	framework.Eventually(t, 2*time.Minute, func() error {
		if n := configMapsIn(t, beta, bns); n > 0 {
			return fmt.Errorf("%d of beta's dependents left", n)
		}
		return nil
	}, "beta's large cascade should finish")
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
