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
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// statusTimeout bounds how long a cluster's status on the host takes to
// follow its engine (the refresh is 10s, the probe 1s).
const statusTimeout = 45 * time.Second

// clusterStatus reads the ClusterGCStatus of a cluster on the host.
func clusterStatus(ns, name string) (*ownergcv1alpha1.ClusterGCStatus, error) {
	var cgs ownergcv1alpha1.ClusterGCStatus
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := host().Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cgs)
	return &cgs, err
}

// waitStatus waits until the host reports the cluster with the given Ready
// and Degraded statuses (and the Degraded reason, when not empty).
func waitStatus(t *testing.T, m *framework.FleetManager, ns, name, ready, degraded, degradedReason string) *ownergcv1alpha1.ClusterGCStatus {
	t.Helper()
	return waitStatusWithin(t, m, statusTimeout, ns, name, ready, degraded, degradedReason)
}

// waitStatusWithin is waitStatus with a timeout.
func waitStatusWithin(t *testing.T, m *framework.FleetManager, timeout time.Duration, ns, name, ready, degraded, degradedReason string) *ownergcv1alpha1.ClusterGCStatus {
	t.Helper()
	var cgs *ownergcv1alpha1.ClusterGCStatus
	framework.Eventually(t, timeout, func() error {
		var err error
		if cgs, err = clusterStatus(ns, name); err != nil {
			return err
		}
		r := apimeta.FindStatusCondition(cgs.Status.Conditions, ownergcv1alpha1.ConditionReady)
		d := apimeta.FindStatusCondition(cgs.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
		if r == nil || d == nil || string(r.Status) != ready || string(d.Status) != degraded || (degradedReason != "" && d.Reason != degradedReason) {
			failed := "no engine"
			if eng := m.Fleet.Engine(name); eng != nil {
				failed = framework.DescribeFailures(eng.Status().Failed)
			}
			return fmt.Errorf("status %+v; failed resources: %s", cgs.Status, failed)
		}
		return nil
	}, "the host should report cluster %s Ready=%s Degraded=%s %s", name, ready, degraded, degradedReason)
	return cgs
}

// waitStatusGone waits until the host no longer reports the cluster.
func waitStatusGone(t *testing.T, ns, name string) {
	t.Helper()
	framework.Eventually(t, statusTimeout, func() error {
		_, err := clusterStatus(ns, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still reported (%v)", err)
	}, "the host should stop reporting cluster %s", name)
}

// The host reports every engaged cluster: its name, Ready, not Degraded,
// the size of its graph and the replica collecting it.
func checkReported(t *testing.T, m *framework.FleetManager, ns string) {
	t.Helper()
	for _, name := range names {
		cgs := waitStatus(t, m, ns, name, "True", "False", "")
		if cgs.Status.Cluster != name || cgs.Status.Nodes == 0 || cgs.Status.MonitoredResources == 0 || cgs.Status.Replica == "" {
			t.Errorf("cluster %s is reported with %+v", name, cgs.Status)
		}
		if refs := cgs.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Secret" || refs[0].Name != name {
			t.Errorf("the status of cluster %s should be owned by its Secret, has %+v", name, refs)
		}
	}
}
