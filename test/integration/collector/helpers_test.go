package collector_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

// Shorthands for the framework's shared test settings.
const (
	cascadeTimeout = framework.CascadeTimeout
	quiet          = framework.Quiet
)

var configMapGVK = framework.ConfigMapGVK

func ctx(t *testing.T) context.Context { return framework.Context(t) }

// ref builds an owner reference to obj.
func ref(obj client.Object, gvk schema.GroupVersionKind, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: &block,
	}
}

// configMap creates a ConfigMap with the given owner references and finalizers.
func configMap(t *testing.T, ns, name string, refs []metav1.OwnerReference, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs, Finalizers: finalizers}}
	if err := k8s.Create(ctx(t), cm); err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

func owned(owners ...metav1.OwnerReference) []metav1.OwnerReference { return owners }

// deleteWith deletes obj with a propagation policy.
func deleteWith(t *testing.T, obj client.Object, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := k8s.Delete(ctx(t), obj, client.PropagationPolicy(policy)); err != nil {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, obj client.Object, why string) {
	t.Helper()
	framework.Eventually(t, cascadeTimeout, func() error {
		err := k8s.Get(ctx(t), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s/%s still exists", obj.GetNamespace(), obj.GetName())
	}, "%s/%s should be deleted: %s", obj.GetNamespace(), obj.GetName(), why)
}

// get reads the current state of obj.
func get[T client.Object](t *testing.T, obj T) (T, bool) {
	t.Helper()
	out := obj.DeepCopyObject().(T)
	err := k8s.Get(ctx(t), client.ObjectKeyFromObject(obj), out)
	if apierrors.IsNotFound(err) {
		return out, false
	}
	if err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	return out, true
}

// survives asserts that obj keeps existing (with the same UID) for the quiet
// period.
func survives(t *testing.T, obj client.Object, why string) {
	t.Helper()
	framework.Consistently(t, quiet, func() error {
		cur, ok := get(t, obj)
		if !ok || cur.GetUID() != obj.GetUID() {
			return fmt.Errorf("%s/%s was deleted", obj.GetNamespace(), obj.GetName())
		}
		return nil
	}, "%s/%s must survive: %s", obj.GetNamespace(), obj.GetName(), why)
}

func ownerUIDs(obj client.Object) []string {
	var out []string
	for _, r := range obj.GetOwnerReferences() {
		out = append(out, string(r.UID))
	}
	return out
}

// holdFinalizer keeps an object from disappearing after it is deleted, until
// the test releases it.
const holdFinalizer = "example.com/hold"

// deleteOpts deletes obj with raw DeleteOptions (for the deprecated
// orphanDependents field, say).
func deleteOpts(t *testing.T, obj client.Object, opts metav1.DeleteOptions) {
	t.Helper()
	if err := k8s.Delete(ctx(t), obj, &client.DeleteOptions{Raw: &opts}); err != nil {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// update applies mutate to the current state of obj and writes it, retrying
// on conflicts.
func update[T client.Object](t *testing.T, obj T, mutate func(T)) T {
	t.Helper()
	out, err := tryUpdate(t, obj, mutate)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryUpdate is update returning its error; it may run in any goroutine.
func tryUpdate[T client.Object](t *testing.T, obj T, mutate func(T)) (T, error) {
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		out = obj.DeepCopyObject().(T)
		err := k8s.Get(ctx(t), client.ObjectKeyFromObject(obj), out)
		if err != nil {
			return err
		}
		mutate(out)
		return k8s.Update(ctx(t), out)
	})
	if err != nil {
		return out, fmt.Errorf("updating %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return out, nil
}

// release removes the hold finalizer from obj, if it still exists.
func release(t *testing.T, obj client.Object) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, ok := get(t, obj)
		if !ok || cur.GetUID() != obj.GetUID() || !slices.Contains(cur.GetFinalizers(), holdFinalizer) {
			return nil
		}
		cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == holdFinalizer }))
		return k8s.Update(ctx(t), cur)
	})
	if err != nil {
		t.Fatalf("removing finalizer %s from %s/%s: %v", holdFinalizer, obj.GetNamespace(), obj.GetName(), err)
	}
}

// releaseOnCleanup releases held objects when the test ends, so that they do
// not linger whatever the outcome.
func releaseOnCleanup(t *testing.T, objs ...client.Object) {
	t.Cleanup(func() {
		for _, o := range objs {
			release(t, o)
		}
	})
}

// waitState waits until cond accepts the current state of obj (exists is
// false when it is gone or was replaced by another object of the same name).
func waitState[T client.Object](t *testing.T, obj T, cond func(cur T, exists bool) error, msg string, args ...any) {
	t.Helper()
	framework.Eventually(t, cascadeTimeout, func() error {
		cur, ok := get(t, obj)
		return cond(cur, ok && cur.GetUID() == obj.GetUID())
	}, msg, args...)
}

// deleting reports whether obj is being deleted and carries all the given
// finalizers, as an error describing what is missing.
func deleting(obj client.Object, exists bool, finalizers ...string) error {
	if !exists {
		return fmt.Errorf("%s/%s is gone", obj.GetNamespace(), obj.GetName())
	}
	if obj.GetDeletionTimestamp() == nil {
		return fmt.Errorf("%s/%s has no deletionTimestamp", obj.GetNamespace(), obj.GetName())
	}
	for _, f := range finalizers {
		if !slices.Contains(obj.GetFinalizers(), f) {
			return fmt.Errorf("%s/%s is being deleted but lacks finalizer %q (finalizers %v)", obj.GetNamespace(), obj.GetName(), f, obj.GetFinalizers())
		}
	}
	return nil
}

// waitDeleting waits until obj is being deleted and carries the finalizers.
func waitDeleting(t *testing.T, obj client.Object, why string, finalizers ...string) {
	t.Helper()
	waitState(t, obj, func(cur client.Object, exists bool) error {
		return deleting(cur, exists, finalizers...)
	}, "%s/%s should be being deleted with finalizers %v: %s", obj.GetNamespace(), obj.GetName(), finalizers, why)
}

// staysDeleting asserts that obj stays in the being-deleted state with the
// given finalizers for the quiet period.
func staysDeleting(t *testing.T, why string, finalizer string, objs ...client.Object) {
	t.Helper()
	framework.Consistently(t, quiet, func() error {
		for _, o := range objs {
			cur, ok := get(t, o)
			if err := deleting(cur, ok && cur.GetUID() == o.GetUID(), finalizer); err != nil {
				return err
			}
		}
		return nil
	}, "objects must stay being deleted with finalizer %q: %s", finalizer, why)
}

// waitObserved waits until ownergc's graph has observed obj through its
// informer, so that what the test does next is seen after it.
func waitObserved(t *testing.T, obj client.Object) {
	t.Helper()
	framework.Eventually(t, cascadeTimeout, func() error {
		if !manager.Engine.Graph().Owner(obj.GetUID()).Observed {
			return fmt.Errorf("not observed yet")
		}
		return nil
	}, "ownergc should observe %s/%s", obj.GetNamespace(), obj.GetName())
}

// waitOwners waits until obj exists with exactly the owner references (by
// UID, in order) given.
func waitOwners(t *testing.T, obj client.Object, why string, owners ...client.Object) {
	t.Helper()
	want := []string{}
	for _, o := range owners {
		want = append(want, string(o.GetUID()))
	}
	waitState(t, obj, func(cur client.Object, exists bool) error {
		if !exists {
			return fmt.Errorf("%s/%s was deleted", obj.GetNamespace(), obj.GetName())
		}
		if cur.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s/%s is being deleted", obj.GetNamespace(), obj.GetName())
		}
		got := ownerUIDs(cur)
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("owner references of %s/%s are %v, want %v", obj.GetNamespace(), obj.GetName(), got, want)
		}
		return nil
	}, "%s/%s should keep exactly the owners %v: %s", obj.GetNamespace(), obj.GetName(), want, why)
}

// goneOrder polls objs, given in the order they are expected to disappear,
// until all are gone and returns, for each, the index of the poll at which it
// was first seen gone. Each poll reads the objects in reverse order, so that
// objs[i] seen gone at an earlier poll than objs[j] (i > j) proves objs[i]
// disappeared first.
func goneOrder(t *testing.T, objs ...client.Object) []int {
	t.Helper()
	seen := make([]int, len(objs))
	for i := range seen {
		seen[i] = -1
	}
	deadline := time.Now().Add(cascadeTimeout)
	for tick := 0; ; tick++ {
		remaining := 0
		for i := len(objs) - 1; i >= 0; i-- {
			o := objs[i]
			if seen[i] >= 0 {
				continue
			}
			if cur, ok := get(t, o); !ok || cur.GetUID() != o.GetUID() {
				seen[i] = tick
			} else {
				remaining++
			}
		}
		if remaining == 0 {
			return seen
		}
		if time.Now().After(deadline) {
			var left []string
			for i, o := range objs {
				if seen[i] < 0 {
					left = append(left, o.GetName())
				}
			}
			t.Fatalf("objects %v still exist after %s (first seen gone at polls %v)", left, cascadeTimeout, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitEvent waits for an event about the object with the given UID, with the
// given type and reason, in namespace ns, and returns it.
func waitEvent(t *testing.T, ns string, uid types.UID, eventType, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	framework.Eventually(t, cascadeTimeout, func() error {
		list, err := clientset.EventsV1().Events(ns).List(ctx(t), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var others []string
		for _, e := range list.Items {
			if e.Regarding.UID != uid {
				continue
			}
			if e.Type == eventType && e.Reason == reason {
				found = e
				return nil
			}
			others = append(others, e.Type+"/"+e.Reason)
		}
		return fmt.Errorf("no %s %s event about uid %s in namespace %q (other events about it: %v)", eventType, reason, uid, ns, others)
	}, "a %s event with reason %s should be recorded", eventType, reason)
	return found
}

// surviveAll asserts that every object keeps existing (with the same UID) and
// is not being deleted, for the quiet period.
func surviveAll(t *testing.T, why string, objs ...client.Object) {
	t.Helper()
	framework.Consistently(t, quiet, func() error {
		for _, o := range objs {
			cur, ok := get(t, o)
			if !ok || cur.GetUID() != o.GetUID() {
				return fmt.Errorf("%s/%s was deleted", o.GetNamespace(), o.GetName())
			}
			if cur.GetDeletionTimestamp() != nil {
				return fmt.Errorf("%s/%s is being deleted", o.GetNamespace(), o.GetName())
			}
		}
		return nil
	}, "objects must survive: %s", why)
}

// waitDependentInGraph waits until ownergc's graph links dependent to owner
// (with a blocking reference when blocking is set), so that what the test
// does next is seen after that link.
func waitDependentInGraph(t *testing.T, owner, dependent client.Object, blocking bool) {
	t.Helper()
	framework.Eventually(t, cascadeTimeout, func() error {
		n := manager.Engine.Graph().Node(owner.GetUID())
		if n == nil {
			return fmt.Errorf("owner not in the graph")
		}
		for _, d := range manager.Engine.Graph().Dependents(n, blocking) {
			if d.Identity.UID == dependent.GetUID() {
				return nil
			}
		}
		return fmt.Errorf("dependent not linked (blocking=%v) yet", blocking)
	}, "ownergc's graph should link %s as a dependent of %s", dependent.GetName(), owner.GetName())
}
