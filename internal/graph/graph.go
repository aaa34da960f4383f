// Package graph is ownergc's ownership graph: every object the collector
// watches (a node), the owners its metadata.ownerReferences name and the
// dependents that name it, plus the state the collection algorithm needs
// (being deleted, deleting dependents, orphaning, observed or virtual).
//
// The graph is pure Go: it performs no I/O. Observations come from the per-GVK
// reconcilers; the work an observation creates (an object to look at, an owner
// to orphan) is reported to a Sink, which the collector backs with its
// attempt-to-delete and attempt-to-orphan queues. The graph imports neither
// the collector nor the controllers.
package graph

import (
	"fmt"
	"strings"
	"sync"

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

// Matches reports whether both identities name the same object, ignoring
// the version (an object is the same whichever version it is served in).
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

// Object is what the graph learns from one observation of an object.
type Object struct {
	Group, Version, Kind string
	Namespace, Name      string
	UID                  types.UID
	OwnerReferences      []metav1.OwnerReference
	// BeingDeleted: the object has a deletionTimestamp.
	BeingDeleted bool
	// OrphanFinalizer and ForegroundFinalizer: the object carries the
	// orphan or the foregroundDeletion finalizer.
	OrphanFinalizer     bool
	ForegroundFinalizer bool
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
	// cluster-scoped dependent references a namespaced owner).
	InvalidOwnerNamespace(dependent, owner Identity)
}

// Graph is the ownership graph.
//
// Concurrency: one RWMutex guards the whole graph, the nodes and the kinds.
// Observations (writers) come from many reconcilers at once and each holds
// the lock for a few map operations; the collector's workers take read-locked
// snapshots (Describe, Owner, Dependents) and never hold the lock while they
// talk to the API server. The Sink is called under the write lock. The
// absent-owner cache has its own lock.
type Graph struct {
	mu      sync.RWMutex
	uids    map[types.UID]*Node
	kinds   map[schema.GroupKind]*Kind
	virtual int

	absent *AbsentOwnerCache
}

// New returns an empty graph whose absent-owner cache remembers up to
// absentOwners confirmed-absent owners.
func New(absentOwners int) *Graph {
	return &Graph{
		uids:   make(map[types.UID]*Node),
		kinds:  make(map[schema.GroupKind]*Kind),
		absent: NewAbsentOwnerCache(absentOwners),
	}
}

// AbsentOwners returns the graph's absent-owner cache.
func (g *Graph) AbsentOwners() *AbsentOwnerCache { return g.absent }

// Len returns the number of nodes, virtual ones included.
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.uids)
}

// VirtualLen returns the number of virtual nodes.
func (g *Graph) VirtualLen() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.virtual
}

// kindFor returns the interned kind; version is recorded when the kind is new.
func (g *Graph) kindFor(group, kind, version string) *Kind {
	gk := schema.GroupKind{Group: group, Kind: kind}
	k, ok := g.kinds[gk]
	if !ok {
		k = &Kind{group: group, kind: kind, version: version, byName: make(map[nsName]*Node)}
		g.kinds[gk] = k
	}
	return k
}

// groupOf returns the group of an apiVersion without allocating.
func groupOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

func versionOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[i+1:]
	}
	return apiVersion
}

// Observe brings the graph in line with an object read from the cache.
func (g *Graph) Observe(obj *Object, sink Sink) {
	g.mu.Lock()
	defer g.mu.Unlock()

	k := g.kindFor(obj.Group, obj.Kind, obj.Version)
	k.version = obj.Version
	key := nsName{obj.Namespace, obj.Name}
	if old := k.byName[key]; old != nil && old.uid != obj.UID {
		// The name now belongs to another object: the one we knew was
		// deleted (and maybe re-created) while we were not looking.
		g.removeObserved(old, sink)
	}

	n := g.uids[obj.UID]
	wasOrphaning, wasDeletingDependents := false, false
	switch {
	case n == nil:
		n = &Node{uid: obj.UID, kind: k, namespace: obj.Namespace, name: obj.Name, flags: flagObserved}
		g.uids[n.uid] = n
		k.byName[key] = n
	case !n.has(flagObserved):
		g.observeVirtual(n, k, obj, sink)
	case n.kind != k:
		// The same object served by another group (core and events.k8s.io
		// events, for example). The first kind it was observed as stays its
		// identity; owners and state follow the latest observation.
		wasOrphaning, wasDeletingDependents = n.has(flagOrphaning), n.has(flagDeletingDependents)
	default:
		wasOrphaning, wasDeletingDependents = n.has(flagOrphaning), n.has(flagDeletingDependents)
	}

	g.setOwners(n, obj.OwnerReferences, sink)

	n.set(flagBeingDeleted, obj.BeingDeleted)
	orphaning := obj.BeingDeleted && obj.OrphanFinalizer
	deletingDependents := obj.BeingDeleted && obj.ForegroundFinalizer
	n.set(flagOrphaning, orphaning)
	n.set(flagDeletingDependents, deletingDependents)
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
func (g *Graph) observeVirtual(n *Node, k *Kind, obj *Object, sink Sink) {
	observed := Identity{Group: obj.Group, Version: obj.Version, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
	if !n.identity().Matches(observed) {
		_, mismatching := g.partitionDependents(n, observed)
		for _, dep := range mismatching {
			if observed.Namespace != "" && dep.namespace != observed.Namespace {
				sink.InvalidOwnerNamespace(dep.identity(), observed)
			}
			sink.AttemptToDelete(dep)
		}
	}
	n.kind, n.namespace, n.name = k, obj.Namespace, obj.Name
	n.flags |= flagObserved
	g.virtual--
	k.byName[nsName{obj.Namespace, obj.Name}] = n
}

// setOwners updates n's owner links to refs: links to new owners (creating
// virtual nodes for owners not seen yet), unlinks removed ones, and reports
// owners that a removed or no-longer-blocking reference may unblock.
func (g *Graph) setOwners(n *Node, refs []metav1.OwnerReference, sink Sink) {
	if sameOwners(n.owners, refs) {
		return
	}
	old := n.owners
	var owners []OwnerRef
	if len(refs) > 0 {
		owners = make([]OwnerRef, 0, len(refs))
	}
	potentiallyInvalid := false
	for i := range refs {
		ref := &refs[i]
		if containsOwner(owners, ref.UID) {
			continue // a duplicate reference
		}
		refKind := g.kindFor(groupOf(ref.APIVersion), ref.Kind, versionOf(ref.APIVersion))
		owner, found := g.uids[ref.UID]
		if !found {
			owner = &Node{
				uid:       ref.UID,
				kind:      refKind,
				namespace: n.namespace,
				name:      ref.Name,
			}
			g.uids[owner.uid] = owner
			g.virtual++
		}
		block := ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
		owners = append(owners, OwnerRef{UID: owner.uid, Name: ref.Name, Kind: refKind, Block: block})

		prev, linked := findOwner(old, ref.UID)
		if !linked {
			owner.addDependent(n)
		} else if prev.Block && !block && owner.has(flagDeletingDependents) {
			// No longer blocking: the owner may be able to finish.
			sink.AttemptToDelete(owner)
		}
		switch {
		case !found:
			// Verify the virtual owner exists.
			sink.AttemptToDelete(owner)
		case potentiallyInvalid:
		case owner.namespace != "" && owner.namespace != n.namespace:
			if owner.has(flagObserved) {
				sink.InvalidOwnerNamespace(n.identity(), owner.identity())
			}
			potentiallyInvalid = true
		case owner.kind != refKind || owner.name != ref.Name: // kinds are interned
			potentiallyInvalid = true
		case owner.namespace == "" && n.namespace != "" && !owner.has(flagObserved):
			// A virtual cluster-scoped owner referenced from a namespace:
			// it may be a namespaced kind a cluster-scoped object named.
			potentiallyInvalid = true
		}
		if owner.has(flagDeletingDependents) && !linked {
			// A new dependent of an owner waiting for its dependents.
			sink.AttemptToDelete(n)
		}
	}
	for _, o := range old {
		if containsOwner(owners, o.UID) {
			continue
		}
		owner, ok := g.uids[o.UID]
		if !ok {
			continue
		}
		owner.removeDependent(n)
		if o.Block && owner.has(flagDeletingDependents) {
			sink.AttemptToDelete(owner)
		}
	}
	n.owners = owners
	if potentiallyInvalid {
		sink.AttemptToDelete(n)
	}
}

func sameOwners(owners []OwnerRef, refs []metav1.OwnerReference) bool {
	if len(owners) != len(refs) {
		return false
	}
	for i := range refs {
		o, r := &owners[i], &refs[i]
		block := r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
		if o.UID != r.UID || o.Block != block || o.Name != r.Name || o.Kind.kind != r.Kind || o.Kind.group != groupOf(r.APIVersion) {
			return false
		}
	}
	return true
}

func containsOwner(owners []OwnerRef, uid types.UID) bool {
	_, ok := findOwner(owners, uid)
	return ok
}

func findOwner(owners []OwnerRef, uid types.UID) (OwnerRef, bool) {
	for _, o := range owners {
		if o.UID == uid {
			return o, true
		}
	}
	return OwnerRef{}, false
}

// ObserveAbsent records that the object of the given kind, namespace and name
// is no longer in the cache: the node known by that name is removed and its
// dependents are looked at.
func (g *Graph) ObserveAbsent(gk schema.GroupKind, namespace, name string, sink Sink) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.kinds[gk]
	if !ok {
		return
	}
	if n := k.byName[nsName{namespace, name}]; n != nil {
		g.removeObserved(n, sink)
	}
}

// removeObserved removes a node whose object is gone.
func (g *Graph) removeObserved(n *Node, sink Sink) {
	g.drop(n, n.identity(), sink)
}

// drop removes a node whose object is known to be absent at coordinates id:
// the coordinates go into the absent-owner cache, its dependents are looked
// at, and its owners waiting for their dependents may now finish.
func (g *Graph) drop(n *Node, id Identity, sink Sink) {
	g.removeNode(n, sink)
	if n.dependentCount() > 0 {
		g.absent.Add(id)
	}
	n.eachDependent(sink.AttemptToDelete)
	n.dependents = nil
}

// removeNode unlinks n from the graph.
func (g *Graph) removeNode(n *Node, sink Sink) {
	if g.uids[n.uid] == n {
		delete(g.uids, n.uid)
	}
	key := nsName{n.namespace, n.name}
	if n.kind.byName[key] == n {
		delete(n.kind.byName, key)
	}
	if !n.has(flagObserved) {
		g.virtual--
	}
	for _, o := range n.owners {
		owner, ok := g.uids[o.UID]
		if !ok {
			continue
		}
		owner.removeDependent(n)
		if owner.has(flagDeletingDependents) {
			sink.AttemptToDelete(owner)
		}
	}
	n.flags |= flagRemoved
}

// VirtualDelete records that a live read found no object with id's UID at id's
// coordinates. Dependents that reference the owner by exactly those
// coordinates are looked at again (their owner is absent); a virtual node that
// other dependents reference by other coordinates stays, under one of those
// coordinates, to be verified in turn.
func (g *Graph) VirtualDelete(id Identity, sink Sink) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.uids[id.UID]
	if !ok {
		return
	}
	if !n.has(flagObserved) {
		matching, mismatching := g.partitionDependents(n, id)
		if len(mismatching) > 0 {
			// Some dependents name this owner by other coordinates: keep it.
			g.lookAgainAtMatching(matching, id, sink)
			if n.identity().Matches(id) {
				if alt, ok := alternateIdentity(mismatching, id); ok {
					n.kind = g.kindFor(alt.Group, alt.Kind, alt.Version)
					n.namespace, n.name = alt.Namespace, alt.Name
					sink.AttemptToDelete(n)
				}
			}
			return
		}
	} else if !n.identity().Matches(id) {
		// The object exists under other coordinates: only the references
		// by the verified ones are dangling.
		matching, _ := g.partitionDependents(n, id)
		g.lookAgainAtMatching(matching, id, sink)
		return
	}
	g.drop(n, id, sink)
}

func (g *Graph) lookAgainAtMatching(matching []*Node, id Identity, sink Sink) {
	if len(matching) == 0 {
		return
	}
	g.absent.Add(id)
	for _, dep := range matching {
		sink.AttemptToDelete(dep)
	}
}

// partitionDependents splits n's dependents into those whose reference to
// n's UID matches id's coordinates and those with a reference that does not.
func (g *Graph) partitionDependents(n *Node, id Identity) (matching, mismatching []*Node) {
	n.eachDependent(func(dep *Node) {
		match, mismatch := false, false
		if id.Namespace != "" && dep.namespace != id.Namespace {
			mismatch = true
		} else {
			for _, o := range dep.owners {
				if o.UID != id.UID {
					continue
				}
				if o.Name == id.Name && o.Kind.kind == id.Kind && o.Kind.group == id.Group {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			mismatching = append(mismatching, dep)
		}
	})
	return matching, mismatching
}

// alternateIdentity picks, among the coordinates dependents use for id's UID,
// one that differs from id: the smallest, so the choice is deterministic.
func alternateIdentity(deps []*Node, id Identity) (Identity, bool) {
	var best Identity
	found := false
	for _, dep := range deps {
		for _, o := range dep.owners {
			if o.UID != id.UID {
				continue
			}
			cand := Identity{Group: o.Kind.group, Version: o.Kind.version, Kind: o.Kind.kind, Namespace: dep.namespace, Name: o.Name, UID: o.UID}
			if cand.Matches(id) {
				continue
			}
			if !found || identityLess(cand, best) {
				best, found = cand, true
			}
		}
	}
	return best, found
}

func identityLess(a, b Identity) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// RemoveKind drops the observed nodes of a kind that the collector stops
// watching. When deleted is true the objects are known to be gone (their
// CustomResourceDefinition was deleted, which deletes every instance first):
// they are removed like any observed deletion and their dependents are looked
// at. Otherwise the objects still exist but are no longer watched (an ignored
// resource): nodes that own something become virtual, to be verified with live
// reads like any owner the collector does not watch; the others are dropped.
// It returns the number of nodes removed or made virtual.
func (g *Graph) RemoveKind(gk schema.GroupKind, deleted bool, sink Sink) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.kinds[gk]
	if !ok {
		return 0
	}
	count := 0
	for key, n := range k.byName {
		count++
		if deleted {
			g.removeObserved(n, sink)
			continue
		}
		delete(k.byName, key)
		if n.dependentCount() == 0 {
			g.removeNode(n, sink)
			continue
		}
		// Keep the node as a virtual owner of its dependents.
		for _, o := range n.owners {
			if owner, ok := g.uids[o.UID]; ok {
				owner.removeDependent(n)
				if owner.has(flagDeletingDependents) {
					sink.AttemptToDelete(owner)
				}
			}
		}
		n.owners = nil
		n.flags = 0
		g.virtual++
		sink.AttemptToDelete(n)
	}
	return count
}

// KindLen returns the number of observed nodes of a kind.
func (g *Graph) KindLen(gk schema.GroupKind) int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if k, ok := g.kinds[gk]; ok {
		return len(k.byName)
	}
	return 0
}

// Names calls f with the namespace and name of every observed node of a kind
// (under the read lock: f must not call into the graph).
func (g *Graph) Names(gk schema.GroupKind, f func(namespace, name string)) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if k, ok := g.kinds[gk]; ok {
		for key := range k.byName {
			f(key.namespace, key.name)
		}
	}
}
