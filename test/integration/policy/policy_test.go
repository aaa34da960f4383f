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

package policy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

var configMapGroupKind = schema.GroupKind{Kind: "ConfigMap"}

func bg() context.Context { return context.Background() }

// applyPolicy sets the spec of the default GCPolicy (which the manager
// creates) and restores the defaults at the end of the test.
func applyPolicy(t *testing.T, spec ownergcv1alpha1.GCPolicySpec) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	p := updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) { p.Spec = spec })
	t.Cleanup(func() { deletePolicy(t) })
	return p
}

// applyPolicyInForce is applyPolicy, then waits until the policy is in
// force.
func applyPolicyInForce(t *testing.T, spec ownergcv1alpha1.GCPolicySpec) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	p := applyPolicy(t, spec)
	framework.WaitPolicyInForce(t, k8s, "the GCPolicy's generation should be in force and Ready")
	return p
}

// updatePolicy changes the default GCPolicy, reading it again when the
// manager wrote its status in between (or while the manager creates it again
// after a deletion), and returns it as updated.
func updatePolicy(t *testing.T, change func(*ownergcv1alpha1.GCPolicy)) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	cur := &ownergcv1alpha1.GCPolicy{}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if err := k8s.Get(bg(), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, cur); err != nil {
			return err
		}
		change(cur)
		err := k8s.Update(bg(), cur)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("updating GCPolicy %s: %v", ownergcv1alpha1.PolicyName, err)
		}
		return err
	}, "updating GCPolicy %s", ownergcv1alpha1.PolicyName)
	return cur
}

// deletePolicy deletes the default GCPolicy, which restores the defaults: the
// manager creates it again with them. It returns the new one once it is in
// force.
func deletePolicy(t *testing.T) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	old := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
	if err := k8s.Get(bg(), client.ObjectKeyFromObject(old), old); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := k8s.Delete(bg(), old); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting GCPolicy: %v", err)
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		cur := &ownergcv1alpha1.GCPolicy{}
		if err := k8s.Get(bg(), client.ObjectKeyFromObject(old), cur); err != nil {
			return err
		}
		if cur.UID == old.UID {
			return fmt.Errorf("the deleted GCPolicy %s is still there", old.UID)
		}
		return nil
	}, "the manager should create the GCPolicy again once it is deleted")
	return framework.WaitPolicyInForce(t, k8s, "the GCPolicy the manager created again should be in force")
}

// Deleting the GCPolicy puts the defaults back in force (the manager creates
// it again with them: see default_policy_test.go).
func TestDeletingThePolicyRestoresTheDefaults(t *testing.T) {
	deletePolicy(t)
	p := manager.Engine.Policy()
	if p.AttemptToDeleteWorkers != 20 || p.AttemptToOrphanWorkers != 20 || p.DefaultPropagation != metav1.DeletePropagationBackground {
		t.Fatalf("defaults not in force: %+v", p)
	}
	// The pools start once the graph has synced, a moment after readiness.
	waitPools(t, 20, 20, "the worker pools should have the default sizes")
	ns := framework.CreateNamespace(t, k8s)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(owner.Ref(false)))
	// Events are ignored by default: an event owned by the secret survives.
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "ev", OwnerReferences: []metav1.OwnerReference{owner.Ref(false)}},
		InvolvedObject: corev1.ObjectReference{Kind: "Secret", Namespace: ns, Name: "owner"},
		Reason:         "Test", Message: "owned event", Type: corev1.EventTypeNormal,
	}
	if err := k8s.Create(bg(), ev); err != nil {
		t.Fatal(err)
	}
	cp.Delete(t, owner)
	cp.WaitGone(t, "the defaults collect ConfigMaps", dep)
	framework.Consistently(t, framework.Quiet, func() error {
		if !framework.Exists(t, k8s, ev) {
			return fmt.Errorf("an event was collected, but events are ignored by default")
		}
		return nil
	}, "events are ignored by default")
}

func TestReadyFollowsTheGenerationInForce(t *testing.T) {
	p := applyPolicy(t, ownergcv1alpha1.GCPolicySpec{})
	cur := framework.WaitPolicyInForce(t, k8s, "the GCPolicy's generation should be in force and Ready")
	if cur.Status.MonitoredResources == 0 || cur.Status.Graph.Nodes == 0 || cur.Status.LastSyncTime == nil {
		t.Fatalf("status should report monitored resources, graph nodes and a sync time: %+v", cur.Status)
	}
	degraded := apimeta.FindStatusCondition(cur.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionFalse || degraded.ObservedGeneration != cur.Generation {
		t.Fatalf("Degraded condition: %+v", degraded)
	}

	cur = updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) { p.Spec.Workers.AttemptToDelete = 7 })
	if cur.Generation <= p.Generation {
		t.Fatalf("a spec change must bump the generation (%d -> %d)", p.Generation, cur.Generation)
	}
	// As `kubectl wait --for=condition=Ready` sees it: the condition is
	// True for the new generation only once that generation is in force.
	after := framework.WaitPolicyInForce(t, k8s, "the GCPolicy's generation should be in force and Ready")
	if manager.Engine.Policy().AttemptToDeleteWorkers != 7 || manager.Engine.Policy().Generation != after.Generation {
		t.Fatalf("engine runs %+v, want generation %d with 7 workers", manager.Engine.Policy(), after.Generation)
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		list, err := clientset.EventsV1().Events("default").List(bg(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "GCPolicy" && e.Reason == "PolicyApplied" {
				return nil
			}
		}
		return fmt.Errorf("no PolicyApplied event among %d events", len(list.Items))
	}, "putting a policy in force should be reported as an event")
}

func TestPrinterColumns(t *testing.T) {
	p := applyPolicyInForce(t, ownergcv1alpha1.GCPolicySpec{})
	table := &metav1.Table{}
	err := clientset.RESTClient().Get().AbsPath("/apis/ownergc.io/v1alpha1/gcpolicies", p.Name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(bg()).Into(table)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"Name", "Ready", "Degraded", "Monitored", "Nodes", "Blocked", "Mode", "Agreement", "Age"}) {
		t.Fatalf("columns %v", names)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[1]) != "True" {
		t.Fatalf("rows %+v", table.Rows)
	}
}

func TestIgnoringAndUnignoringAResource(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(owner.Ref(false)))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if manager.Engine.Graph().NodeFor("", "ConfigMap", ns, "dep") == nil {
			return fmt.Errorf("dependent not in the graph yet")
		}
		return nil
	}, "the ConfigMap should be observed")

	applyPolicyInForce(t, ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Resource: "configmaps"}}})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if manager.Engine.KindState(configMapGroupKind).Watched {
			return fmt.Errorf("configmaps still watched")
		}
		if n := manager.Engine.Graph().KindLen(configMapGroupKind); n != 0 {
			return fmt.Errorf("%d ConfigMap nodes still in the graph", n)
		}
		return nil
	}, "an ignored resource is unwatched and its nodes dropped")

	cp.Delete(t, owner)
	cp.Survive(t, "objects of an ignored resource survive their owner's deletion: a ConfigMap must not be collected while configmaps are ignored", dep)

	updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) { p.Spec.IgnoredResources = []ownergcv1alpha1.GroupResource{} })
	cp.WaitGone(t, "configmaps are watched again and its owner is gone", dep)
}

func TestResizingWorkersKeepsQueuedWork(t *testing.T) {
	applyPolicyInForce(t, ownergcv1alpha1.GCPolicySpec{Workers: ownergcv1alpha1.Workers{AttemptToDelete: 1, AttemptToOrphan: 1}})
	waitPools(t, 1, 1, "pools should shrink to 1/1")

	ns := framework.CreateNamespace(t, k8s)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	const n = 300
	cp.CreateMany(t, framework.ConfigMaps, ns, "dep", n, framework.OwnedBy(owner.Ref(false)))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if got := len(manager.Engine.Graph().Dependents(manager.Engine.Graph().Node(owner.UID), false)); got != n {
			return fmt.Errorf("%d of %d dependents in the graph", got, n)
		}
		return nil
	}, "all dependents should be observed")
	cp.Delete(t, owner)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if q := manager.Engine.Status().AttemptToDelete; q < n/2 {
			return fmt.Errorf("only %d items queued", q)
		}
		return nil
	}, "with one worker, most of the cascade should be waiting in the queue")

	updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) {
		p.Spec.Workers = ownergcv1alpha1.Workers{AttemptToDelete: 40, AttemptToOrphan: 3}
	})
	waitPools(t, 40, 3, "pools should grow to 40/3 while work is queued")
	framework.Eventually(t, 2*framework.CascadeTimeout, func() error {
		if left := cp.CountDependents(t, framework.ConfigMaps, ns); left > 0 {
			return fmt.Errorf("%d dependents left", left)
		}
		return nil
	}, "every queued dependent should be collected after the resize")
}

func TestDefaultPropagationForeground(t *testing.T) {
	applyPolicyInForce(t, ownergcv1alpha1.GCPolicySpec{DefaultPropagation: ownergcv1alpha1.PropagationForeground})
	ns := framework.CreateNamespace(t, k8s)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	mid := cp.Create(t, framework.ConfigMaps, ns, "mid", framework.OwnedBy(owner.Ref(false)))
	leaf := cp.Create(t, framework.ConfigMaps, ns, "leaf", framework.OwnedBy(mid.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	cp.Delete(t, owner)
	cp.WaitDeleting(t, mid, metav1.FinalizerDeleteDependents, "the collector should delete mid in the foreground, so it waits for its blocking dependent")
	cp.Survive(t, "a foreground deletion waits for blocking dependents: mid must not go while its blocking dependent is held", mid)

	cp.RemoveFinalizer(t, leaf, framework.HoldFinalizer)
	cp.WaitGone(t, "released", leaf)
	cp.WaitGone(t, "its blocking dependent is gone", mid)
}

func TestDefaultPropagationOrphan(t *testing.T) {
	applyPolicyInForce(t, ownergcv1alpha1.GCPolicySpec{DefaultPropagation: ownergcv1alpha1.PropagationOrphan})
	ns := framework.CreateNamespace(t, k8s)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	mid := cp.Create(t, framework.ConfigMaps, ns, "mid", framework.OwnedBy(owner.Ref(false)))
	leaf := cp.Create(t, framework.ConfigMaps, ns, "leaf", framework.OwnedBy(mid.Ref(false)))
	cp.Delete(t, owner)
	cp.WaitGone(t, "its owner is gone", mid)
	cp.WaitOwners(t, leaf, "mid was deleted with Orphan: its dependent survives without the reference")
	cp.Survive(t, "orphaned dependents survive", leaf)
}

func TestDegradedWhileAnAggregatedAPIIsUnavailable(t *testing.T) {
	p := applyPolicyInForce(t, ownergcv1alpha1.GCPolicySpec{})
	removeAPIService := cp.CreateBrokenAPIService(t, schema.GroupVersion{Group: "broken.example.com", Version: "v1"})
	condition := func(status metav1.ConditionStatus, wantFailed bool) func() error {
		return func() error {
			cur := &ownergcv1alpha1.GCPolicy{}
			if err := k8s.Get(bg(), client.ObjectKeyFromObject(p), cur); err != nil {
				return err
			}
			d := apimeta.FindStatusCondition(cur.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
			if d == nil || d.Status != status {
				return fmt.Errorf("Degraded is %+v", d)
			}
			failed := slices.ContainsFunc(cur.Status.FailedResources, func(f ownergcv1alpha1.FailedResource) bool {
				return f.Group == "broken.example.com" && f.Message != ""
			})
			if failed != wantFailed {
				return fmt.Errorf("failedResources %+v", cur.Status.FailedResources)
			}
			if status == metav1.ConditionTrue && d.Reason != ownergcv1alpha1.ReasonResourcesUnavailable {
				return fmt.Errorf("reason %s", d.Reason)
			}
			return nil
		}
	}
	framework.Eventually(t, 60*time.Second, condition(metav1.ConditionTrue, true), "Degraded should list the unavailable group")

	// Collection of everything else goes on.
	ns := framework.CreateNamespace(t, k8s)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(owner.Ref(false)))
	cp.Delete(t, owner)
	cp.WaitGone(t, "collection continues while another group fails", dep)

	removeAPIService()
	framework.Eventually(t, 60*time.Second, condition(metav1.ConditionFalse, false), "Degraded should clear once the APIService is removed")
}

// waitPools waits until the collector's worker pools have the sizes
// (attempt-to-delete, attempt-to-orphan).
func waitPools(t *testing.T, deleters, orphaners int, why string) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := manager.Engine.Status(); st.AttemptToDeleteWorkers != deleters || st.AttemptToOrphanWorkers != orphaners {
			return fmt.Errorf("worker pools are %d/%d, want %d/%d", st.AttemptToDeleteWorkers, st.AttemptToOrphanWorkers, deleters, orphaners)
		}
		return nil
	}, "%s", why)
}
