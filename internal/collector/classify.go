package collector

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
)

// classification is an object's owner references sorted by what is known
// of their owners.
type classification struct {
	solid, dangling, waiting []metav1.OwnerReference
	// owners are every reference, in order, as the decision model takes
	// them: when a reference cannot be classified, it is Unverifiable and
	// those after it are not read (Unknown).
	owners []decision.Owner
	// absentSince is the earliest time one of the dangling owners was known
	// to be gone.
	absentSince time.Time
}

var errNamespacedOwnerOfClusterScoped = errors.New("a cluster-scoped object cannot have a namespaced owner")

// classify sorts an object's owner references into solid, dangling and
// waiting-for-dependents-deletion ones. Every reference is classified, also
// several to one owner, until one cannot be (an owner that cannot be
// verified): classify returns its error, with that reference Unverifiable
// and those after it not read, which keeps the object whatever the others.
func (c *Collector) classify(ctx context.Context, dependent graph.Identity, refs []metav1.OwnerReference) (classification, error) {
	var cls classification
	for i, ref := range refs {
		status, since, err := c.ownerStatus(ctx, dependent, ref)
		if err != nil {
			cls.owners = append(cls.owners, decision.OwnerOf(ref, decision.OwnerUnverifiable))
			for _, rest := range refs[i+1:] {
				cls.owners = append(cls.owners, decision.OwnerOf(rest, decision.OwnerUnknown))
			}
			return cls, err
		}
		cls.owners = append(cls.owners, decision.OwnerOf(ref, status))
		switch status {
		case decision.OwnerSolid:
			cls.solid = append(cls.solid, ref)
		case decision.OwnerWaiting:
			cls.waiting = append(cls.waiting, ref)
		case decision.OwnerDangling:
			cls.dangling = append(cls.dangling, ref)
			if cls.absentSince.IsZero() || since.Before(cls.absentSince) {
				cls.absentSince = since
			}
		}
	}
	return cls, nil
}

// ownerStatus classifies one reference: from the graph when the owner is
// observed at the referenced coordinates, otherwise once the referenced kind
// maps to a served resource (a reference that cannot be verified is never a
// reason to delete) from the absent-owner cache when it was recently
// confirmed gone, otherwise with a live read. A reference whose name
// cannot be one path segment names no object: it is never read (get
// refuses it) and is dangling, as upstream concludes when its read finds
// another object (the one the cleaned path leads to) or none.
func (c *Collector) ownerStatus(ctx context.Context, dependent graph.Identity, ref metav1.OwnerReference) (decision.OwnerState, time.Time, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", time.Time{}, &notServedError{err: fmt.Errorf("owner reference %s/%s has an invalid apiVersion: %w", ref.Kind, ref.Name, err)}
	}
	o := c.opts.Graph.Owner(ref.UID)
	if o.Known && o.Observed && o.Identity.Group == gv.Group && o.Identity.Kind == ref.Kind && o.Identity.Name == ref.Name &&
		(o.Identity.Namespace == "" || o.Identity.Namespace == dependent.Namespace) {
		if o.DeletingDependents {
			return decision.OwnerWaiting, time.Time{}, nil
		}
		return decision.OwnerSolid, time.Time{}, nil
	}

	// An owner recorded absent at exactly the referenced coordinates (its
	// deletion observed, or a read that found nothing) is gone, whether or
	// not its kind is still served: a CustomResourceDefinition being deleted
	// leaves discovery while the dependents of its last objects are still
	// being looked at, and no read would ever verify them. Upstream looks
	// in its absent-owner cache before mapping the kind too.
	id := graph.Identity{Group: gv.Group, Version: gv.Version, Kind: ref.Kind, Namespace: dependent.Namespace, Name: ref.Name, UID: ref.UID}
	absent := c.opts.Graph.AbsentOwners()
	for _, ns := range []string{dependent.Namespace, ""} {
		id.Namespace = ns
		if since, ok := absent.SinceAtVersion(id); ok {
			return decision.OwnerDangling, since, nil
		}
	}

	gvr, namespaced, err := c.opts.Resources.ResourceFor(gv.WithKind(ref.Kind))
	if err != nil && c.opts.Graph.OwnerGone(dependent.UID, ref.UID) {
		// Confirmed absent by the graph before the kind left discovery
		// (its CRD deleted with more owners than the absent-owner cache
		// holds): no read could verify it now.
		return decision.OwnerDangling, time.Now(), nil
	}
	if err != nil {
		// Never a reason to delete: retry until the kind is served.
		return "", time.Time{}, &notServedError{err: fmt.Errorf("owner %s/%s %s: %w", ref.APIVersion, ref.Kind, ref.Name, err)}
	}
	if dependent.Namespace == "" && namespaced {
		// A cluster-scoped dependent can only have cluster-scoped owners.
		c.recordNamespacedOwnerOfClusterScoped(dependent, ref)
		return "", time.Time{}, errNamespacedOwnerOfClusterScoped
	}
	// Virtual owners carry their dependent's namespace whatever their scope:
	// an owner confirmed absent may be recorded with it.
	id.Namespace = dependent.Namespace
	if since, ok := absent.Since(id); ok {
		return decision.OwnerDangling, since, nil
	}
	id.Namespace = namespaceFor(namespaced, dependent.Namespace)
	if since, ok := absent.Since(id); ok {
		return decision.OwnerDangling, since, nil
	}
	live, err := c.get(ctx, gvr, id.Namespace, ref.Name)
	switch {
	case isInvalidName(err):
		ctrl.LoggerFrom(ctx).V(2).Info("Owner reference names no object: its name cannot be one path segment", "owner", ref.UID, "name", explain.Shorten(ref.Name))
		return decision.OwnerDangling, time.Now(), nil
	case isGone(err):
		live = nil
	case err != nil:
		return "", time.Time{}, fmt.Errorf("reading owner %s: %w", id, err)
	}
	status := decision.OwnerFromRead(ref.UID, live)
	if status == decision.OwnerDangling {
		absent.Add(id)
		return status, time.Now(), nil
	}
	return status, time.Time{}, nil
}
