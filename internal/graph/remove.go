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

package graph

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObserveDeleted records that an object is no longer in the cache: the node
// of obj's kind known by obj's namespace and name is removed, provided it has
// obj's UID (an empty UID matches any), and its dependents are looked at. A
// node of the same name with another UID is a newer object and stays.
func (g *Graph) ObserveDeleted(obj *Object, sink Sink) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gk, ok := g.groupKinds[schema.GroupKind{Group: obj.Group, Kind: obj.Kind}]
	if !ok || stale(gk, obj.Monitor) {
		return
	}
	if n := gk.byName.get(namespaceOf(obj.Namespace), obj.Name); n != nil && (obj.UID == "" || n.uid.is(obj.UID)) {
		g.removeObserved(n, sink)
	}
}

// removeObserved removes a node whose object is gone.
func (g *Graph) removeObserved(n *Node, sink Sink) {
	id := n.identity()
	if !n.has(flagBeingDeleted) && len(n.owners()) > 0 {
		sink.DeletionObserved(id, n.owners())
	}
	g.drop(n, id, sink)
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
	g.uids.remove(n)
	n.kind.gk.byName.remove(n)
	if !n.has(flagObserved) {
		g.virtual--
	}
	g.unlinkOwners(n, sink)
	n.set(flagRemoved, true)
	delete(g.deleting, n)
}

// unlinkOwners removes n from its owners' dependents; owners waiting for
// their dependents are looked at.
func (g *Graph) unlinkOwners(n *Node, sink Sink) {
	for i, o := range n.owners() {
		if containsOwner(n.owners()[:i], o.uid) {
			continue
		}
		owner, ok := g.uids.get(o.uid)
		if !ok {
			continue
		}
		owner.removeDependent(n)
		if owner.has(flagDeletingDependents) {
			sink.AttemptToDelete(owner)
		}
	}
}

// Removal says why the collector stops watching a kind, which decides what
// RemoveKind does with its nodes.
type Removal int

const (
	// KindDeleted: the kind's CustomResourceDefinition was observed
	// deleted, which deletes every object of the kind first. Its nodes are
	// removed like observed deletions (into the absent-owner cache, their
	// dependents looked at), virtual nodes of the kind included.
	KindDeleted Removal = iota
	// KindUnserved: the API server no longer serves the kind (an API group
	// switched off, an aggregated API removed, a discovery answer that
	// omitted it). Its objects may well exist: every node stays, with its
	// owner links, as an unobserved node that the collector must verify
	// before it may act on it or on its dependents. They are observed again
	// when the kind is served again.
	KindUnserved
	// KindIgnored: the policy ignores the kind. Its objects exist but are
	// invisible to the collector, as they are to kube-controller-manager's:
	// nodes that own something become virtual owners, to be verified with
	// live reads like any owner the collector does not watch; the others
	// leave the graph.
	KindIgnored
)

func (r Removal) String() string {
	switch r {
	case KindDeleted:
		return "deleted"
	case KindUnserved:
		return "unserved"
	case KindIgnored:
		return "ignored"
	}
	return "unknown"
}

// RemoveKind handles the nodes of a kind the collector stops watching, as
// the Removal says. Observations by the kind's earlier monitors are ignored
// from then on. It returns the number of nodes removed or made unobserved.
func (g *Graph) RemoveKind(key schema.GroupKind, how Removal, sink Sink) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	gk, ok := g.groupKinds[key]
	if !ok {
		return 0
	}
	g.monitors++
	gk.monitor = g.monitors // no monitor of this generation exists
	count := 0
	for _, n := range gk.byName.nodes() {
		count++
		switch how {
		case KindDeleted:
			g.removeObserved(n, sink)
		case KindUnserved:
			gk.byName.remove(n)
			n.set(flagObserved, false)
			g.virtual++
			sink.AttemptToDelete(n)
		case KindIgnored:
			gk.byName.remove(n)
			if n.dependentCount() == 0 {
				g.removeNode(n, sink)
				continue
			}
			// Keep the node as a virtual owner of its dependents.
			g.unlinkOwners(n, sink)
			n.setOwnerRefs(nil)
			n.state, n.meta = 0, nil
			delete(g.deleting, n)
			g.virtual++
			sink.AttemptToDelete(n)
		}
	}
	if how == KindDeleted {
		// Virtual nodes of the kind name objects that no longer exist.
		for _, n := range g.uids.nodes() {
			if !n.has(flagObserved) && n.kind.gk == gk {
				g.drop(n, n.identity(), sink)
				count++
			}
		}
	}
	return count
}

// KindLen returns the number of observed nodes of a kind.
func (g *Graph) KindLen(key schema.GroupKind) int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if gk, ok := g.groupKinds[key]; ok {
		return gk.byName.count
	}
	return 0
}
