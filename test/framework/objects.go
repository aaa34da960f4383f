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

package framework

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Kind is a resource tests create objects of, at one version.
type Kind struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// ConfigMaps is the kind most tests use for owners and dependents.
var ConfigMaps = Kind{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// Secrets is the kind tests use for owners of another kind than ConfigMap.
var Secrets = Kind{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}

// APIVersion returns the kind's group/version.
func (k Kind) APIVersion() string { return k.GVR.GroupVersion().String() }

// GroupKind returns the kind's group and kind.
func (k Kind) GroupKind() schema.GroupKind { return schema.GroupKind{Group: k.GVR.Group, Kind: k.Kind} }

// At returns the kind at another version.
func (k Kind) At(version string) Kind {
	k.GVR.Version = version
	return k
}

// Object is an object a test created.
type Object struct {
	Kind
	Namespace, Name string
	UID             types.UID
}

func (o Object) String() string {
	if o.Namespace == "" {
		return fmt.Sprintf("%s %s", o.Kind.Kind, o.Name)
	}
	return fmt.Sprintf("%s %s/%s", o.Kind.Kind, o.Namespace, o.Name)
}

// Ref returns an owner reference to o.
func (o Object) Ref(block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: o.APIVersion(), Kind: o.Kind.Kind, Name: o.Name, UID: o.UID, BlockOwnerDeletion: &block}
}

// Names returns the names of the objects, in order.
func Names(objs ...Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Name
	}
	return out
}

// Option modifies an object before it is created.
type Option func(*unstructured.Unstructured)

// OwnedBy adds owner references.
func OwnedBy(refs ...metav1.OwnerReference) Option {
	return func(u *unstructured.Unstructured) {
		u.SetOwnerReferences(append(u.GetOwnerReferences(), refs...))
	}
}

// WithFinalizers adds finalizers.
func WithFinalizers(finalizers ...string) Option {
	return func(u *unstructured.Unstructured) { u.SetFinalizers(append(u.GetFinalizers(), finalizers...)) }
}

// Protected annotates the object ownergc.io/protected: "true".
func Protected(u *unstructured.Unstructured) {
	u.SetAnnotations(map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"})
}

// WithLabels adds labels.
func WithLabels(labels map[string]string) Option {
	return func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		u.SetLabels(l)
	}
}

// HoldFinalizer is a finalizer nobody removes but the test: it keeps an
// object in the being-deleted state.
const HoldFinalizer = "ownergc.test/hold"

// resource returns the dynamic client for o's resource and namespace.
func (cp *ControlPlane) resource(k Kind, namespace string) dynamic.ResourceInterface {
	if k.Namespaced {
		return cp.Dynamic.Resource(k.GVR).Namespace(namespace)
	}
	return cp.Dynamic.Resource(k.GVR)
}

// Create creates an object of kind k (ns is ignored for cluster-scoped
// kinds). A kind that was just established may take a moment to be served
// by every handler of the API server: Create retries while the resource is
// not found, and fails the test at once on any other error.
func (cp *ControlPlane) Create(t testing.TB, k Kind, ns, name string, opts ...Option) Object {
	t.Helper()
	if !k.Namespaced {
		ns = ""
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(k.APIVersion())
	u.SetKind(k.Kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if k.GVR.Group != "" {
		u.Object["spec"] = map[string]any{"note": "created by " + t.Name()}
	}
	for _, f := range opts {
		f(u)
	}
	o := Object{Kind: k, Namespace: ns, Name: name}
	var created *unstructured.Unstructured
	var failed error
	Eventually(t, CRDTimeout, func() error {
		var err error
		created, err = cp.resource(k, ns).Create(Context(t), u, metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			failed = err
			return nil
		}
		return err
	}, "creating %s", o)
	if failed != nil {
		t.Fatalf("creating %s: %v", o, failed)
	}
	o.UID = created.GetUID()
	return o
}

// CreateMany creates n objects named prefix-<i>, a few at a time.
func (cp *ControlPlane) CreateMany(t testing.TB, k Kind, ns, prefix string, n int, opts ...Option) []Object {
	t.Helper()
	out := make([]Object, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(k.APIVersion())
			u.SetKind(k.Kind)
			if k.Namespaced {
				u.SetNamespace(ns)
			}
			u.SetName(fmt.Sprintf("%s-%d", prefix, i))
			for _, f := range opts {
				f(u)
			}
			created, err := cp.resource(k, ns).Create(Context(t), u, metav1.CreateOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = Object{Kind: k, Namespace: created.GetNamespace(), Name: created.GetName(), UID: created.GetUID()}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creating %s %s-%d: %v", k.Kind, prefix, i, err)
		}
	}
	return out
}

// Get reads the current state of o; false when it does not exist (or was
// replaced by another object of the same name).
func (cp *ControlPlane) Get(t testing.TB, o Object) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := cp.resource(o.Kind, o.Namespace).Get(Context(t), o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("reading %s: %v", o, err)
	}
	if u.GetUID() != o.UID {
		return nil, false
	}
	return u, true
}

// Delete deletes o with no options (the kind's default propagation).
func (cp *ControlPlane) Delete(t testing.TB, o Object) {
	t.Helper()
	cp.DeleteWithOptions(t, o, metav1.DeleteOptions{})
}

// DeleteWith deletes o with a propagation policy.
func (cp *ControlPlane) DeleteWith(t testing.TB, o Object, policy metav1.DeletionPropagation) {
	t.Helper()
	cp.DeleteWithOptions(t, o, metav1.DeleteOptions{PropagationPolicy: &policy})
}

// DeleteWithOptions deletes o with raw options (the deprecated
// orphanDependents field, say).
func (cp *ControlPlane) DeleteWithOptions(t testing.TB, o Object, opts metav1.DeleteOptions) {
	t.Helper()
	if err := cp.resource(o.Kind, o.Namespace).Delete(Context(t), o.Name, opts); err != nil {
		t.Fatalf("deleting %s: %v", o, err)
	}
}

// DeleteOnCleanup deletes the objects, if they still exist, when the test
// ends: for cluster-scoped objects, which outlive the test's namespace.
func (cp *ControlPlane) DeleteOnCleanup(t testing.TB, objs ...Object) {
	t.Cleanup(func() {
		for _, o := range objs {
			err := cp.resource(o.Kind, o.Namespace).Delete(Context(t), o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &o.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				t.Errorf("deleting %s: %v", o, err)
			}
		}
	})
}

// Update applies mutate to the current state of o and writes it, retrying
// on conflicts, and returns what was written.
func (cp *ControlPlane) Update(t testing.TB, o Object, mutate func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	out, err := cp.TryUpdate(t, o, mutate)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryUpdate is Update returning its error: it may run in any goroutine.
func (cp *ControlPlane) TryUpdate(t testing.TB, o Object, mutate func(*unstructured.Unstructured)) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cp.resource(o.Kind, o.Namespace).Get(Context(t), o.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.GetUID() != o.UID {
			return fmt.Errorf("%s was replaced by another object of the same name", o)
		}
		mutate(cur)
		out, err = cp.resource(o.Kind, o.Namespace).Update(Context(t), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating %s: %w", o, err)
	}
	return out, nil
}

// RemoveFinalizer removes a finalizer from o, retrying on conflicts; it
// fails the test when o is gone.
func (cp *ControlPlane) RemoveFinalizer(t testing.TB, o Object, finalizer string) {
	t.Helper()
	found, err := cp.removeFinalizer(t, o, finalizer)
	switch {
	case err != nil:
		t.Fatalf("removing finalizer %s from %s: %v", finalizer, o, err)
	case !found:
		t.Fatalf("%s is gone, cannot remove its finalizer %s", o, finalizer)
	}
}

// ReleaseOnCleanup removes a finalizer (HoldFinalizer, say) from the objects
// that still exist when the test ends, so that they do not linger whatever
// the outcome.
func (cp *ControlPlane) ReleaseOnCleanup(t testing.TB, finalizer string, objs ...Object) {
	t.Cleanup(func() {
		for _, o := range objs {
			if _, err := cp.removeFinalizer(t, o, finalizer); err != nil {
				t.Errorf("removing finalizer %s from %s: %v", finalizer, o, err)
			}
		}
	})
}

// CreateHeld creates an object held by HoldFinalizer (its deletion waits
// until the test releases it), released when the test ends if it was not.
func (cp *ControlPlane) CreateHeld(t testing.TB, k Kind, ns, name string, opts ...Option) Object {
	t.Helper()
	o := cp.Create(t, k, ns, name, append(opts, WithFinalizers(HoldFinalizer))...)
	cp.ReleaseOnCleanup(t, HoldFinalizer, o)
	return o
}

// WaitHeldDeleting waits until o, held by HoldFinalizer, is being deleted;
// it fails the test at once if o is gone (its finalizer was never removed,
// so something else removed it).
func (cp *ControlPlane) WaitHeldDeleting(t testing.TB, o Object, why string) {
	t.Helper()
	cp.MustExist(t, "the held dependent is gone although its hold finalizer was never removed", o)
	cp.WaitDeleting(t, o, HoldFinalizer, why)
}

// Release removes HoldFinalizer from o and waits until o is gone.
func (cp *ControlPlane) Release(t testing.TB, o Object) {
	t.Helper()
	cp.RemoveFinalizer(t, o, HoldFinalizer)
	cp.WaitGone(t, "its hold finalizer was removed", o)
}

// removeFinalizer removes finalizer from o with a JSON merge patch at o's
// current resourceVersion, again on conflicts; found is false when o is
// gone.
func (cp *ControlPlane) removeFinalizer(t testing.TB, o Object, finalizer string) (found bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, ok := cp.Get(t, o)
		if found = ok; !ok || !slices.Contains(cur.GetFinalizers(), finalizer) {
			return nil
		}
		rest := slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == finalizer })
		data, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": rest, "resourceVersion": cur.GetResourceVersion(),
		}})
		_, err := cp.resource(o.Kind, o.Namespace).Patch(Context(t), o.Name, types.MergePatchType, data, metav1.PatchOptions{})
		return err
	})
	return found, err
}

// WaitGone waits until every object no longer exists (each for up to
// CascadeTimeout), and fails the test with why and the running manager's
// diagnosis otherwise.
func (cp *ControlPlane) WaitGone(t testing.TB, why string, objs ...Object) {
	t.Helper()
	cp.WaitGoneWithin(t, CascadeTimeout, why, objs...)
}

// WaitGoneWithin is WaitGone with another timeout; it returns when it saw
// the last object gone.
func (cp *ControlPlane) WaitGoneWithin(t testing.TB, timeout time.Duration, why string, objs ...Object) time.Time {
	t.Helper()
	for _, o := range objs {
		err := Poll(timeout, func() error {
			if _, ok := cp.Get(t, o); ok {
				return fmt.Errorf("%s still exists", o)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s should be deleted: %s: %v%s", o, why, err, cp.diagnose(o))
		}
	}
	return time.Now()
}

// Survive asserts that every object keeps existing for the quiet period.
func (cp *ControlPlane) Survive(t testing.TB, why string, objs ...Object) {
	t.Helper()
	Consistently(t, Quiet, func() error {
		return cp.allExist(t, objs, false)
	}, "objects must survive: %s", why)
}

// SurviveIntact asserts that every object keeps existing, and is not being
// deleted, for the quiet period.
func (cp *ControlPlane) SurviveIntact(t testing.TB, why string, objs ...Object) {
	t.Helper()
	Consistently(t, Quiet, func() error {
		return cp.allExist(t, objs, true)
	}, "objects must survive: %s", why)
}

// MustExist fails the test unless every object exists now.
func (cp *ControlPlane) MustExist(t testing.TB, why string, objs ...Object) {
	t.Helper()
	if err := cp.allExist(t, objs, false); err != nil {
		t.Fatalf("%v: %s", err, why)
	}
}

// allExist reports the first object that does not exist (or, with intact,
// is being deleted).
func (cp *ControlPlane) allExist(t testing.TB, objs []Object, intact bool) error {
	for _, o := range objs {
		cur, ok := cp.Get(t, o)
		if !ok {
			return fmt.Errorf("%s was deleted", o)
		}
		if intact && cur.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s is being deleted", o)
		}
	}
	return nil
}

// OwnerUIDs returns the UIDs of u's owner references, in order.
func OwnerUIDs(u *unstructured.Unstructured) []types.UID {
	var out []types.UID
	for _, r := range u.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}

// WaitOwners waits until o exists, not being deleted, with exactly the
// owner references to the given UIDs, in order.
func (cp *ControlPlane) WaitOwners(t testing.TB, o Object, why string, want ...types.UID) {
	t.Helper()
	Eventually(t, CascadeTimeout, func() error {
		cur, ok := cp.Get(t, o)
		switch {
		case !ok:
			return fmt.Errorf("%s was deleted", o)
		case cur.GetDeletionTimestamp() != nil:
			return fmt.Errorf("%s is being deleted", o)
		}
		if got := OwnerUIDs(cur); !slices.Equal(got, want) {
			return fmt.Errorf("%s has owners %v, want %v", o, got, want)
		}
		return nil
	}, "%s should keep exactly the owners %v: %s", o, want, why)
}

// WaitDeleting waits until o exists, being deleted, with finalizer.
func (cp *ControlPlane) WaitDeleting(t testing.TB, o Object, finalizer, why string) {
	t.Helper()
	Eventually(t, CascadeTimeout, func() error {
		return cp.deletingWith(t, o, finalizer)
	}, "%s should be being deleted with %s: %s", o, finalizer, why)
}

// StayDeleting asserts that every object stays being deleted, with
// finalizer, for the quiet period.
func (cp *ControlPlane) StayDeleting(t testing.TB, why, finalizer string, objs ...Object) {
	t.Helper()
	Consistently(t, Quiet, func() error {
		for _, o := range objs {
			if err := cp.deletingWith(t, o, finalizer); err != nil {
				return err
			}
		}
		return nil
	}, "objects must stay being deleted with %s: %s", finalizer, why)
}

// MustBeDeleting fails the test unless o exists now, being deleted, with
// finalizer.
func (cp *ControlPlane) MustBeDeleting(t testing.TB, o Object, finalizer string) {
	t.Helper()
	if err := cp.deletingWith(t, o, finalizer); err != nil {
		t.Fatal(err)
	}
}

// deletingWith reports, as an error, what keeps o from being an existing
// object being deleted with finalizer.
func (cp *ControlPlane) deletingWith(t testing.TB, o Object, finalizer string) error {
	cur, ok := cp.Get(t, o)
	switch {
	case !ok:
		return fmt.Errorf("%s is gone", o)
	case cur.GetDeletionTimestamp() == nil:
		return fmt.Errorf("%s has no deletionTimestamp", o)
	case !slices.Contains(cur.GetFinalizers(), finalizer):
		return fmt.Errorf("%s has finalizers %v, without %s", o, cur.GetFinalizers(), finalizer)
	}
	return nil
}

// Count returns the number of objects of kind k in ns with the labels.
func (cp *ControlPlane) Count(t testing.TB, k Kind, ns string, labels string) int {
	t.Helper()
	list, err := cp.resource(k, ns).List(Context(t), metav1.ListOptions{LabelSelector: labels})
	if err != nil {
		t.Fatalf("listing %s in %s: %v", k.GVR, ns, err)
	}
	return len(list.Items)
}

// CountDependents returns the number of objects of kind k in ns that have
// an owner reference.
func (cp *ControlPlane) CountDependents(t testing.TB, k Kind, ns string) int {
	t.Helper()
	list, err := cp.resource(k, ns).List(Context(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing %s in %s: %v", k.GVR, ns, err)
	}
	n := 0
	for _, u := range list.Items {
		if len(u.GetOwnerReferences()) > 0 {
			n++
		}
	}
	return n
}
