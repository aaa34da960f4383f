package crd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/ownergc/ownergc/test/framework"
)

const (
	// cascadeTimeout bounds how long a cascade the collector must perform
	// may take; generous for a busy 2-core machine.
	cascadeTimeout = 30 * time.Second
	// crdTimeout bounds how long the API server takes to establish or
	// remove a CustomResourceDefinition.
	crdTimeout = 30 * time.Second
	// quiet is how long an object must survive to show the collector left
	// it alone, after the event that would have made it act was processed.
	quiet = 3 * time.Second
	// holdFinalizer is a finalizer nobody removes but the test: it keeps an
	// object in the being-deleted state.
	holdFinalizer = "ownergc.test/hold"
)

var configMaps = kind{
	gvr:  schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
	kind: "ConfigMap", namespaced: true,
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// kind is a resource the tests create objects of.
type kind struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

func (k kind) apiVersion() string { return k.gvr.GroupVersion().String() }

// object is an object a test created.
type object struct {
	kind
	namespace, name string
	uid             types.UID
}

func (o object) String() string {
	if o.namespace == "" {
		return fmt.Sprintf("%s %s", o.kind.kind, o.name)
	}
	return fmt.Sprintf("%s %s/%s", o.kind.kind, o.namespace, o.name)
}

// ref builds an owner reference to o.
func (o object) ref(block bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: o.apiVersion(), Kind: o.kind.kind,
		Name: o.name, UID: o.uid, BlockOwnerDeletion: &block,
	}
}

func (o object) client() dynamic.ResourceInterface {
	if o.namespaced {
		return dyn.Resource(o.gvr).Namespace(o.namespace)
	}
	return dyn.Resource(o.gvr)
}

// create creates an object of kind k with the given owner references and
// finalizers. ns is ignored for cluster-scoped kinds.
func create(t *testing.T, k kind, ns, name string, refs []metav1.OwnerReference, finalizers ...string) object {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(k.apiVersion())
	u.SetKind(k.kind)
	u.SetName(name)
	if !k.namespaced {
		ns = ""
	}
	u.SetNamespace(ns)
	u.SetOwnerReferences(refs)
	u.SetFinalizers(finalizers)
	if k.gvr.Group != "" {
		u.Object["spec"] = map[string]any{"note": "created by " + t.Name()}
	}
	o := object{kind: k, namespace: ns, name: name}
	// A kind that was just established may take a moment to be served by
	// every handler of the API server: retry while the resource is not
	// found, fail at once on any other error.
	var created *unstructured.Unstructured
	var failed error
	framework.Eventually(t, crdTimeout, func() error {
		var err error
		created, err = o.client().Create(ctx(t), u, metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			failed = err
			return nil
		}
		return err
	}, "creating %s", o)
	if failed != nil {
		t.Fatalf("creating %s: %v", o, failed)
	}
	o.uid = created.GetUID()
	return o
}

// get reads the current state of o; false when it does not exist (or was
// replaced by another object of the same name).
func get(t *testing.T, o object) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := o.client().Get(ctx(t), o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("reading %s: %v", o, err)
	}
	if u.GetUID() != o.uid {
		return nil, false
	}
	return u, true
}

// deleteWith deletes o with a propagation policy.
func deleteWith(t *testing.T, o object, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := o.client().Delete(ctx(t), o.name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatalf("deleting %s: %v", o, err)
	}
}

// removeFinalizer removes a finalizer from o with a JSON merge patch.
func removeFinalizer(t *testing.T, o object, finalizer string) {
	t.Helper()
	cur, ok := get(t, o)
	if !ok {
		t.Fatalf("%s is gone, cannot remove its finalizer %s", o, finalizer)
	}
	rest := slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == finalizer })
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": rest, "resourceVersion": cur.GetResourceVersion(),
	}})
	if _, err := o.client().Patch(ctx(t), o.name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing finalizer %s from %s: %v", finalizer, o, err)
	}
}

// waitGone waits until o no longer exists and returns when it noticed.
func waitGone(t *testing.T, o object, timeout time.Duration, why string) time.Time {
	t.Helper()
	err := framework.Poll(timeout, func() error {
		if _, ok := get(t, o); ok {
			return fmt.Errorf("%s still exists", o)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s should be deleted: %s: %v\n%s", o, why, err, diagnose(o))
	}
	return time.Now()
}

// diagnose describes what ownergc knows of o's kind, for failure messages.
func diagnose(o object) string {
	gk := schema.GroupKind{Group: o.gvr.Group, Kind: o.kind.kind}
	ks := manager.Engine.KindState(gk)
	watched, synced := ks.Watched, ks.Synced
	st := manager.Engine.Status()
	toDelete, toOrphan := st.AttemptToDelete, st.AttemptToOrphan
	var failed []string
	for _, f := range st.Failed {
		failed = append(failed, fmt.Sprintf("%s/%s/%s: %s", f.Group, f.Version, f.Resource, f.Message))
	}
	discovered := "no discovery snapshot"
	if snap := manager.Engine.Discovered(); snap != nil {
		r, ok := snap.ResourceFor(o.gvr.GroupVersion().WithKind(o.kind.kind))
		discovered = fmt.Sprintf("latest discovery (%s ago): served=%t %+v", time.Since(snap.Time).Round(time.Millisecond), ok, r)
	}
	return fmt.Sprintf("ownergc: kind %s watched=%t synced=%t nodes=%d; %s; monitors=%d synced=%t syncing=%v failed=%v; queues: attemptToDelete=%d attemptToOrphan=%d",
		gk, watched, synced, manager.Engine.Graph().KindLen(gk), discovered, st.Monitored, st.Synced, st.Syncing, failed, toDelete, toOrphan)
}

// survive asserts that every object keeps existing for the quiet period.
func survive(t *testing.T, why string, objs ...object) {
	t.Helper()
	framework.Consistently(t, quiet, func() error {
		for _, o := range objs {
			if _, ok := get(t, o); !ok {
				return fmt.Errorf("%s was deleted", o)
			}
		}
		return nil
	}, "objects must survive: %s", why)
}

func ownerUIDs(u *unstructured.Unstructured) []types.UID {
	var out []types.UID
	for _, r := range u.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}

// waitOwners waits until o exists with exactly the owner references to the
// given UIDs, in order.
func waitOwners(t *testing.T, o object, why string, want ...types.UID) {
	t.Helper()
	framework.Eventually(t, cascadeTimeout, func() error {
		cur, ok := get(t, o)
		if !ok {
			return fmt.Errorf("%s was deleted", o)
		}
		if got := ownerUIDs(cur); !slices.Equal(got, want) {
			return fmt.Errorf("%s has owners %v, want %v", o, got, want)
		}
		return nil
	}, "%s: %s", o, why)
}

// CustomResourceDefinitions.

// uniqueGroup returns a fresh API group, so that a test can run again
// (-count) against the same control plane.
func uniqueGroup(prefix string) string {
	return prefix + "-" + utilrand.String(5) + ".crd.ownergc.test"
}

// crdSpec describes a one-version (v1) CRD whose schema keeps unknown fields.
type crdSpec struct {
	group, kind, plural string
	scope               apiextensionsv1.ResourceScope
}

func (s crdSpec) name() string { return s.plural + "." + s.group }

func (s crdSpec) resource() kind {
	return kind{
		gvr:        schema.GroupVersionResource{Group: s.group, Version: "v1", Resource: s.plural},
		kind:       s.kind,
		namespaced: s.scope == apiextensionsv1.NamespaceScoped,
	}
}

// createCRD creates the CRD and waits until it is Established; it returns
// the resource and the time the test saw it Established.
func createCRD(t *testing.T, s crdSpec) (kind, time.Time) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: s.name()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: s.group,
			Scope: s.scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: s.plural, Singular: strings.ToLower(s.kind), Kind: s.kind, ListKind: s.kind + "List",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	if _, err := apix.ApiextensionsV1().CustomResourceDefinitions().Create(ctx(t), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", s.name(), err)
	}
	var established time.Time
	framework.Eventually(t, crdTimeout, func() error {
		cur, err := apix.ApiextensionsV1().CustomResourceDefinitions().Get(ctx(t), s.name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = time.Now()
				return nil
			}
		}
		return fmt.Errorf("CRD %s is not Established: %+v", s.name(), cur.Status.Conditions)
	}, "CRD %s should become Established", s.name())
	return s.resource(), established
}

// deleteCRD deletes the CRD and waits until it is gone (the API server
// deletes its custom resources first).
func deleteCRD(t *testing.T, s crdSpec) {
	t.Helper()
	if err := apix.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx(t), s.name(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting CRD %s: %v", s.name(), err)
	}
	framework.Eventually(t, crdTimeout, func() error {
		_, err := apix.ApiextensionsV1().CustomResourceDefinitions().Get(ctx(t), s.name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("CRD %s still exists", s.name())
	}, "CRD %s should be deleted", s.name())
}

// Deletion order.

// deletionLog records, in the API server's order, the names of the objects
// of one resource (and namespace) deleted while it watches.
type deletionLog struct {
	mu      sync.Mutex
	deleted []string
}

// watchDeletions starts watching a resource in a namespace ("" for a
// cluster-scoped resource, or every namespace) and records every deletion
// until the test ends.
func watchDeletions(t *testing.T, k kind, ns string) *deletionLog {
	t.Helper()
	var ri dynamic.ResourceInterface = dyn.Resource(k.gvr)
	if k.namespaced && ns != "" {
		ri = dyn.Resource(k.gvr).Namespace(ns)
	}
	list, err := ri.List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing %s: %v", k.gvr, err)
	}
	w, err := ri.Watch(ctx(t), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watching %s: %v", k.gvr, err)
	}
	t.Cleanup(w.Stop)
	l := &deletionLog{}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Deleted {
				continue
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				l.mu.Lock()
				l.deleted = append(l.deleted, u.GetName())
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// names returns the names deleted so far, in order.
func (l *deletionLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.deleted)
}

// assertDeletedBefore waits until the log holds every name of first and
// last, and checks that every name of first was deleted before last.
func (l *deletionLog) assertDeletedBefore(t *testing.T, first []object, last object) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func() error {
		got := l.names()
		for _, o := range append(slices.Clone(first), last) {
			if !slices.Contains(got, o.name) {
				return fmt.Errorf("the watch has not seen %s deleted yet (deletions so far: %v)", o, got)
			}
		}
		return nil
	}, "every deletion should be seen by the watch")
	got := l.names()
	at := slices.Index(got, last.name)
	for _, o := range first {
		if i := slices.Index(got, o.name); i > at {
			t.Errorf("%s was deleted after %s; deletion order: %v", o, last, got)
		}
	}
}

func hasFinalizer(finalizers []string, f string) bool { return slices.Contains(finalizers, f) }

func errGone(o object) error { return fmt.Errorf("%s is gone", o) }

func errNotDeleting(o object) error { return fmt.Errorf("%s has no deletionTimestamp", o) }

func errNoForegroundFinalizer(o object, finalizers []string) error {
	return fmt.Errorf("%s has finalizers %v, without %s", o, finalizers, metav1.FinalizerDeleteDependents)
}

// labelCRD sets a label on the CRD.
func labelCRD(t *testing.T, s crdSpec, key, value string) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}})
	if _, err := apix.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx(t), s.name(), types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling CRD %s: %v", s.name(), err)
	}
}
