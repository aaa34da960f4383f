package collector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

const (
	// cascadeTimeout bounds how long a cascade the collector must perform
	// may take; generous for a busy 2-core machine.
	cascadeTimeout = 30 * time.Second
	// quiet is how long an object must survive to show the collector left
	// it alone, after the event that would have made it act was processed.
	quiet = 3 * time.Second
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

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
