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

// Package graph is ownergc's ownership graph: every object the collector
// watches (a node), the owners its metadata.ownerReferences name and the
// dependents that name it, plus the state the collection algorithm needs
// (being deleted, deleting dependents, orphaning, observed or virtual).
//
// The graph is pure Go: it performs no I/O. Observations come from the
// per-kind monitors; the work an observation creates (an object to look at,
// an owner to orphan) is reported to a Sink, which the collector backs with
// its attempt-to-delete and attempt-to-orphan queues. The graph imports
// nothing from the rest of the module.
package graph

import (
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Identity is the coordinates of an object: group, version, kind, namespace,
// name and UID. Two identities name the same object reference when they agree
// on everything but the version (see Matches).
type Identity struct {
	Group     string
	Version   string
	Kind      string
	Namespace string
	Name      string
	UID       types.UID
}

// APIVersion returns group/version, or version for the core group.
func (id Identity) APIVersion() string {
	return schema.GroupVersion{Group: id.Group, Version: id.Version}.String()
}

// GroupKind returns the identity's group and kind.
func (id Identity) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// GroupVersionKind returns the identity's group, version and kind.
func (id Identity) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
}

// Matches reports whether both identities name the same object, ignoring
// the version (an object is the same whichever version it is served in;
// whether a version can be read at all is the collector's concern).
func (id Identity) Matches(other Identity) bool {
	return id.UID == other.UID && id.Name == other.Name && id.Kind == other.Kind &&
		id.Group == other.Group && id.Namespace == other.Namespace
}

// MarshalLog makes logr log an identity as a structured object.
func (id Identity) MarshalLog() any {
	return struct {
		APIVersion string    `json:"apiVersion"`
		Kind       string    `json:"kind"`
		Namespace  string    `json:"namespace,omitempty"`
		Name       string    `json:"name"`
		UID        types.UID `json:"uid"`
	}{id.APIVersion(), id.Kind, id.Namespace, id.Name, id.UID}
}

func (id Identity) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", id.APIVersion(), id.Kind, id.Namespace, id.Name, id.UID)
}

// Object is what the graph learns from one observation of an object, and
// what Lookup gives back of an observed one.
type Object struct {
	Group, Version, Kind string
	Namespace, Name      string
	UID                  types.UID
	// ResourceVersion is kept exactly: it is opaque (a canonical decimal
	// number is kept as a number).
	ResourceVersion   string
	DeletionTimestamp *metav1.Time
	Finalizers        []string
	OwnerReferences   []metav1.OwnerReference
	// Protected: the object is protected from collection (the caller
	// decides what makes it so).
	Protected bool
	// Created is its creationTimestamp: the graph keeps it to the second,
	// the API server's precision. Expiry is its expiry annotations.
	Created time.Time
	Expiry  ExpiryAnnotations
	// Monitor is the generation of the monitor that made the observation
	// (see StartMonitor); an observation from any other generation of the
	// kind's monitor is stale and ignored. Zero observes unconditionally.
	Monitor uint64
}

// Sink receives the work that changes to the graph create. The graph calls it
// while holding its lock: implementations must be quick and must not call
// back into the graph.
type Sink interface {
	// AttemptToDelete asks the collector to look at a node: to collect it if
	// its owners are gone, to verify that a virtual node exists, or to finish
	// a foreground deletion.
	AttemptToDelete(n *Node)
	// AttemptToOrphan asks the collector to orphan the dependents of a node
	// being deleted with the orphan finalizer.
	AttemptToOrphan(n *Node)
	// InvalidOwnerNamespace reports that dependent references, by UID, an
	// observed namespaced owner in another namespace (or that a
	// cluster-scoped dependent references a namespaced owner). ref is the
	// reference as the dependent states it (its group, version, kind, name
	// and UID, in the dependent's namespace), not the owner observed: what
	// is reported about the dependent names nothing of the other
	// namespace.
	InvalidOwnerNamespace(dependent, ref Identity)
	// DeletionObserved reports that an object with owners started being
	// deleted, or went away without being seen deleted: whoever deleted it
	// (a collector, a user, a controller). owners must not be modified.
	DeletionObserved(id Identity, owners []OwnerRef)
	// ReferenceRemoved reports that an object stopped referencing an owner.
	ReferenceRemoved(id Identity, owner OwnerRef)
}

// Graph is the ownership graph.
//
// Concurrency: one RWMutex guards the whole graph, the nodes and the kinds.
// Observations (writers) come from many monitors at once and each holds the
// lock for a few map operations; the collector's workers take read-locked
// snapshots (Describe, Owner, Dependents) and never hold the lock while they
// talk to the API server. The Sink is called under the lock. The absent-owner
// cache has its own lock.
type Graph struct {
	mu         sync.RWMutex
	uids       *uidTable
	kinds      map[schema.GroupVersionKind]*Kind
	groupKinds map[schema.GroupKind]*groupKind
	virtual    int
	// monitors numbers the monitors started, for StartMonitor.
	monitors uint64
	// deleting indexes the nodes being deleted in the foreground or with
	// the orphan finalizer: the deletions that can be blocked.
	deleting map[*Node]struct{}

	absent *AbsentOwnerCache
}

// New returns an empty graph whose absent-owner cache remembers up to
// absentOwners confirmed-absent owners.
func New(absentOwners int) *Graph {
	return &Graph{
		uids:       newUIDTable(),
		kinds:      make(map[schema.GroupVersionKind]*Kind),
		groupKinds: make(map[schema.GroupKind]*groupKind),
		deleting:   make(map[*Node]struct{}),
		absent:     NewAbsentOwnerCache(absentOwners),
	}
}

// AbsentOwners returns the graph's absent-owner cache.
func (g *Graph) AbsentOwners() *AbsentOwnerCache { return g.absent }

// Len returns the number of nodes, virtual ones included.
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.uids.count
}

// VirtualLen returns the number of virtual nodes.
func (g *Graph) VirtualLen() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.virtual
}

// StartMonitor records that a new monitor observes a kind and returns its
// generation, to be set in the Monitor field of its observations: from then
// on, observations of the kind by earlier monitors are ignored, so that a
// stopped monitor's late events cannot change the nodes its successor
// observes. It also reports whether the kind was observed before (the
// nodes the new monitor does not list may be gone: see ResyncKind).
func (g *Graph) StartMonitor(key schema.GroupKind) (gen uint64, again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gk := g.groupKindFor(key.Group, key.Kind)
	again = gk.monitor != 0
	g.monitors++
	gk.monitor = g.monitors
	return g.monitors, again
}

// stale reports whether an observation of gk by monitor generation gen is
// out of date.
func stale(gk *groupKind, gen uint64) bool { return gen != 0 && gen != gk.monitor }

// Observe brings the graph in line with an object read from the cache.
func (g *Graph) Observe(obj *Object, sink Sink) {
	g.mu.Lock()
	defer g.mu.Unlock()

	k := g.kindFor(obj.Group, obj.Version, obj.Kind)
	if stale(k.gk, obj.Monitor) {
		return
	}
	ns := namespaceOf(obj.Namespace)
	if old := k.gk.byName.get(ns, obj.Name); old != nil && !old.uid.is(obj.UID) {
		// The name now belongs to another object: the one we knew was
		// deleted (and maybe re-created) while we were not looking.
		g.removeObserved(old, sink)
	}

	n, _ := g.nodeOf(obj.UID)
	wasOrphaning, wasDeletingDependents, unverified := false, false, false
	switch {
	case n == nil:
		n = &Node{uid: uidKeyOf(obj.UID), kind: k, namespace: ns, name: obj.Name, state: uint64(flagObserved)}
		g.uids.insert(n)
		k.gk.byName.set(n)
	case !n.has(flagObserved):
		wasOrphaning, wasDeletingDependents = n.has(flagOrphaning), n.has(flagDeletingDependents)
		// A node with owners was observed before its kind stopped being
		// served: decisions about it waited until it could be verified.
		unverified = len(n.owners()) > 0
		g.observeVirtual(n, k, ns, obj, sink)
	case !n.kind.sameGroupKind(k):
		// The same object served by another group (core and events.k8s.io
		// events, for example). The first kind it was observed as stays its
		// identity; owners and state follow the latest observation.
		wasOrphaning, wasDeletingDependents = n.has(flagOrphaning), n.has(flagDeletingDependents)
	default:
		// The version follows the monitor (a CRD's preferred version can
		// change while the collector runs).
		n.kind = k
		wasOrphaning, wasDeletingDependents = n.has(flagOrphaning), n.has(flagDeletingDependents)
	}

	g.setOwners(n, obj.OwnerReferences, sink)
	if unverified {
		sink.AttemptToDelete(n)
	}

	beingDeleted := obj.DeletionTimestamp != nil
	if beingDeleted && !n.has(flagBeingDeleted) && len(n.owners()) > 0 {
		sink.DeletionObserved(n.identity(), n.owners())
	}
	n.store(obj)
	n.set(flagBeingDeleted, beingDeleted)
	orphaning := beingDeleted && slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents)
	deletingDependents := beingDeleted && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
	n.set(flagOrphaning, orphaning)
	n.set(flagDeletingDependents, deletingDependents)
	g.indexDeleting(n)
	if orphaning && !wasOrphaning {
		sink.AttemptToOrphan(n)
	}
	if deletingDependents && !wasDeletingDependents {
		n.eachDependent(sink.AttemptToDelete)
		sink.AttemptToDelete(n)
	}
}

// observeVirtual turns a virtual node into an observed one. When the observed
// identity differs from the one the node was created with, the dependents
// that referenced it by other coordinates are looked at again.
func (g *Graph) observeVirtual(n *Node, k *Kind, ns namespace, obj *Object, sink Sink) {
	observed := Identity{Group: obj.Group, Version: obj.Version, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
	if !n.identity().Matches(observed) {
		_, mismatching := g.partitionDependents(n, observed)
		for _, dep := range mismatching {
			if ns != clusterScoped && dep.namespace != ns {
				sink.InvalidOwnerNamespace(dep.identity(), dep.refTo(n.uid, observed))
			}
			sink.AttemptToDelete(dep)
		}
	}
	n.kind, n.namespace, n.name = k, ns, obj.Name
	n.set(flagObserved, true)
	g.virtual--
	k.gk.byName.set(n)
}

// setOwners updates n's owner links to refs: links to new owners (creating
// virtual nodes for owners not seen yet), unlinks removed ones, and reports
// owners that a removed or no-longer-blocking reference may unblock. Every
// reference is kept, duplicates by UID included; a node is linked once to
// each owner UID.
func (g *Graph) setOwners(n *Node, refs []metav1.OwnerReference, sink Sink) {
	if sameOwners(n.owners(), refs) {
		return
	}
	old := n.owners()
	var owners []OwnerRef
	if len(refs) > 0 {
		owners = make([]OwnerRef, 0, len(refs))
	}
	potentiallyInvalid := false
	for i := range refs {
		ref := &refs[i]
		refKind := g.refKind(ref.APIVersion, ref.Kind)
		// A later reference to a UID an earlier one names: it is kept (it
		// may block, its coordinates may differ) but links nothing new.
		owner, found := g.nodeOf(ref.UID)
		var key uidKey
		if found {
			key = owner.uid
		} else {
			key = uidKeyOf(ref.UID)
		}
		repeated := containsOwner(owners, key)
		if !found && slices.ContainsFunc(old, func(o OwnerRef) bool { return o.uid == key && o.Kind == refKind && o.Name == ref.Name }) {
			// The owner left the graph while n referenced it by these
			// coordinates: it was confirmed absent (see OwnerGone), and n
			// was looked at then. No virtual node comes back to be
			// verified again, perhaps never if its kind is no longer
			// served. A reference that names it otherwise is verified.
			owners = append(owners, ownerRef(ref, key, nil, refKind))
			continue
		}
		if !found {
			owner = &Node{uid: key, kind: refKind, namespace: n.namespace, name: ref.Name}
			g.uids.insert(owner)
			g.virtual++
		}
		owners = append(owners, ownerRef(ref, key, owner, refKind))

		linked := containsOwner(old, key)
		if !repeated {
			if !linked {
				owner.addDependent(n)
			}
			if !found {
				// Verify the virtual owner exists.
				sink.AttemptToDelete(owner)
			}
			if owner.has(flagDeletingDependents) && !linked {
				// A new dependent of an owner waiting for its dependents.
				sink.AttemptToDelete(n)
			}
		}
		if found && !potentiallyInvalid && suspicious(n, owner, refKind, ref.Name, !repeated, sink) {
			potentiallyInvalid = true
		}
	}
	for i, o := range old {
		if containsOwner(old[:i], o.uid) {
			continue // handled with its first reference
		}
		stillLinked := containsOwner(owners, o.uid)
		if !stillLinked {
			sink.ReferenceRemoved(n.identity(), o)
		}
		owner, ok := g.uids.get(o.uid)
		if !ok {
			continue
		}
		if !stillLinked {
			owner.removeDependent(n)
		}
		if owner.has(flagDeletingDependents) && blocksIn(old, o.uid) && (!stillLinked || !blocksIn(owners, o.uid)) {
			// No longer blocking: the owner may be able to finish.
			sink.AttemptToDelete(owner)
		}
	}
	n.setOwnerRefs(owners)
	if potentiallyInvalid {
		sink.AttemptToDelete(n)
	}
}

// indexDeleting keeps n in the index of deletions in progress while it is
// deleting its dependents or orphaning them.
func (g *Graph) indexDeleting(n *Node) {
	if n.has(flagDeletingDependents|flagOrphaning) && !n.has(flagRemoved) {
		g.deleting[n] = struct{}{}
	} else {
		delete(g.deleting, n)
	}
}

// suspicious reports whether n's reference (of kind refKind, naming name) to
// an owner already in the graph may not resolve: an owner observed in
// another namespace (reported, when report is set), other coordinates than
// the owner's, or a virtual cluster-scoped owner named from a namespace
// (it may be of a namespaced kind that a cluster-scoped object named).
func suspicious(n, owner *Node, refKind *Kind, name string, report bool, sink Sink) bool {
	switch {
	case owner.namespace != clusterScoped && owner.namespace != n.namespace:
		if owner.has(flagObserved) && report {
			sink.InvalidOwnerNamespace(n.identity(), Identity{Group: refKind.gk.group, Version: refKind.version, Kind: refKind.gk.kind,
				Namespace: n.namespace.Value(), Name: name, UID: owner.uid.UID()})
		}
		return true
	case !owner.kind.sameGroupKind(refKind) || owner.name != name:
		return true
	case owner.namespace == clusterScoped && n.namespace != clusterScoped && !owner.has(flagObserved):
		return true
	}
	return false
}

func sameOwners(owners []OwnerRef, refs []metav1.OwnerReference) bool {
	if len(owners) != len(refs) {
		return false
	}
	for i := range refs {
		o, r := &owners[i], &refs[i]
		block, opt := refFlags(r)
		if !o.uid.is(r.UID) || o.Block != block || o.opt != opt || o.Name != r.Name || o.Kind.gk.kind != r.Kind ||
			o.Kind.gk.group != groupOf(r.APIVersion) || o.Kind.version != versionOf(r.APIVersion) {
			return false
		}
	}
	return true
}

func containsOwner(owners []OwnerRef, uid uidKey) bool {
	for _, o := range owners {
		if o.uid == uid {
			return true
		}
	}
	return false
}
