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
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// NodeState is a snapshot of a node taken under the graph's read lock.
type NodeState struct {
	Identity Identity
	// Observed is false for a virtual node.
	Observed bool
	// Removed: the node left the graph after it was queued.
	Removed            bool
	BeingDeleted       bool
	DeletingDependents bool
	Orphaning          bool
	// Dependents is the number of dependents.
	Dependents int
	// HasOwners: the node has owner references (an unobserved node with
	// owners is one whose kind stopped being served).
	HasOwners bool
	// DependentDeletingDependents: some dependent is itself being deleted in
	// the foreground (a hint of an ownership cycle).
	DependentDeletingDependents bool
}

// Describe returns a snapshot of n.
func (g *Graph) Describe(n *Node) NodeState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	s := NodeState{
		Identity:           n.identity(),
		Observed:           n.has(flagObserved),
		Removed:            n.has(flagRemoved),
		BeingDeleted:       n.has(flagBeingDeleted),
		DeletingDependents: n.has(flagDeletingDependents),
		Orphaning:          n.has(flagOrphaning),
		Dependents:         n.dependentCount(),
		HasOwners:          len(n.owners()) > 0,
	}
	n.eachDependent(func(d *Node) {
		if d.has(flagDeletingDependents) {
			s.DependentDeletingDependents = true
		}
	})
	return s
}

// OwnerState is what the graph knows about the object with a UID.
type OwnerState struct {
	// Known: a node with the UID is in the graph.
	Known    bool
	Identity Identity
	// Observed is false for a virtual node.
	Observed           bool
	BeingDeleted       bool
	DeletingDependents bool
}

// Owner returns what the graph knows about the object with the given UID.
func (g *Graph) Owner(uid types.UID) OwnerState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodeOf(uid)
	if !ok {
		return OwnerState{}
	}
	return OwnerState{
		Known:              true,
		Identity:           n.identity(),
		Observed:           n.has(flagObserved),
		BeingDeleted:       n.has(flagBeingDeleted),
		DeletingDependents: n.has(flagDeletingDependents),
	}
}

// OwnerGone reports whether the graph confirmed the owner with UID owner
// absent while the object with UID dependent referenced it: the dependent's
// node still names that owner and no node has its UID any more. A node
// that dependents reference leaves the graph only when its object was
// observed deleted or a read found nothing at the coordinates they name,
// so the answer holds when the owner's kind is no longer served and the
// absent-owner cache has forgotten it. A reference the graph has not
// observed yet is never reported gone.
func (g *Graph) OwnerGone(dependent, owner types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodeOf(dependent)
	if !ok || !slices.ContainsFunc(n.owners(), func(o OwnerRef) bool { return o.uid.is(owner) }) {
		return false
	}
	_, known := g.nodeOf(owner)
	return !known
}

// Node returns the node with the given UID, or nil.
func (g *Graph) Node(uid types.UID) *Node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, _ := g.nodeOf(uid)
	return n
}

// NodeFor returns the observed node of a kind by namespace and name, or nil.
func (g *Graph) NodeFor(group, kind, namespace, name string) *Node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if gk, ok := g.groupKinds[schema.GroupKind{Group: group, Kind: kind}]; ok {
		return gk.byName.get(namespaceOf(namespace), name)
	}
	return nil
}

// DependentState is a snapshot of one dependent of a node.
type DependentState struct {
	Node     *Node
	Identity Identity
	// Blocking: a reference of the dependent to the owner blocks the
	// owner's foreground deletion.
	Blocking           bool
	DeletingDependents bool
	// Observed is false for a dependent whose kind is not served now.
	Observed bool
}

// Dependents returns snapshots of n's dependents; with blockingOnly, only
// those with a reference to n that has blockOwnerDeletion set.
func (g *Graph) Dependents(n *Node, blockingOnly bool) []DependentState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []DependentState
	n.eachDependent(func(d *Node) {
		blocking := d.blocks(n.uid)
		if blockingOnly && !blocking {
			return
		}
		out = append(out, DependentState{
			Node:               d,
			Identity:           d.identity(),
			Blocking:           blocking,
			DeletingDependents: d.has(flagDeletingDependents),
			Observed:           d.has(flagObserved),
		})
	})
	return out
}

// DumpNode is one node of a graph dump.
type DumpNode struct {
	Identity           Identity
	Virtual            bool
	BeingDeleted       bool
	DeletingDependents bool
	Orphaning          bool
	// MissingFromGraph: an owner some node references whose node is gone.
	MissingFromGraph bool
	Owners           []OwnerRef
}

// Dump returns the whole graph, or with uids the nodes connected to those
// (their owners and dependents, transitively), in no particular order.
func (g *Graph) Dump(uids ...types.UID) []DumpNode {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var nodes []*Node
	if len(uids) == 0 {
		nodes = g.uids.nodes()
	} else {
		seen := make(map[*Node]bool)
		queue := make([]uidKey, 0, len(uids))
		for _, u := range uids {
			queue = append(queue, uidKeyOf(u))
		}
		for i := 0; i < len(queue); i++ {
			n, ok := g.uids.get(queue[i])
			if !ok || seen[n] {
				continue
			}
			seen[n] = true
			nodes = append(nodes, n)
			for _, o := range n.owners() {
				queue = append(queue, o.uid)
			}
			n.eachDependent(func(d *Node) { queue = append(queue, d.uid) })
		}
	}
	out := make([]DumpNode, 0, len(nodes))
	missing := make(map[uidKey]Identity)
	for _, n := range nodes {
		out = append(out, DumpNode{
			Identity:           n.identity(),
			Virtual:            !n.has(flagObserved),
			BeingDeleted:       n.has(flagBeingDeleted),
			DeletingDependents: n.has(flagDeletingDependents),
			Orphaning:          n.has(flagOrphaning),
			Owners:             append([]OwnerRef(nil), n.owners()...),
		})
		for _, o := range n.owners() {
			if _, ok := g.uids.get(o.uid); !ok {
				missing[o.uid] = Identity{Group: o.Kind.gk.group, Version: o.Kind.version, Kind: o.Kind.gk.kind, Namespace: n.namespace.Value(), Name: o.Name, UID: o.uid.UID()}
			}
		}
	}
	for _, id := range missing {
		out = append(out, DumpNode{Identity: id, MissingFromGraph: true})
	}
	return out
}

// Deletion is an object being deleted in the foreground or with the orphan
// finalizer, as the graph knows it.
type Deletion struct {
	Node     *Node
	Identity Identity
	// Observed is false while its kind is not watched (not served).
	Observed bool
	// Foreground: deleting its dependents (foregroundDeletion); otherwise
	// orphaning them.
	Foreground bool
	// Dependents is the number of its dependents; Blocking of those that
	// block a foreground deletion.
	Dependents, Blocking int
}

// Deletions returns the deletions in progress.
func (g *Graph) Deletions() []Deletion {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Deletion, 0, len(g.deleting))
	for n := range g.deleting {
		d := Deletion{Node: n, Identity: n.identity(), Observed: n.has(flagObserved),
			Foreground: n.has(flagDeletingDependents), Dependents: n.dependentCount()}
		n.eachDependent(func(dep *Node) {
			if dep.blocks(n.uid) {
				d.Blocking++
			}
		})
		out = append(out, d)
	}
	return out
}
