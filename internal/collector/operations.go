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

package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
)

// The collector reads, deletes and patches objects of every resource, as the
// collector in kube-controller-manager does, and records events about them.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// errConflict: a precondition of a write failed; the caller looks again.
var errConflict = errors.New("precondition failed")

// errIgnored: the object's resource is ignored by the policy; the collector
// never writes to it.
var errIgnored = errors.New("resource is ignored")

// isGone reports whether err says that the object requested does not exist:
// a NotFound status from the API server. A 404 that is not a status (the
// path is not served: a version the API server stopped serving a moment
// ago, while discovery still lists it) says nothing about the object, and
// is never taken for its absence.
func isGone(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == metav1.CauseTypeUnexpectedServerResponse {
				return false
			}
		}
	}
	return true
}

// resourceOf maps an identity to its resource.
func (c *Collector) resourceOf(id graph.Identity) (schema.GroupVersionResource, bool, error) {
	gvr, namespaced, err := c.opts.Resources.ResourceFor(id.GroupVersionKind())
	if err != nil {
		return gvr, false, &notServedError{err: err}
	}
	return gvr, namespaced, nil
}

// groupResource is the resource of the object id as the policy names it:
// its group alone when its kind maps to no resource (then only what names
// the whole group applies).
func (c *Collector) groupResource(id graph.Identity) schema.GroupResource {
	if gvr, _, err := c.resourceOf(id); err == nil {
		return gvr.GroupResource()
	}
	return schema.GroupResource{Group: id.Group}
}

// target maps an identity to the resource the collector may write to, or
// errIgnored.
func (c *Collector) target(id graph.Identity) (schema.GroupVersionResource, string, error) {
	gvr, namespaced, err := c.resourceOf(id)
	if err != nil {
		return gvr, "", err
	}
	if c.opts.Policy.Get().Ignores(gvr.GroupResource()) {
		return gvr, "", errIgnored
	}
	return gvr, namespaceFor(namespaced, id.Namespace), nil
}

// objectClient returns the client of the object namespace/name of resource
// gvr (namespace "" for a cluster-scoped one) through client. It is the
// only place in this package where a request for an object is built: it
// refuses, with an *explain.InvalidNameError and before any request, a
// namespace that is not a DNS-1123 label and a name that is not one path
// segment (explain.ValidatePath). client-go joins both into the request
// path and cleans it, so that the name "../../other/secrets/x" would read
// or write an object of another namespace and resource than the one named;
// no object has such a name, so it names none (see isInvalidName).
// TestEveryRequestGoesThroughObjectClient keeps it the only place.
func objectClient(client metadata.Interface, gvr schema.GroupVersionResource, namespace, name string) (metadata.ResourceInterface, error) {
	if err := explain.ValidatePath(namespace, name); err != nil {
		return nil, err
	}
	return client.Resource(gvr).Namespace(namespace), nil
}

// isInvalidName reports whether err says that a name or namespace cannot
// be one path segment, so that it names no object and was never requested.
func isInvalidName(err error) bool {
	var invalid *explain.InvalidNameError
	return errors.As(err, &invalid)
}

// objectError is an error about one object. Every error of a request for
// an object carries the object (about), and so does every error of work on
// an object other than the one being processed (an owner read, a
// dependent orphaned), so that a report that others read — an explanation,
// an event — can tell which objects the error names (redact). Its text is
// the error's own.
type objectError struct {
	object explain.Object
	err    error
}

func (e *objectError) Error() string { return e.err.Error() }
func (e *objectError) Unwrap() error { return e.err }

// about returns err (nil when nil) as an error about the object
// namespace/name of resource gvr.
func about(gvr schema.GroupVersionResource, namespace, name string, err error) error {
	if err == nil {
		return nil
	}
	return &objectError{object: explain.Object{Resource: discovery.FormatGVR(gvr), Namespace: namespace, Name: name}, err: err}
}

// aboutIdentity returns err (nil when nil) as an error about the object
// id.
func (c *Collector) aboutIdentity(id graph.Identity, err error) error {
	if err == nil {
		return nil
	}
	o := explain.Object{APIVersion: id.APIVersion(), Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, UID: id.UID}
	if gvr, namespaced, rerr := c.resourceOf(id); rerr == nil {
		o.Resource, o.Namespace = discovery.FormatGVR(gvr), namespaceFor(namespaced, id.Namespace)
	}
	return &objectError{object: o, err: err}
}

// get reads an object live, through the collector's client.
func (c *Collector) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	r, err := objectClient(c.opts.Client, gvr, namespace, name)
	if err != nil {
		return nil, about(gvr, namespace, name, err)
	}
	c.opts.Metrics.APIRequests.WithLabelValues("get").Inc()
	obj, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !isGone(err) {
		c.opts.Metrics.APIErrors.WithLabelValues("get").Inc()
	}
	return obj, about(gvr, namespace, name, err)
}

// liveRead reads an object live: the collector's get for its own work, an
// explanation's bounded reads (explainReads) for /explain.
type liveRead func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*metav1.PartialObjectMetadata, error)

// errNotChecked: an explanation has spent its live reads.
var errNotChecked = errors.New("not checked: this answer has spent its live reads")

// lookAgain reads the object id live. It returns nil and no error when the
// object is gone or its name now belongs to another object: there is nothing
// left to do about it.
func (c *Collector) lookAgain(ctx context.Context, gvr schema.GroupVersionResource, namespace string, id graph.Identity) (*metav1.PartialObjectMetadata, error) {
	live, err := c.get(ctx, gvr, namespace, id.Name)
	switch {
	case isGone(err):
		return nil, nil
	case err != nil:
		return nil, err
	case live.UID != id.UID:
		return nil, nil
	}
	return live, nil
}

func (c *Collector) patch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte) (*metav1.PartialObjectMetadata, error) {
	r, err := objectClient(c.opts.Client, gvr, namespace, name)
	if err != nil {
		return nil, about(gvr, namespace, name, err)
	}
	c.opts.Metrics.APIRequests.WithLabelValues("patch").Inc()
	obj, err := r.Patch(ctx, name, pt, data, metav1.PatchOptions{})
	if err != nil && !isGone(err) {
		c.opts.Metrics.APIErrors.WithLabelValues("patch").Inc()
	}
	return obj, about(gvr, namespace, name, err)
}

// deleteObject deletes obj with the given propagation, with preconditions on
// its UID and (unless relaxed) on the resourceVersion the decision was made
// from. It returns errConflict when a precondition fails.
func (c *Collector) deleteObject(ctx context.Context, id graph.Identity, obj *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation, absentSince time.Time, relaxed bool) error {
	gvr, ns, err := c.target(id)
	if errors.Is(err, errIgnored) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.dryRun() {
		c.would(ctx, ActionDelete, "", id, policy, "propagationPolicy", policy, "owner", refUIDs(obj.OwnerReferences))
		return nil
	}
	r, err := objectClient(c.opts.Client, gvr, ns, id.Name)
	if err != nil {
		return about(gvr, ns, id.Name, err)
	}
	uid := obj.UID
	pre := &metav1.Preconditions{UID: &uid}
	if rv := obj.ResourceVersion; rv != "" && !relaxed {
		pre.ResourceVersion = &rv
	}
	c.opts.Metrics.APIRequests.WithLabelValues("delete").Inc()
	err = about(gvr, ns, id.Name, r.Delete(ctx, id.Name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy}))
	switch {
	case isGone(err):
		return nil
	case apierrors.IsConflict(err):
		return errConflict
	case err != nil:
		c.opts.Metrics.APIErrors.WithLabelValues("delete").Inc()
		return fmt.Errorf("deleting %s: %w", describe(id), err)
	}
	c.recentlyDeleted.Add(obj.UID, obj.ResourceVersion)
	c.opts.Metrics.DeletedObjects.WithLabelValues(gvr.Group, gvr.Resource, string(policy)).Inc()
	if !absentSince.IsZero() {
		c.opts.Metrics.OwnerAbsentToDependentDeleted.Observe(time.Since(absentSince).Seconds())
	}
	ctrl.LoggerFrom(ctx).Info("Deleted object whose owners are gone", "gvr", discovery.FormatGVR(gvr), "propagationPolicy", policy)
	return nil
}

// deletedAt reports whether the collector deleted obj at its current
// resourceVersion already.
func (c *Collector) deletedAt(obj *metav1.PartialObjectMetadata) bool {
	rv, ok := c.recentlyDeleted.Get(obj.UID)
	return ok && rv == obj.ResourceVersion
}

// removeOwnerRefs removes the references to the given owners from an object
// (obj, or when nil, read live), for action (ActionOrphan or
// ActionRemoveReferences). It reports whether it changed something.
func (c *Collector) removeOwnerRefs(ctx context.Context, action string, id graph.Identity, obj *metav1.PartialObjectMetadata, owners []types.UID) (bool, error) {
	if c.dryRun() {
		for _, o := range slices.Compact(slices.Sorted(slices.Values(owners))) {
			c.would(ctx, action, string(o), id, "", "dependent", id, "removedOwner", o)
		}
		return false, nil
	}
	patched, err := c.patchOwnerRefs(ctx, id, obj, deleteRefsPatch(owners), func(refs []metav1.OwnerReference) []metav1.OwnerReference {
		return slices.DeleteFunc(refs, func(r metav1.OwnerReference) bool { return slices.Contains(owners, r.UID) })
	})
	return patched != nil, err
}

// unblockOwnerRefs sets blockOwnerDeletion=false on every owner reference of
// obj that blocks. It returns the patched object, or nil when nothing needed
// patching.
func (c *Collector) unblockOwnerRefs(ctx context.Context, id graph.Identity, obj *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
	smp := unblockRefsPatch(obj.OwnerReferences)
	if len(smp) == 0 || c.dryRun() { // in dry-run, a part of the deletion decision that follows
		return nil, nil
	}
	return c.patchOwnerRefs(ctx, id, obj, smp, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
		f := false
		for i := range refs {
			if boolValue(refs[i].BlockOwnerDeletion) {
				refs[i].BlockOwnerDeletion = &f
			}
		}
		return refs
	})
}

// patchOwnerRefs changes an object's owner references: with smp, a strategic
// merge patch of the list conditional on the object's UID, or for resources
// that do not support it (custom resources) a JSON merge patch of the whole
// list that edit computes from a copy of the current one, conditional on the
// resourceVersion of obj (nil: read it live) and read again when that fails.
// It returns the patched object, or nil when the object is gone, was
// replaced, or needed no change.
func (c *Collector) patchOwnerRefs(ctx context.Context, id graph.Identity, obj *metav1.PartialObjectMetadata, smp any,
	edit func([]metav1.OwnerReference) []metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	gvr, ns, err := c.target(id)
	if errors.Is(err, errIgnored) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, unsupported := c.smpUnsupported.Load(gvr.GroupResource()); !unsupported {
		data, err := ownerRefsStrategicPatch(id.UID, smp)
		if err != nil {
			return nil, err
		}
		patched, err := c.patch(ctx, gvr, ns, id.Name, types.StrategicMergePatchType, data)
		switch {
		case err == nil:
			return patched, nil
		case apierrors.IsUnsupportedMediaType(err):
			c.smpUnsupported.Store(gvr.GroupResource(), struct{}{})
		case isGone(err):
			return nil, nil
		case apierrors.IsConflict(err) || apierrors.IsInvalid(err):
			// The UID in the patch does not match: the object was replaced.
			if live, lerr := c.lookAgain(ctx, gvr, ns, id); lerr == nil && live == nil {
				return nil, nil
			}
			return nil, fmt.Errorf("patching owner references of %s: %w", describe(id), err)
		default:
			return nil, fmt.Errorf("patching owner references of %s: %w", describe(id), err)
		}
	}
	return c.mergePatch(ctx, gvr, ns, id, obj, func(obj *metav1.PartialObjectMetadata) ([]byte, bool, error) {
		refs := edit(slices.Clone(obj.OwnerReferences))
		if slices.EqualFunc(refs, obj.OwnerReferences, sameReference) {
			return nil, false, nil
		}
		data, err := ownerRefsMergePatch(id.UID, obj.ResourceVersion, refs)
		return data, true, err
	}, "patching owner references of "+describe(id))
}

// removeFinalizer removes a finalizer from an object with a JSON merge patch
// conditional on the resourceVersion of obj (nil: read it live), reading it
// again when that precondition fails.
func (c *Collector) removeFinalizer(ctx context.Context, id graph.Identity, obj *metav1.PartialObjectMetadata, finalizer string) error {
	gvr, ns, err := c.target(id)
	if errors.Is(err, errIgnored) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.dryRun() {
		c.would(ctx, ActionRemoveFinalizer, finalizer, id, "", "finalizer", finalizer)
		return nil
	}
	what := fmt.Sprintf("removing finalizer %s from %s", finalizer, describe(id))
	patched, err := c.mergePatch(ctx, gvr, ns, id, obj, func(obj *metav1.PartialObjectMetadata) ([]byte, bool, error) {
		if !slices.Contains(obj.Finalizers, finalizer) {
			return nil, false, nil
		}
		rest := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return f == finalizer })
		data, err := finalizersMergePatch(id.UID, obj.ResourceVersion, rest)
		return data, true, err
	}, what)
	if err == nil && patched != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Removed finalizer", "finalizer", finalizer, "gvr", discovery.FormatGVR(gvr))
	}
	return err
}

// mergePatch sends the JSON merge patch body builds from obj (nil: read it
// live), conditional on obj's resourceVersion, reading the object again and
// rebuilding the patch when that precondition fails, a few times. body
// reports false when no change is needed. It returns the patched object, or
// nil when the object is gone, was replaced or needed no change.
func (c *Collector) mergePatch(ctx context.Context, gvr schema.GroupVersionResource, ns string, id graph.Identity, obj *metav1.PartialObjectMetadata,
	body func(*metav1.PartialObjectMetadata) ([]byte, bool, error), what string) (*metav1.PartialObjectMetadata, error) {
	for attempt := 0; attempt < 5; attempt++ {
		if obj == nil {
			live, err := c.lookAgain(ctx, gvr, ns, id)
			if live == nil {
				return nil, err
			}
			obj = live
		}
		data, needed, err := body(obj)
		if err != nil || !needed {
			return nil, err
		}
		patched, err := c.patch(ctx, gvr, ns, id.Name, types.MergePatchType, data)
		switch {
		case err == nil:
			return patched, nil
		case isGone(err):
			return nil, nil
		case apierrors.IsConflict(err):
			obj = nil
		default:
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil, about(gvr, ns, id.Name, fmt.Errorf("%s: %w", what, errConflict))
}
