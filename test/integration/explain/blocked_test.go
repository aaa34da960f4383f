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

package explain_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/test/framework"
)

// reportBlockedAfter makes the GCPolicy report deletions blocked for longer
// than threshold, until the test ends.
func reportBlockedAfter(t *testing.T, threshold time.Duration) {
	t.Helper()
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Diagnostics.BlockedDeletionAfter = &metav1.Duration{Duration: threshold}
	})
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) { s.Diagnostics.BlockedDeletionAfter = nil })
	})
}

// A foreground deletion held by a dependent's finalizer for longer than
// blockedDeletionAfter is reported: a DeletionBlocked event on the owner
// naming the dependent and its finalizer, the metrics and the GCPolicy
// status; when the dependent goes, DeletionUnblocked, and they clear.
func TestBlockedForegroundDeletionIsReported(t *testing.T) {
	const threshold = 2 * time.Second
	reportBlockedAfter(t, threshold)
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	held := cp.Create(t, framework.ConfigMaps, ns, "held", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	manager.WaitObserved(t, owner, held)
	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)

	note := cp.WaitEvent(t, ns, owner.UID, "", "DeletionBlocked", threshold+framework.CascadeTimeout).Note
	for _, want := range []string{"ConfigMap " + ns + "/held", "carries finalizers " + framework.HoldFinalizer, "1 blocking dependents"} {
		if !strings.Contains(note, want) {
			t.Errorf("DeletionBlocked says %q, want it to say %q", note, want)
		}
	}
	if v := testutil.ToFloat64(metrics.BlockedDeletions); v != 1 {
		t.Errorf("ownergc_blocked_deletions is %v, want 1", v)
	}
	if v := testutil.ToFloat64(metrics.OldestBlockedDeletionSeconds); v < threshold.Seconds() {
		t.Errorf("ownergc_oldest_blocked_deletion_seconds is %v, want at least %v", v, threshold.Seconds())
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		p := &ownergcv1alpha1.GCPolicy{}
		if err := cp.Client.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		o := p.Status.OldestBlockedDeletion
		if p.Status.BlockedDeletions != 1 || o == nil || o.Name != owner.Name || o.Namespace != ns || o.Resource != "configmaps" {
			return fmt.Errorf("status: blockedDeletions %d, oldest %+v", p.Status.BlockedDeletions, o)
		}
		return nil
	}, "the GCPolicy status should report the blocked deletion")

	cp.RemoveFinalizer(t, held, framework.HoldFinalizer)
	cp.WaitGone(t, "its blocking dependent is gone", held, owner)
	cp.WaitEvent(t, ns, owner.UID, "", "DeletionUnblocked", framework.CascadeTimeout)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if v := testutil.ToFloat64(metrics.BlockedDeletions); v != 0 {
			return fmt.Errorf("ownergc_blocked_deletions is %v", v)
		}
		p := &ownergcv1alpha1.GCPolicy{}
		if err := cp.Client.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		if p.Status.BlockedDeletions != 0 || p.Status.OldestBlockedDeletion != nil {
			return fmt.Errorf("status: blockedDeletions %d, oldest %+v", p.Status.BlockedDeletions, p.Status.OldestBlockedDeletion)
		}
		return nil
	}, "the metrics and the status should clear")
}

// nodes are the cluster-scoped kind the next test deletes: a Node needs
// nothing but a name.
var nodes = framework.Kind{GVR: framework.ConfigMaps.GVR.GroupVersion().WithResource("nodes"), Kind: "Node"}

// The DeletionBlocked event of a cluster-scoped owner is recorded in
// namespace default, where its readers may not see objects of other
// namespaces: it names the cluster-scoped blocking dependent and counts the
// namespaced one, naming neither it nor its namespace.
func TestBlockedDeletionOfAClusterScopedOwnerNamesNoNamespacedDependent(t *testing.T) {
	const threshold = 2 * time.Second
	reportBlockedAfter(t, threshold)
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, nodes, "", ns+"-owner")
	heldNode := cp.Create(t, nodes, "", ns+"-held", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	private := cp.Create(t, framework.ConfigMaps, ns, "private-dependent", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	cp.ReleaseOnCleanup(t, framework.HoldFinalizer, heldNode, private)
	manager.WaitLinked(t, owner, heldNode, true)
	manager.WaitLinked(t, owner, private, true)
	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)

	note := cp.WaitEvent(t, metav1.NamespaceDefault, owner.UID, "", "DeletionBlocked", threshold+framework.CascadeTimeout).Note
	for _, want := range []string{"2 blocking dependents", "Node " + heldNode.Name, "1 in namespaces, not named"} {
		if !strings.Contains(note, want) {
			t.Errorf("DeletionBlocked says %q, want it to say %q", note, want)
		}
	}
	for _, secret := range []string{private.Name, ns + "/"} {
		if strings.Contains(note, secret) {
			t.Errorf("DeletionBlocked, recorded in namespace default, says %q: it names %q", note, secret)
		}
	}
}
