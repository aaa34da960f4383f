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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/logging"
)

// processAttemptToDelete looks at one node of the attempt-to-delete queue.
func (c *Collector) processAttemptToDelete(ctx context.Context, n *graph.Node) error {
	s := c.opts.Graph.Describe(n)
	ctx = ctrl.LoggerInto(ctx, logging.WithValues(ctrl.LoggerFrom(ctx), "object", s.Identity))
	err := c.attemptToDeleteItem(ctx, n, s)
	c.trackFailures(n, s.Identity, err)
	return err
}

func (c *Collector) attemptToDeleteItem(ctx context.Context, n *graph.Node, s graph.NodeState) error {
	switch {
	case s.Removed:
		return nil
	case !s.Observed:
		return c.verifyVirtual(ctx, s.Identity)
	case s.BeingDeleted && !s.DeletingDependents:
		// Deletion is a one-way trip; its dependents are looked at once it
		// is gone.
		return nil
	}
	obj, err := c.current(ctx, s.Identity)
	if obj == nil {
		// Gone, or replaced under its name: its monitor updates the graph
		// and queues whatever that changes.
		return err
	}
	// The cache can be ahead of the graph: decide from the object itself.
	if obj.DeletionTimestamp != nil {
		return c.processDeletion(ctx, n, s, obj)
	}
	if c.deletedAt(obj) {
		// We deleted this very version already; the informer has not
		// reported it yet.
		return nil
	}
	return c.collect(ctx, n, s, obj)
}

// current returns the object to decide about: the cached one once its kind
// has synced, otherwise (its monitor is listing it, at another version say,
// or cannot list it) the cached one if already there, or after waiting a
// while for the list, a live read. It returns nil and no error when the
// object is gone or its name belongs to another object.
func (c *Collector) current(ctx context.Context, id graph.Identity) (*metav1.PartialObjectMetadata, error) {
	gk := id.GroupKind()
	st := c.opts.Objects.Kind(gk)
	if obj, ok := c.opts.Objects.Cached(gk, id.Namespace, id.Name); ok && obj.UID == id.UID {
		return obj, nil
	}
	switch {
	case st.Watched && st.Synced:
		return nil, nil
	case st.Watched && !st.Failing && time.Since(st.Since) < c.opts.SyncTimeout:
		return nil, errWaitForSync
	}
	gvr, namespaced, err := c.resourceOf(id)
	if err != nil {
		return nil, err
	}
	return c.lookAgain(ctx, gvr, namespaceFor(namespaced, id.Namespace), id)
}

// verifyVirtual checks, with a live read, whether a virtual node exists.
func (c *Collector) verifyVirtual(ctx context.Context, id graph.Identity) error {
	gk := id.GroupKind()
	st := c.opts.Objects.Kind(gk)
	if st.Watched && !st.Synced && !st.Failing && time.Since(st.Since) < c.opts.SyncTimeout {
		// Its informer is still listing: it may well be observed soon.
		return errWaitForSync
	}
	gvr, namespaced, err := c.opts.Resources.ResourceFor(id.GroupVersionKind())
	if err != nil {
		return &notServedError{err: err}
	}
	ns := id.Namespace
	if !namespaced {
		ns = ""
	} else if ns == "" {
		// Only a cluster-scoped object names a namespaced owner without a
		// namespace: such a reference never resolves. Report it and leave
		// the node (and its dependents) alone.
		c.reportNamespacedOwner(id)
		return nil
	}
	if st.Watched {
		if o, ok := c.opts.Objects.Cached(gk, ns, id.Name); ok && o.UID == id.UID {
			return errRequeue // in the cache, its monitor will observe it
		}
	}
	live, err := c.get(ctx, gvr, ns, id.Name)
	switch {
	case isInvalidName(err):
		// Made from owner references whose name cannot be one path
		// segment: it names no object, and is never read.
		ctrl.LoggerFrom(ctx).V(4).Info("Virtual node names no object: its name cannot be one path segment")
	case isGone(err):
		ctrl.LoggerFrom(ctx).V(4).Info("Virtual node does not exist")
	case err != nil:
		return err
	case live.UID != id.UID:
		ctrl.LoggerFrom(ctx).V(4).Info("Virtual node exists under another UID", "liveUID", live.UID)
	default:
		// It exists but is not observed (yet, or its resource is not
		// watched, or dormant: then watched from now on, so that its
		// deletion is observed): look again later, as long as it stays
		// virtual.
		c.opts.Objects.WakeKind(gk)
		return errRequeue
	}
	if c.opts.Graph.VirtualDelete(id, c) {
		// Kept to be verified under other coordinates its dependents use.
		return errRequeue
	}
	return nil
}

// reportNamespacedOwner records a warning about each cluster-scoped
// dependent of a virtual node of a namespaced kind.
func (c *Collector) reportNamespacedOwner(owner graph.Identity) {
	n := c.opts.Graph.Node(owner.UID)
	if n == nil {
		return
	}
	ref := metav1.OwnerReference{APIVersion: owner.APIVersion(), Kind: owner.Kind, Name: owner.Name, UID: owner.UID}
	for _, d := range c.opts.Graph.Dependents(n, false) {
		if d.Identity.Namespace == "" {
			c.recordNamespacedOwnerOfClusterScoped(d.Identity, ref)
		}
	}
}

// processDeletion carries out the decision about an object being deleted:
// in the foreground, finish its deletion once no dependent with a blocking
// reference to it remains, or queue those that do. (The attempt-to-orphan
// workers orphan the dependents of an object deleted with the orphan
// policy; other finalizers are not the collector's.)
func (c *Collector) processDeletion(ctx context.Context, n *graph.Node, s graph.NodeState, obj *metav1.PartialObjectMetadata) error {
	var blocking []graph.DependentState
	d := c.decide(s.Identity, obj, nil, func() decision.Dependents {
		blocking = c.opts.Graph.Dependents(n, true)
		return decision.Dependents{Blocking: len(blocking)}
	})
	switch d.Action {
	case decision.RemoveForegroundFinalizer:
		if err := c.confirmDormantEmpty(ctx); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).V(2).Info("No blocking dependents remain, removing the foregroundDeletion finalizer")
		return c.removeFinalizer(ctx, s.Identity, obj, metav1.FinalizerDeleteDependents)
	case decision.WaitForDependents:
		for _, dep := range blocking {
			if !dep.DeletingDependents {
				c.attemptToDelete.Add(dep.Node)
			}
		}
	}
	return nil
}

// collect decides what to do with an object from its owner references, and
// does it: nothing, remove references to owners that are gone or waiting,
// or delete it.
func (c *Collector) collect(ctx context.Context, n *graph.Node, s graph.NodeState, obj *metav1.PartialObjectMetadata) error {
	log := ctrl.LoggerFrom(ctx)
	relaxed := false
	for attempt := 0; ; attempt++ {
		refs := obj.OwnerReferences
		if len(refs) == 0 {
			return nil
		}
		cls, err := c.classify(ctx, s.Identity, refs)
		d := c.decide(s.Identity, obj, cls.owners, func() decision.Dependents {
			current := c.opts.Graph.Describe(n)
			return decision.Dependents{Count: current.Dependents, DeletingDependents: current.DependentDeletingDependents}
		})
		switch d.Action {
		case decision.RemoveReferences:
			log.V(2).Info("Object keeps a live owner, removing its references to absent owners and owners waiting for their dependents",
				"owner", refUIDs(cls.solid), "dangling", refUIDs(cls.dangling), "waiting", refUIDs(cls.waiting))
			removed, err := c.removeOwnerRefs(ctx, ActionRemoveReferences, s.Identity, obj, d.Remove)
			if err == nil && removed {
				c.danglingRemoved(len(d.Remove))
			}
			return err
		case decision.Protect:
			// Never deleted: it loses its references to the owners that are
			// gone or going, as an orphaning deletion of them would leave it.
			return c.protect(ctx, s.Identity, obj, cls)
		case decision.Delete:
		default:
			// Kept (an owner that cannot be verified is retried with
			// backoff, but a namespaced owner of a cluster-scoped object,
			// which is reported and which retrying cannot help), or left
			// alone.
			if errors.Is(err, errNamespacedOwnerOfClusterScoped) {
				return nil
			}
			return err
		}
		if d.UnblockFirst {
			// An owner and a dependent are both deleted in the
			// foreground: maybe a cycle. Unblock our references so
			// that the owners can finish whatever happens here.
			log.V(2).Info("Owners and a dependent are both deleted in the foreground, unblocking the object's owner references to avoid a deadlock")
			patched, err := c.unblockOwnerRefs(ctx, s.Identity, obj)
			if err != nil {
				return err
			}
			if patched != nil {
				obj = patched
			}
		}
		err = c.deleteObject(ctx, s.Identity, obj, d.Propagation, cls.absentSince, relaxed)
		if !errors.Is(err, errConflict) {
			return err
		}
		// The object changed since the decision: look again.
		gvr, namespaced, err := c.resourceOf(s.Identity)
		if err != nil {
			return err
		}
		live, err := c.lookAgain(ctx, gvr, namespaceFor(namespaced, s.Identity.Namespace), s.Identity)
		if live == nil {
			return err
		}
		if live.DeletionTimestamp != nil {
			return nil // someone else deletes it
		}
		if attempt >= 3 {
			return fmt.Errorf("object %s keeps changing", describe(s.Identity))
		}
		// Owner references unchanged: only unrelated fields changed, so the
		// decision stands; delete without the resourceVersion precondition
		// so that frequent unrelated updates cannot starve collection.
		relaxed = slices.EqualFunc(live.OwnerReferences, obj.OwnerReferences, sameReference)
		obj = live
	}
}

// decide asks the decision model about obj, the object id, with its owners
// as classified (none for an object being deleted), its dependents as the
// graph holds them, and the policy in force.
func (c *Collector) decide(id graph.Identity, obj *metav1.PartialObjectMetadata, owners []decision.Owner, dependents func() decision.Dependents) decision.Decision {
	return decision.Decide(decision.Input{Object: decision.ObjectOf(&obj.ObjectMeta, c.groupResource(id)),
		Owners: owners, Dependents: dependents, Policy: c.opts.Policy.Get()})
}

// protect removes a protected object's references to its absent and
// waiting owners, instead of deleting it.
func (c *Collector) protect(ctx context.Context, id graph.Identity, obj *metav1.PartialObjectMetadata, cls classification) error {
	refs := append(slices.Clone(cls.dangling), cls.waiting...)
	ctrl.LoggerFrom(ctx).V(2).Info("Object is protected: removing its references to its owners instead of deleting it", "owner", refUIDs(refs))
	removed, err := c.removeOwnerRefs(ctx, ActionRemoveReferences, id, obj, refUIDs(refs))
	if err != nil || !removed {
		return err
	}
	c.opts.Metrics.ProtectedDecisions.Inc()
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = fmt.Sprintf("%s %s (uid %s)", r.Kind, r.Name, r.UID)
	}
	c.recordEvent(id, corev1.EventTypeNormal, ReasonProtected,
		"protected from garbage collection: kept without its owners %s, which are gone or being deleted", strings.Join(names, ", "))
	return nil
}
