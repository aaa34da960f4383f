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

// ownerBasis is the rule that classified an owner reference (findOwner):
// what an explanation says of the owner, and what the collector records.
type ownerBasis int

const (
	// basisInvalidAPIVersion: the reference's apiVersion does not parse
	// (Unverifiable).
	basisInvalidAPIVersion ownerBasis = iota
	// basisObserved: the graph observes the owner at the referenced
	// coordinates (Solid, or WaitingForDependents).
	basisObserved
	// basisAbsentAtVersion: the absent-owner cache holds the owner at
	// exactly the referenced coordinates, served or not (Dangling).
	basisAbsentAtVersion
	// basisGoneBeforeUnserved: the graph confirmed the owner absent before
	// its kind left discovery (Dangling).
	basisGoneBeforeUnserved
	// basisNotServed: the referenced kind maps to no served resource
	// (Unverifiable).
	basisNotServed
	// basisNamespacedOwnerOfClusterScoped: a cluster-scoped dependent names
	// an owner of a namespaced kind (Unverifiable).
	basisNamespacedOwnerOfClusterScoped
	// basisAbsent: the absent-owner cache holds the owner (Dangling).
	basisAbsent
	// basisInvalidName: the owner's name cannot be one path segment, so it
	// names no object and is never read (Dangling).
	basisInvalidName
	// basisNotChecked: an explanation spent its reads before this owner
	// (Unknown).
	basisNotChecked
	// basisReadFailed: the read of the owner failed (Unverifiable).
	basisReadFailed
	// basisRead: a read of the owner's coordinates found it (Solid,
	// WaitingForDependents), found another object or nothing (Dangling).
	basisRead
)

// ownerFinding is what findOwner established of one owner reference.
type ownerFinding struct {
	state decision.OwnerState
	basis ownerBasis
	// since is when a dangling owner was known to be gone.
	since time.Time
	// err is why the owner could not be classified (Unverifiable), or
	// was not read (Unknown), as the failing step returned it.
	err error
	// resolved: the referenced kind maps to gvr, namespaced or not.
	resolved   bool
	gvr        schema.GroupVersionResource
	namespaced bool
	// id is the owner's coordinates, in the namespace it was looked up in
	// last (where it was read, once resolved).
	id graph.Identity
	// live is the object a read found at id, nil when none.
	live *metav1.PartialObjectMetadata
}

// findOwner classifies one reference of dependent, without side effects
// but for read's: the one classification the collector acts on
// (ownerStatus, which reads with its own client and records what it found)
// and explanations render (explainOwner, which reads through its own client
// within its reads and records nothing). From the graph when the owner is
// observed at the referenced coordinates, otherwise, once the referenced
// kind maps to a served resource (a reference that cannot be verified is
// never a reason to delete), from the absent-owner cache when it was
// recently confirmed gone, otherwise with a live read. A reference whose
// name cannot be one path segment names no object: read refuses it
// without a request, and it is dangling, as upstream concludes when its
// read finds another object (the one the cleaned path leads to) or none.
func (c *Collector) findOwner(ctx context.Context, read liveRead, dependent graph.Identity, ref metav1.OwnerReference) ownerFinding {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerFinding{state: decision.OwnerUnverifiable, basis: basisInvalidAPIVersion, err: err}
	}
	id := graph.Identity{Group: gv.Group, Version: gv.Version, Kind: ref.Kind, Namespace: dependent.Namespace, Name: ref.Name, UID: ref.UID}
	o := c.opts.Graph.Owner(ref.UID)
	if o.Known && o.Observed && o.Identity.Group == gv.Group && o.Identity.Kind == ref.Kind && o.Identity.Name == ref.Name &&
		(o.Identity.Namespace == "" || o.Identity.Namespace == dependent.Namespace) {
		if o.DeletingDependents {
			return ownerFinding{state: decision.OwnerWaiting, basis: basisObserved, id: id}
		}
		return ownerFinding{state: decision.OwnerSolid, basis: basisObserved, id: id}
	}

	// An owner recorded absent at exactly the referenced coordinates (its
	// deletion observed, or a read that found nothing) is gone, whether or
	// not its kind is still served: a CustomResourceDefinition being deleted
	// leaves discovery while the dependents of its last objects are still
	// being looked at, and no read would ever verify them. Upstream looks
	// in its absent-owner cache before mapping the kind too.
	absent := c.opts.Graph.AbsentOwners()
	for _, ns := range []string{dependent.Namespace, ""} {
		id.Namespace = ns
		if since, ok := absent.SinceAtVersion(id); ok {
			return ownerFinding{state: decision.OwnerDangling, basis: basisAbsentAtVersion, since: since, id: id}
		}
	}

	f := ownerFinding{id: id}
	f.gvr, f.namespaced, err = c.opts.Resources.ResourceFor(gv.WithKind(ref.Kind))
	if err != nil && c.opts.Graph.OwnerGone(dependent.UID, ref.UID) {
		// Confirmed absent by the graph before the kind left discovery
		// (its CRD deleted with more owners than the absent-owner cache
		// holds): no read could verify it now.
		f.state, f.basis, f.since = decision.OwnerDangling, basisGoneBeforeUnserved, time.Now()
		return f
	}
	if err != nil {
		// Never a reason to delete: retry until the kind is served.
		f.state, f.basis, f.err = decision.OwnerUnverifiable, basisNotServed, err
		return f
	}
	f.resolved = true
	if dependent.Namespace == "" && f.namespaced {
		// A cluster-scoped dependent can only have cluster-scoped owners.
		f.state, f.basis, f.err = decision.OwnerUnverifiable, basisNamespacedOwnerOfClusterScoped, errNamespacedOwnerOfClusterScoped
		return f
	}
	// Virtual owners carry their dependent's namespace whatever their scope:
	// an owner confirmed absent may be recorded with it.
	f.id.Namespace = dependent.Namespace
	if since, ok := absent.Since(f.id); ok {
		f.state, f.basis, f.since = decision.OwnerDangling, basisAbsent, since
		return f
	}
	f.id.Namespace = namespaceFor(f.namespaced, dependent.Namespace)
	if since, ok := absent.Since(f.id); ok {
		f.state, f.basis, f.since = decision.OwnerDangling, basisAbsent, since
		return f
	}
	live, err := read(ctx, f.gvr, f.id.Namespace, ref.Name)
	switch {
	case isInvalidName(err):
		f.state, f.basis, f.err, f.since = decision.OwnerDangling, basisInvalidName, err, time.Now()
	case errors.Is(err, errNotChecked):
		f.state, f.basis, f.err = decision.OwnerUnknown, basisNotChecked, err
	case isGone(err):
		f.state, f.basis, f.since = decision.OwnerDangling, basisRead, time.Now()
	case err != nil:
		f.state, f.basis, f.err = decision.OwnerUnverifiable, basisReadFailed, err
	default:
		f.live, f.basis = live, basisRead
		if f.state = decision.OwnerFromRead(ref.UID, live); f.state == decision.OwnerDangling {
			f.since = time.Now()
		}
	}
	return f
}

// ownerStatus classifies one reference for the collector (findOwner, with
// the collector's reads) and records what it found: an owner a read found
// gone in the absent-owner cache, an owner of a namespaced kind named by a
// cluster-scoped object in an event. An owner that cannot be classified is
// the error.
func (c *Collector) ownerStatus(ctx context.Context, dependent graph.Identity, ref metav1.OwnerReference) (decision.OwnerState, time.Time, error) {
	f := c.findOwner(ctx, c.get, dependent, ref)
	switch f.basis {
	case basisInvalidAPIVersion:
		return "", time.Time{}, &notServedError{err: fmt.Errorf("owner reference %s/%s has an invalid apiVersion: %w", ref.Kind, ref.Name, f.err)}
	case basisNotServed:
		return "", time.Time{}, &notServedError{err: fmt.Errorf("owner %s/%s %s: %w", ref.APIVersion, ref.Kind, ref.Name, f.err)}
	case basisNamespacedOwnerOfClusterScoped:
		c.recordNamespacedOwnerOfClusterScoped(dependent, ref)
		return "", time.Time{}, f.err
	case basisInvalidName:
		ctrl.LoggerFrom(ctx).V(2).Info("Owner reference names no object: its name cannot be one path segment", "owner", ref.UID, "name", explain.Shorten(ref.Name))
	case basisReadFailed, basisNotChecked:
		return "", time.Time{}, fmt.Errorf("reading owner %s: %w", f.id, f.err)
	case basisRead:
		if f.state == decision.OwnerDangling {
			c.opts.Graph.AbsentOwners().Add(f.id)
		}
	}
	return f.state, f.since, nil
}
