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
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// shardLease is the replicas' Lease validity in the sharding test: how long
// a killed replica's clusters wait for another.
const shardLease = 6 * time.Second

// startReplica starts a manager binary in the fleet mode, sharding.
func startReplica(t *testing.T, binary, kubeconfig, ns, id string) *framework.ManagerProcess {
	t.Helper()
	p, err := framework.StartManagerProcess(framework.ManagerProcessOptions{
		Name: id, Binary: binary, Kubeconfig: kubeconfig,
		LogPath: filepath.Join(t.TempDir(), id+".log"),
		Args: []string{
			"--cluster-source=kubeconfig-secrets", "--cluster-namespace=" + ns,
			"--shard", "--replica-id=" + id, "--shard-lease-duration=" + shardLease.String(),
			// Slow enough that a cascade of a few hundred objects lasts
			// some seconds.
			"--kube-api-qps=20", "--kube-api-burst=20",
		},
	})
	if err != nil {
		t.Fatalf("starting replica %s: %v", id, err)
	}
	t.Cleanup(p.Stop)
	// The install's readiness probe asks /readyz: a replica in the fleet
	// mode must answer it (controller-runtime answers 404 without a check).
	if err := p.WaitReady(time.Minute); err != nil {
		t.Fatalf("replica %s: %v", id, err)
	}
	return p
}

// owners returns, for each cluster, the replica that the host reports
// collecting it, once every cluster is Ready, collected by a replica that
// holds its fence Lease, and the clusters are split between the replicas of
// alive (a replica that starts first takes every cluster; the coordinator
// hands some to the other once it sees it).
func owners(t *testing.T, ns string, alive map[string]bool) map[string]string {
	t.Helper()
	var out map[string]string
	framework.Eventually(t, 2*time.Minute, func() error {
		out = map[string]string{}
		collecting := map[string]bool{}
		for _, name := range names {
			cgs, err := clusterStatus(ns, name)
			if err != nil {
				return err
			}
			ready := false
			for _, c := range cgs.Status.Conditions {
				ready = ready || (c.Type == ownergcv1alpha1.ConditionReady && c.Status == metav1.ConditionTrue)
			}
			if !ready || !alive[cgs.Status.Replica] {
				return fmt.Errorf("cluster %s: %+v", name, cgs.Status)
			}
			var lease coordinationv1.Lease
			if err := host().Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ownergc-engine-" + name}, &lease); err != nil {
				return fmt.Errorf("the engine Lease of cluster %s: %w", name, err)
			}
			// Its holder is <replica>/<run of the process>/<run of the engine>.
			if h := lease.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, cgs.Status.Replica+"/") {
				return fmt.Errorf("cluster %s is reported collected by %s, its engine Lease held by %v", name, cgs.Status.Replica, h)
			}
			out[name] = cgs.Status.Replica
			collecting[cgs.Status.Replica] = true
		}
		if len(collecting) != len(alive) {
			return fmt.Errorf("the clusters are not split between the replicas %v: %v", alive, out)
		}
		return nil
	}, "every cluster should be collected by exactly one live replica, and every replica collect some")
	return out
}

// Two replicas split the clusters, each collected by exactly one of them
// (fenced by its Lease); when one is killed in the middle of a cascade, its
// clusters move to the other, which finishes the cascade.
func TestShardedReplicasSplitTheClustersAndTakeOverAKilledOnesClusters(t *testing.T) {
	dir := t.TempDir()
	binary, err := framework.BuildManager(dir)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "host.kubeconfig")
	if _, err := host().WriteAdminKubeconfig("ownergc-shard", kubeconfig); err != nil {
		t.Fatal(err)
	}
	ns := framework.CreateNamespace(t, host().Client)
	// Named as a StatefulSet names its pods; with these names and the
	// clusters', the rendezvous hash gives both replicas some clusters.
	ids := [2]string{"ownergc-0", "ownergc-1"}
	replicas := map[string]*framework.ManagerProcess{}
	for _, id := range ids {
		replicas[id] = startReplica(t, binary, kubeconfig, ns, id)
	}
	for i, cp := range clusters {
		cp.WriteKubeconfigSecret(t, host(), ns, names[i])
	}
	split := owners(t, ns, map[string]bool{ids[0]: true, ids[1]: true})
	t.Logf("clusters by replica: %v", split)

	// Kill the replica of gamma in the middle of a cascade there.
	victimCluster := clusters[2]
	victim := split[names[2]]
	survivor := map[string]string{ids[0]: ids[1], ids[1]: ids[0]}[victim]
	tns := framework.CreateNamespace(t, victimCluster.Client)
	owner := victimCluster.Create(t, framework.ConfigMaps, tns, "owner")
	deps := victimCluster.CreateMany(t, framework.ConfigMaps, tns, "dep", 300, framework.OwnedBy(owner.Ref(false)))
	victimCluster.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if n := victimCluster.CountDependents(t, framework.ConfigMaps, tns); n == len(deps) {
			return fmt.Errorf("the cascade has not started: %d dependents left", n)
		}
		return nil
	}, "replica %s should start the cascade", victim)
	replicas[victim].Kill()
	left := victimCluster.CountDependents(t, framework.ConfigMaps, tns)
	killed := time.Now()
	t.Logf("killed %s with %d of %d dependents left", victim, left, len(deps))
	if left == 0 {
		t.Log("the cascade finished before the kill; the takeover is still checked")
	}

	victimCluster.WaitGoneWithin(t, 2*time.Minute, "the surviving replica takes over the cluster and finishes the cascade", deps...)
	t.Logf("the cascade finished %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	after := owners(t, ns, map[string]bool{survivor: true})
	t.Logf("clusters by replica after the kill: %v", after)

	// Every cluster is still collected.
	for i, cp := range clusters {
		t.Run(names[i], func(t *testing.T) { background(t, cp) })
	}
}
