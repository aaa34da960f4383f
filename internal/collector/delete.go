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
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/graph"
)

// processAttemptToDelete looks at one node of the attempt-to-delete queue.
func (c *Collector) processAttemptToDelete(ctx context.Context, n *graph.Node) error {
	s := c.opts.Graph.Describe(n)
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("object", s.Identity))
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
	obj, ok := c.opts.Objects.Cached(s.Identity.GroupKind(), s.Identity.Namespace, s.Identity.Name)
	if !ok || obj.UID != s.Identity.UID {
		// The cache has moved on; the object's reconciler updates the graph
		// and queues whatever that changes.
		return nil
	}
	// The cache can be ahead of the graph: decide from the object itself.
	if obj.DeletionTimestamp != nil {
		if slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents) {
			return c.processDeletingDependents(ctx, n, s, obj)
		}
		return nil
	}
	if c.deletedAt(obj) {
		// We deleted this very version already; the informer has not
		// reported it yet.
		return nil
	}
	return c.collect(ctx, n, s, obj)
}

// verifyVirtual checks, with a live read, whether a virtual node exists.
func (c *Collector) verifyVirtual(ctx context.Context, id graph.Identity) error {
	gk := id.GroupKind()
	watched, synced := c.opts.Objects.Watching(gk)
	if watched && !synced {
		// Its informer is still listing: it may well be observed soon.
		return errWaitForSync
	}
	gvr, namespaced, err := c.opts.Resources.ResourceFor(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind})
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
	if watched {
		if o, ok := c.opts.Objects.Cached(gk, ns, id.Name); ok && o.UID == id.UID {
			return errRequeue // in the cache, its reconciler will observe it
		}
	}
	live, err := c.get(ctx, gvr, ns, id.Name)
	switch {
	case apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).V(4).Info("Virtual node does not exist")
		c.opts.Graph.VirtualDelete(id, c)
		return nil
	case err != nil:
		return err
	case live.UID != id.UID:
		ctrl.LoggerFrom(ctx).V(4).Info("Virtual node exists under another UID", "liveUID", live.UID)
		c.opts.Graph.VirtualDelete(id, c)
		return nil
	}
	// It exists but is not observed (yet, or its resource is not watched):
	// look again later, as long as it stays virtual.
	return errRequeue
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

// processDeletingDependents finishes the foreground deletion of an owner
// once no dependent with a blocking reference to it remains.
func (c *Collector) processDeletingDependents(ctx context.Context, n *graph.Node, s graph.NodeState, obj *metav1.PartialObjectMetadata) error {
	blocking := c.opts.Graph.Dependents(n, true)
	if len(blocking) == 0 {
		ctrl.LoggerFrom(ctx).V(2).Info("No blocking dependents remain, removing the foregroundDeletion finalizer")
		return c.removeFinalizer(ctx, s.Identity, obj, metav1.FinalizerDeleteDependents)
	}
	for _, d := range blocking {
		if !d.DeletingDependents {
			c.attemptToDelete.Add(d.Node)
		}
	}
	return nil
}

// collect decides what to do with an object from its owner references, and
// does it: nothing, remove dangling references, or delete it.
func (c *Collector) collect(ctx context.Context, n *graph.Node, s graph.NodeState, obj *metav1.PartialObjectMetadata) error {
	log := ctrl.LoggerFrom(ctx)
	relaxed := false
	for attempt := 0; ; attempt++ {
		refs := obj.OwnerReferences
		if len(refs) == 0 {
			return nil
		}
		cls, err := c.classify(ctx, s.Identity, refs)
		if errors.Is(err, errNamespacedOwnerOfClusterScoped) {
			return nil // reported; retrying cannot help
		}
		if err != nil {
			return err
		}
		var policy metav1.DeletionPropagation
		var current graph.NodeState
		if len(cls.solid) == 0 && len(cls.waiting) > 0 {
			current = c.opts.Graph.Describe(n)
		}
		switch {
		case len(cls.solid) > 0:
			if len(cls.dangling) == 0 && len(cls.waiting) == 0 {
				return nil
			}
			uids := append(refUIDs(cls.dangling), refUIDs(cls.waiting)...)
			log.V(2).Info("Object keeps a live owner, removing its references to absent owners and owners waiting for their dependents",
				"owner", refUIDs(cls.solid), "dangling", refUIDs(cls.dangling), "waiting", refUIDs(cls.waiting))
			removed, err := c.removeOwnerRefs(ctx, s.Identity, obj, uids)
			if err == nil && removed {
				danglingRemoved(len(uids))
			}
			return err
		case len(cls.waiting) > 0 && current.Dependents > 0:
			if current.DependentDeletingDependents {
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
			policy = metav1.DeletePropagationForeground
		default:
			policy = c.propagationFor(obj)
		}
		err = c.deleteObject(ctx, s.Identity, obj, policy, cls.absentSince, relaxed)
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

func sameReference(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name &&
		boolValue(a.BlockOwnerDeletion) == boolValue(b.BlockOwnerDeletion) && boolValue(a.Controller) == boolValue(b.Controller)
}

func boolValue(b *bool) bool { return b != nil && *b }

// propagationFor chooses how to delete an object whose owners are all gone:
// its own orphan or foregroundDeletion finalizer wins, then the policy's
// default propagation.
func (c *Collector) propagationFor(obj *metav1.PartialObjectMetadata) metav1.DeletionPropagation {
	return PropagationFor(obj.Finalizers, c.opts.Policy.Get().DefaultPropagation)
}

// PropagationFor chooses the propagation policy for an object with the given
// finalizers whose owners are all gone.
func PropagationFor(finalizers []string, def metav1.DeletionPropagation) metav1.DeletionPropagation {
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	case def == "":
		return metav1.DeletePropagationBackground
	default:
		return def
	}
}

// ownerStatus is the classification of one owner reference.
type ownerStatus int

const (
	// ownerSolid: the owner exists and is not waiting for its dependents.
	ownerSolid ownerStatus = iota
	// ownerDangling: the owner does not exist.
	ownerDangling
	// ownerWaiting: the owner is being deleted in the foreground.
	ownerWaiting
)

type classification struct {
	solid, dangling, waiting []metav1.OwnerReference
	// absentSince is the earliest time one of the dangling owners was known
	// to be gone.
	absentSince time.Time
}

var errNamespacedOwnerOfClusterScoped = errors.New("a cluster-scoped object cannot have a namespaced owner")

// classify sorts an object's owner references into solid, dangling and
// waiting-for-dependents-deletion ones.
func (c *Collector) classify(ctx context.Context, dependent graph.Identity, refs []metav1.OwnerReference) (classification, error) {
	var cls classification
	for _, ref := range refs {
		status, since, err := c.ownerStatus(ctx, dependent, ref)
		if err != nil {
			return cls, err
		}
		switch status {
		case ownerSolid:
			cls.solid = append(cls.solid, ref)
		case ownerWaiting:
			cls.waiting = append(cls.waiting, ref)
		case ownerDangling:
			cls.dangling = append(cls.dangling, ref)
			if cls.absentSince.IsZero() || since.Before(cls.absentSince) {
				cls.absentSince = since
			}
		}
	}
	return cls, nil
}

// ownerStatus classifies one reference: from the graph when the owner is
// observed at the referenced coordinates, from the absent-owner cache when it
// was recently confirmed gone, otherwise with a live read.
func (c *Collector) ownerStatus(ctx context.Context, dependent graph.Identity, ref metav1.OwnerReference) (ownerStatus, time.Time, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return 0, time.Time{}, &notServedError{err: fmt.Errorf("owner reference %s/%s has an invalid apiVersion: %w", ref.Kind, ref.Name, err)}
	}
	o := c.opts.Graph.Owner(ref.UID)
	if o.Known && o.Observed && o.Identity.Group == gv.Group && o.Identity.Kind == ref.Kind && o.Identity.Name == ref.Name &&
		(o.Identity.Namespace == "" || o.Identity.Namespace == dependent.Namespace) {
		if o.DeletingDependents {
			return ownerWaiting, time.Time{}, nil
		}
		return ownerSolid, time.Time{}, nil
	}

	if dependent.Namespace == "" {
		// A cluster-scoped dependent can only have cluster-scoped owners.
		if _, namespaced, err := c.opts.Resources.ResourceFor(gv.WithKind(ref.Kind)); err == nil && namespaced {
			c.recordNamespacedOwnerOfClusterScoped(dependent, ref)
			return 0, time.Time{}, errNamespacedOwnerOfClusterScoped
		}
	}
	id := graph.Identity{Group: gv.Group, Version: gv.Version, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
	absent := c.opts.Graph.AbsentOwners()
	if since, ok := absent.Since(id); ok {
		return ownerDangling, since, nil
	}
	id.Namespace = dependent.Namespace
	if since, ok := absent.Since(id); ok {
		return ownerDangling, since, nil
	}

	gvr, namespaced, err := c.opts.Resources.ResourceFor(gv.WithKind(ref.Kind))
	if err != nil {
		// Never a reason to delete: retry until the kind is served.
		return 0, time.Time{}, &notServedError{err: fmt.Errorf("owner %s/%s %s: %w", ref.APIVersion, ref.Kind, ref.Name, err)}
	}
	if !namespaced {
		id.Namespace = ""
	}
	live, err := c.get(ctx, gvr, id.Namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		absent.Add(id)
		return ownerDangling, time.Now(), nil
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("reading owner %s: %w", id, err)
	case live.UID != ref.UID:
		absent.Add(id)
		return ownerDangling, time.Now(), nil
	case live.DeletionTimestamp != nil && slices.Contains(live.Finalizers, metav1.FinalizerDeleteDependents):
		return ownerWaiting, time.Time{}, nil
	}
	return ownerSolid, time.Time{}, nil
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// notServedError wraps the failure to map a kind to a resource: the API
// server does not serve it (yet, or any more). Items failing with it are
// retried with backoff and logged quietly.
type notServedError struct{ err error }

func (e *notServedError) Error() string { return e.err.Error() }
func (e *notServedError) Unwrap() error { return e.err }

func namespaceFor(namespaced bool, ns string) string {
	if namespaced {
		return ns
	}
	return ""
}
