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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

const (
	timeout = 30 * time.Second
	quiet   = 3 * time.Second
)

var configMapGroupKind = schema.GroupKind{Kind: "ConfigMap"}

func bg() context.Context { return context.Background() }

// applyPolicy creates or updates the default GCPolicy and registers its
// removal (and the return to the defaults) at the end of the test.
func applyPolicy(t *testing.T, spec ownergcv1alpha1.GCPolicySpec) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
	err := k8s.Get(bg(), client.ObjectKeyFromObject(p), p)
	switch {
	case apierrors.IsNotFound(err):
		p.Spec = spec
		if err := k8s.Create(bg(), p); err != nil {
			t.Fatalf("creating GCPolicy: %v", err)
		}
		t.Cleanup(func() { deletePolicy(t) })
	case err != nil:
		t.Fatal(err)
	default:
		p = updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) { p.Spec = spec })
	}
	return p
}

// updatePolicy changes the GCPolicy, reading it again when the manager
// wrote its status in between.
func updatePolicy(t *testing.T, change func(*ownergcv1alpha1.GCPolicy)) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(bg(), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		change(p)
		return k8s.Update(bg(), p)
	})
	if err != nil {
		t.Fatalf("updating GCPolicy: %v", err)
	}
	return p
}

func deletePolicy(t *testing.T) {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
	if err := k8s.Delete(bg(), p); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting GCPolicy: %v", err)
	}
	framework.Eventually(t, timeout, func() error {
		if manager.Engine.Policy().FromPolicy {
			return fmt.Errorf("engine still runs the deleted policy")
		}
		return nil
	}, "the built-in defaults should be back once the GCPolicy is deleted")
}

// waitInForce waits until the policy's generation is in force and Ready.
func waitInForce(t *testing.T, p *ownergcv1alpha1.GCPolicy) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	cur := &ownergcv1alpha1.GCPolicy{}
	framework.Eventually(t, timeout, func() error {
		if err := k8s.Get(bg(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("status.observedGeneration %d, generation %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, ownergcv1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Ready condition %+v at generation %d", ready, cur.Generation)
		}
		return nil
	}, "GCPolicy generation should be in force and Ready")
	return cur
}

func configMap(t *testing.T, ns, name string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs}}
	if err := k8s.Create(bg(), cm); err != nil {
		t.Fatalf("creating ConfigMap %s: %v", name, err)
	}
	return cm
}

func secret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Create(bg(), s); err != nil {
		t.Fatalf("creating Secret %s: %v", name, err)
	}
	return s
}

func ref(obj client.Object, apiVersion, kind string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: &block}
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	return framework.Exists(t, k8s, obj)
}

func waitGone(t *testing.T, obj client.Object, why string) {
	t.Helper()
	framework.WaitGone(t, k8s, obj, timeout, why)
}

func TestWithoutAPolicyTheDefaultsApply(t *testing.T) {
	deletePolicy(t)
	p := manager.Engine.Policy()
	if p.AttemptToDeleteWorkers != 20 || p.AttemptToOrphanWorkers != 20 || p.DefaultPropagation != metav1.DeletePropagationBackground {
		t.Fatalf("defaults not in force: %+v", p)
	}
	if st := manager.Engine.Status(); st.AttemptToDeleteWorkers != 20 || st.AttemptToOrphanWorkers != 20 {
		t.Fatalf("worker pools are %d/%d, want 20/20", st.AttemptToDeleteWorkers, st.AttemptToOrphanWorkers)
	}
	ns := framework.CreateNamespace(t, k8s)
	owner := secret(t, ns, "owner")
	dep := configMap(t, ns, "dep", ref(owner, "v1", "Secret", false))
	// Events are ignored by default: an event owned by the secret survives.
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "ev", OwnerReferences: []metav1.OwnerReference{ref(owner, "v1", "Secret", false)}},
		InvolvedObject: corev1.ObjectReference{Kind: "Secret", Namespace: ns, Name: "owner"},
		Reason:         "Test", Message: "owned event", Type: corev1.EventTypeNormal,
	}
	if err := k8s.Create(bg(), ev); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(bg(), owner); err != nil {
		t.Fatal(err)
	}
	waitGone(t, dep, "the defaults collect ConfigMaps")
	framework.Consistently(t, quiet, func() error {
		if !exists(t, ev) {
			return fmt.Errorf("an event was collected, but events are ignored by default")
		}
		return nil
	}, "events are ignored without a GCPolicy")
}

func TestReadyFollowsTheGenerationInForce(t *testing.T) {
	p := applyPolicy(t, ownergcv1alpha1.GCPolicySpec{})
	cur := waitInForce(t, p)
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
	after := waitInForce(t, cur)
	if manager.Engine.Policy().AttemptToDeleteWorkers != 7 || manager.Engine.Policy().Generation != after.Generation {
		t.Fatalf("engine runs %+v, want generation %d with 7 workers", manager.Engine.Policy(), after.Generation)
	}
	framework.Eventually(t, timeout, func() error {
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
	p := waitInForce(t, applyPolicy(t, ownergcv1alpha1.GCPolicySpec{}))
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
	if !slices.Equal(names, []string{"Name", "Ready", "Monitored", "Nodes", "Age"}) {
		t.Fatalf("columns %v", names)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[1]) != "True" {
		t.Fatalf("rows %+v", table.Rows)
	}
}

func TestIgnoringAndUnignoringAResource(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	owner := secret(t, ns, "owner")
	dep := configMap(t, ns, "dep", ref(owner, "v1", "Secret", false))
	framework.Eventually(t, timeout, func() error {
		if manager.Engine.Graph().NodeFor("", "ConfigMap", ns, "dep") == nil {
			return fmt.Errorf("dependent not in the graph yet")
		}
		return nil
	}, "the ConfigMap should be observed")

	waitInForce(t, applyPolicy(t, ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Resource: "configmaps"}}}))
	framework.Eventually(t, timeout, func() error {
		if manager.Engine.KindState(configMapGroupKind).Watched {
			return fmt.Errorf("configmaps still watched")
		}
		if n := manager.Engine.Graph().KindLen(configMapGroupKind); n != 0 {
			return fmt.Errorf("%d ConfigMap nodes still in the graph", n)
		}
		return nil
	}, "an ignored resource is unwatched and its nodes dropped")

	if err := k8s.Delete(bg(), owner); err != nil {
		t.Fatal(err)
	}
	framework.Consistently(t, quiet, func() error {
		if !exists(t, dep) {
			return fmt.Errorf("a ConfigMap was collected while configmaps are ignored")
		}
		return nil
	}, "objects of an ignored resource survive their owner's deletion")

	updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) { p.Spec.IgnoredResources = []ownergcv1alpha1.GroupResource{} })
	waitGone(t, dep, "configmaps are watched again and its owner is gone")
}

func TestResizingWorkersKeepsQueuedWork(t *testing.T) {
	waitInForce(t, applyPolicy(t, ownergcv1alpha1.GCPolicySpec{Workers: ownergcv1alpha1.Workers{AttemptToDelete: 1, AttemptToOrphan: 1}}))
	framework.Eventually(t, timeout, func() error {
		if st := manager.Engine.Status(); st.AttemptToDeleteWorkers != 1 || st.AttemptToOrphanWorkers != 1 {
			return fmt.Errorf("pools are %d/%d", st.AttemptToDeleteWorkers, st.AttemptToOrphanWorkers)
		}
		return nil
	}, "pools should shrink to 1/1")

	ns := framework.CreateNamespace(t, k8s)
	owner := secret(t, ns, "owner")
	const n = 300
	deps := make([]*corev1.ConfigMap, n)
	for i := range deps {
		deps[i] = configMap(t, ns, fmt.Sprint("dep-", i), ref(owner, "v1", "Secret", false))
	}
	framework.Eventually(t, timeout, func() error {
		if got := len(manager.Engine.Graph().Dependents(manager.Engine.Graph().Node(owner.UID), false)); got != n {
			return fmt.Errorf("%d of %d dependents in the graph", got, n)
		}
		return nil
	}, "all dependents should be observed")
	if err := k8s.Delete(bg(), owner); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, func() error {
		if q := manager.Engine.Status().AttemptToDelete; q < n/2 {
			return fmt.Errorf("only %d items queued", q)
		}
		return nil
	}, "with one worker, most of the cascade should be waiting in the queue")

	updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) {
		p.Spec.Workers = ownergcv1alpha1.Workers{AttemptToDelete: 40, AttemptToOrphan: 3}
	})
	framework.Eventually(t, timeout, func() error {
		if st := manager.Engine.Status(); st.AttemptToDeleteWorkers != 40 || st.AttemptToOrphanWorkers != 3 {
			return fmt.Errorf("pools are %d/%d", st.AttemptToDeleteWorkers, st.AttemptToOrphanWorkers)
		}
		return nil
	}, "pools should grow to 40/3 while work is queued")
	framework.Eventually(t, 2*timeout, func() error {
		list := &corev1.ConfigMapList{}
		if err := k8s.List(bg(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		left := 0
		for _, cm := range list.Items {
			if len(cm.OwnerReferences) > 0 {
				left++
			}
		}
		if left > 0 {
			return fmt.Errorf("%d dependents left", left)
		}
		return nil
	}, "every queued dependent should be collected after the resize")
}

func TestDefaultPropagationForeground(t *testing.T) {
	waitInForce(t, applyPolicy(t, ownergcv1alpha1.GCPolicySpec{DefaultPropagation: ownergcv1alpha1.PropagationForeground}))
	ns := framework.CreateNamespace(t, k8s)
	owner := secret(t, ns, "owner")
	mid := configMap(t, ns, "mid", ref(owner, "v1", "Secret", false))
	leaf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leaf", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{ref(mid, "v1", "ConfigMap", true)}}}
	if err := k8s.Create(bg(), leaf); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(bg(), owner); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, func() error {
		cur := &corev1.ConfigMap{}
		if err := k8s.Get(bg(), client.ObjectKeyFromObject(mid), cur); err != nil {
			return err
		}
		if cur.DeletionTimestamp == nil || !slices.Contains(cur.Finalizers, metav1.FinalizerDeleteDependents) {
			return fmt.Errorf("mid has deletionTimestamp %v and finalizers %v", cur.DeletionTimestamp, cur.Finalizers)
		}
		return nil
	}, "the collector should delete mid in the foreground, so it waits for its blocking dependent")
	framework.Consistently(t, quiet, func() error {
		if !exists(t, mid) {
			return fmt.Errorf("mid is gone while its blocking dependent is held")
		}
		return nil
	}, "a foreground deletion waits for blocking dependents")

	cur := &corev1.ConfigMap{}
	if err := k8s.Get(bg(), client.ObjectKeyFromObject(leaf), cur); err != nil {
		t.Fatal(err)
	}
	cur.Finalizers = nil
	if err := k8s.Update(bg(), cur); err != nil {
		t.Fatal(err)
	}
	waitGone(t, leaf, "released")
	waitGone(t, mid, "its blocking dependent is gone")
}

func TestDefaultPropagationOrphan(t *testing.T) {
	waitInForce(t, applyPolicy(t, ownergcv1alpha1.GCPolicySpec{DefaultPropagation: ownergcv1alpha1.PropagationOrphan}))
	ns := framework.CreateNamespace(t, k8s)
	owner := secret(t, ns, "owner")
	mid := configMap(t, ns, "mid", ref(owner, "v1", "Secret", false))
	leaf := configMap(t, ns, "leaf", ref(mid, "v1", "ConfigMap", false))
	if err := k8s.Delete(bg(), owner); err != nil {
		t.Fatal(err)
	}
	waitGone(t, mid, "its owner is gone")
	framework.Eventually(t, timeout, func() error {
		cur := &corev1.ConfigMap{}
		if err := k8s.Get(bg(), client.ObjectKeyFromObject(leaf), cur); err != nil {
			return err
		}
		if len(cur.OwnerReferences) != 0 {
			return fmt.Errorf("leaf still references %v", cur.OwnerReferences)
		}
		return nil
	}, "mid was deleted with Orphan: its dependent survives without the reference")
	framework.Consistently(t, quiet, func() error {
		if !exists(t, leaf) {
			return fmt.Errorf("the orphaned dependent was deleted")
		}
		return nil
	}, "orphaned dependents survive")
}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

func TestDegradedWhileAnAggregatedAPIIsUnavailable(t *testing.T) {
	p := waitInForce(t, applyPolicy(t, ownergcv1alpha1.GCPolicySpec{}))
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.broken.example.com"},
		"spec": map[string]any{
			"group": "broken.example.com", "version": "v1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "default", "name": "nope", "port": int64(443)},
		},
	}}
	if _, err := dyn.Resource(apiServiceGVR).Create(bg(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			_ = dyn.Resource(apiServiceGVR).Delete(bg(), "v1.broken.example.com", metav1.DeleteOptions{})
		}
	})
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
	owner := secret(t, ns, "owner")
	dep := configMap(t, ns, "dep", ref(owner, "v1", "Secret", false))
	if err := k8s.Delete(bg(), owner); err != nil {
		t.Fatal(err)
	}
	waitGone(t, dep, "collection continues while another group fails")

	if err := dyn.Resource(apiServiceGVR).Delete(bg(), "v1.broken.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	removed = true
	framework.Eventually(t, 60*time.Second, condition(metav1.ConditionFalse, false), "Degraded should clear once the APIService is removed")
}
