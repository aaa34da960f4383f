package restart_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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

// startManager starts an in-process manager; the returned stop stops it
// (once: later calls do nothing) and runs when the test ends.
func startManager(t *testing.T, o framework.ManagerOptions) (*framework.Manager, func()) {
	t.Helper()
	m, err := framework.StartManager(cfg, o)
	if err != nil {
		t.Fatalf("starting ownergc: %v", err)
	}
	stop := sync.OnceFunc(m.Stop)
	t.Cleanup(stop)
	return m, stop
}

// ref builds an owner reference to obj.
func ref(obj client.Object, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: configMapGVK.GroupVersion().String(), Kind: configMapGVK.Kind,
		Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: &block,
	}
}

func owned(owners ...metav1.OwnerReference) []metav1.OwnerReference { return owners }

// configMap creates a ConfigMap with the given owner references and labels.
func configMap(t *testing.T, ns, name string, refs []metav1.OwnerReference, labels map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs, Labels: labels}}
	if err := k8s.Create(ctx(t), cm); err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

// configMaps creates n ConfigMaps named prefix-<i>, a few at a time.
func configMaps(t *testing.T, ns, prefix string, n int, refs []metav1.OwnerReference, labels map[string]string) []*corev1.ConfigMap {
	t.Helper()
	out := make([]*corev1.ConfigMap, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i), OwnerReferences: refs, Labels: labels,
			}}
			errs[i] = k8s.Create(ctx(t), cm)
			out[i] = cm
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creating ConfigMap %s/%s-%d: %v", ns, prefix, i, err)
		}
	}
	return out
}

// deleteWith deletes obj with a propagation policy.
func deleteWith(t *testing.T, obj client.Object, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := k8s.Delete(ctx(t), obj, client.PropagationPolicy(policy)); err != nil {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// get reads the current state of obj; false when it does not exist (or was
// replaced by another object of the same name).
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
	return out, out.GetUID() == obj.GetUID()
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, obj client.Object, why string) {
	t.Helper()
	framework.Eventually(t, cascadeTimeout, func() error {
		if _, ok := get(t, obj); ok {
			return fmt.Errorf("%s/%s still exists", obj.GetNamespace(), obj.GetName())
		}
		return nil
	}, "%s/%s should be deleted: %s", obj.GetNamespace(), obj.GetName(), why)
}

// mustExist fails the test unless every object exists.
func mustExist[T client.Object](t *testing.T, why string, objs ...T) {
	t.Helper()
	for _, o := range objs {
		if _, ok := get(t, o); !ok {
			t.Fatalf("%s/%s was deleted: %s", o.GetNamespace(), o.GetName(), why)
		}
	}
}

// survive asserts that every object keeps existing for the quiet period.
func survive[T client.Object](t *testing.T, why string, objs ...T) {
	t.Helper()
	framework.Consistently(t, quiet, func() error {
		for _, o := range objs {
			if _, ok := get(t, o); !ok {
				return fmt.Errorf("%s/%s was deleted", o.GetNamespace(), o.GetName())
			}
		}
		return nil
	}, "objects must survive: %s", why)
}

func ownerUIDs(obj client.Object) []types.UID {
	var out []types.UID
	for _, r := range obj.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}

// beingDeletedWith fails the test unless obj exists, is being deleted and
// carries finalizer.
func beingDeletedWith(t *testing.T, obj client.Object, finalizer string) {
	t.Helper()
	cur, ok := get(t, obj)
	switch {
	case !ok:
		t.Fatalf("%s/%s is gone, want it being deleted with the %s finalizer", obj.GetNamespace(), obj.GetName(), finalizer)
	case cur.GetDeletionTimestamp() == nil:
		t.Fatalf("%s/%s has no deletionTimestamp", obj.GetNamespace(), obj.GetName())
	case !slices.Contains(cur.GetFinalizers(), finalizer):
		t.Fatalf("%s/%s has finalizers %v, want %s", obj.GetNamespace(), obj.GetName(), cur.GetFinalizers(), finalizer)
	}
}

// countConfigMaps returns the number of ConfigMaps in ns matching labels.
func countConfigMaps(t *testing.T, ns string, labels map[string]string) int {
	t.Helper()
	var list corev1.ConfigMapList
	if err := k8s.List(ctx(t), &list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatalf("listing ConfigMaps in %s: %v", ns, err)
	}
	return len(list.Items)
}

// deletionLog records, in the API server's order, the names of the
// ConfigMaps of a namespace deleted while it watches.
type deletionLog struct {
	mu      sync.Mutex
	deleted []string
}

// watchDeletions starts watching the ConfigMaps of ns and records every
// deletion until the test ends.
func watchDeletions(t *testing.T, ns string) *deletionLog {
	t.Helper()
	ri := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	list, err := ri.List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing ConfigMaps in %s: %v", ns, err)
	}
	w, err := ri.Watch(ctx(t), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watching ConfigMaps in %s: %v", ns, err)
	}
	t.Cleanup(w.Stop)
	l := &deletionLog{}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Deleted {
				continue
			}
			if o, ok := ev.Object.(metav1.Object); ok {
				l.mu.Lock()
				l.deleted = append(l.deleted, o.GetName())
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *deletionLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.deleted)
}

// assertDeletedBefore waits until the log holds every name of first and
// last, and checks that every one of first was deleted before last.
func assertDeletedBefore[T client.Object](t *testing.T, l *deletionLog, first []T, last T) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func() error {
		got := l.names()
		for _, o := range append(slices.Clone(first), last) {
			if !slices.Contains(got, o.GetName()) {
				return fmt.Errorf("the watch has not seen %s deleted yet (deletions so far: %v)", o.GetName(), got)
			}
		}
		return nil
	}, "every deletion should be seen by the watch")
	got := l.names()
	at := slices.Index(got, last.GetName())
	for _, o := range first {
		if i := slices.Index(got, o.GetName()); i > at {
			t.Errorf("%s was deleted after %s; deletion order: %v", o.GetName(), last.GetName(), got)
		}
	}
}
