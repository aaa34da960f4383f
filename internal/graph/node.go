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
	"hash/maphash"
	"unique"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
)

// Node flags.
const (
	// flagObserved: the object was seen through an informer. A node without
	// it is virtual: an owner that some object references and that has not
	// been observed (its identity comes from a reference to it), or an
	// object whose resource is no longer served, kept with its owners until
	// it can be verified again.
	flagObserved uint8 = 1 << iota
	// flagBeingDeleted: the object has a deletionTimestamp.
	flagBeingDeleted
	// flagDeletingDependents: being deleted with the foregroundDeletion
	// finalizer: waiting for its blocking dependents to be deleted.
	flagDeletingDependents
	// flagOrphaning: being deleted with the orphan finalizer.
	flagOrphaning
	// flagRemoved: the node is no longer in the graph. Queues may still hold
	// it; workers skip it.
	flagRemoved
	// flagProtected: the object is protected from collection (see
	// Object.Protected).
	flagProtected
)

// OwnerRef is a node's reference to one owner: the coordinates it names the
// owner by (group, version, kind, name and UID; the namespace is the
// dependent's) and whether it blocks the owner's foreground deletion. The UID
// string shares its bytes with the owner node's UID, the kind is interned. A
// node keeps every reference of its object, in order, duplicates included:
// the API server accepts several references to one UID that differ in a
// field, and each counts.
type OwnerRef struct {
	uid   uidKey
	Name  string
	Kind  *Kind
	Block bool
	// opt records the optional booleans as the object has them (whether
	// controller and blockOwnerDeletion are set, and controller's value),
	// so that the reference can be given back exactly (see Lookup).
	opt uint8
}

// Node is one object in the graph (or a virtual owner). Nodes are compact:
// they hold the links of the ownership graph and what the collectors read
// of an observed object (its resourceVersion, deletion state, finalizers,
// owner references and protection; for expiry, its creation time and its
// expiry annotations), nothing else. The graph is the monitors' store:
// there is no other copy of the object (see store.go).
//
// A Node's fields are guarded by the owning Graph's lock: read them through
// Graph methods (Describe, Owner, Dependents). A *Node is a stable handle that
// queues may hold after the node left the graph (see NodeState.Removed).
type Node struct {
	uid       uidKey
	kind      *Kind
	namespace namespace
	name      string
	// ownerData and ownerLen are the owner references (owners, setOwnerRefs):
	// a slice without its capacity, which the graph never uses (each is
	// allocated to its length), so that the creation time fits in the 96
	// bytes a node took before it.
	ownerData  *OwnerRef
	ownerLen   uint32
	dependents *dependents
	// meta holds what few objects have; nil for most (see nodeMeta).
	meta *nodeMeta
	// state is the flags (low 8 bits) and the resourceVersion of an
	// observed object when it is a number below 2^56 in canonical decimal
	// form, zero otherwise (meta has it then): one word.
	state uint64
	// created is an observed object's creationTimestamp in Unix seconds,
	// the precision the API server keeps (expiry counts from it).
	created int64
}

// owners returns the node's owner references, every one, in order.
func (n *Node) owners() []OwnerRef { return unsafe.Slice(n.ownerData, n.ownerLen) }

// setOwnerRefs makes refs the node's owner references; the node keeps refs'
// array up to its length (a reference may appear at most once per byte of
// the object, far below 2^32).
func (n *Node) setOwnerRefs(refs []OwnerRef) {
	n.ownerData, n.ownerLen = unsafe.SliceData(refs), uint32(len(refs))
}

// namespace is an interned namespace: nodes of one namespace share it, and
// it compares as a pointer.
type namespace = unique.Handle[string]

// clusterScoped is the namespace of cluster-scoped objects.
var clusterScoped = unique.Make("")

func namespaceOf(s string) namespace { return unique.Make(s) }

const (
	flagBits = 8
	flagMask = 1<<flagBits - 1
	// maxRV is the largest resourceVersion the state word holds.
	maxRV = 1<<(64-flagBits) - 1
)

func (n *Node) has(f uint8) bool { return uint8(n.state)&f != 0 }

func (n *Node) set(f uint8, on bool) {
	if on {
		n.state |= uint64(f)
	} else {
		n.state &^= uint64(f)
	}
}

// rv returns the numeric resourceVersion, zero if there is none.
func (n *Node) rv() uint64 { return n.state >> flagBits }

func (n *Node) setRV(rv uint64) { n.state = rv<<flagBits | n.state&flagMask }

// identity returns the node's coordinates.
func (n *Node) identity() Identity {
	return Identity{
		Group:     n.kind.gk.group,
		Version:   n.kind.version,
		Kind:      n.kind.gk.kind,
		Namespace: n.namespace.Value(),
		Name:      n.name,
		UID:       n.uid.UID(),
	}
}

// refTo returns n's first reference to the owner uid as n states it, in
// n's namespace; fallback's coordinates when n has none (it always has one
// when it is a dependent of uid).
func (n *Node) refTo(uid uidKey, fallback Identity) Identity {
	for _, o := range n.owners() {
		if o.uid == uid {
			return Identity{Group: o.Kind.gk.group, Version: o.Kind.version, Kind: o.Kind.gk.kind,
				Namespace: n.namespace.Value(), Name: o.Name, UID: uid.UID()}
		}
	}
	fallback.Namespace = n.namespace.Value()
	return fallback
}

// UID returns the node's UID; it never changes.
func (n *Node) UID() types.UID { return n.uid.UID() }

// UID returns the UID of the owner the reference names.
func (o *OwnerRef) UID() types.UID { return o.uid.UID() }

// dependents is the set of a node's dependents: a slice while small, a
// nodeTable keyed by the dependent itself once large enough that linear
// removal would cost (8 bytes a slot, where a map from dependent to its
// position in the slice cost about 32 per dependent).
type dependents struct {
	list []*Node
	set  *nodeTable
}

const dependentsIndexThreshold = 32

func pointerHash(n *Node) uint64 { return maphash.Comparable(seed, n) }

func (d *dependents) len() int {
	if d.set != nil {
		return d.set.count
	}
	return len(d.list)
}

func (d *dependents) add(n *Node) {
	if d.set != nil {
		if d.set.find(pointerHash(n), func(m *Node) bool { return m == n }) == nil {
			d.set.insert(n)
		}
		return
	}
	for _, m := range d.list {
		if m == n {
			return
		}
	}
	d.list = append(d.list, n)
	if len(d.list) > dependentsIndexThreshold {
		d.set = &nodeTable{hash: pointerHash}
		for _, m := range d.list {
			d.set.insert(m)
		}
		d.list = nil
	}
}

func (d *dependents) remove(n *Node) {
	if d.set != nil {
		d.set.remove(n)
		if d.set.count <= dependentsIndexThreshold/2 {
			d.list = d.set.nodes()
			d.set = nil
		}
		return
	}
	for i, m := range d.list {
		if m == n {
			last := len(d.list) - 1
			d.list[i] = d.list[last]
			d.list[last] = nil
			d.list = d.list[:last]
			return
		}
	}
}

func (d *dependents) each(f func(*Node)) {
	if d.set != nil {
		d.set.each(f)
		return
	}
	for _, m := range d.list {
		f(m)
	}
}

func (n *Node) dependentCount() int {
	if n.dependents == nil {
		return 0
	}
	return n.dependents.len()
}

func (n *Node) addDependent(dep *Node) {
	if n.dependents == nil {
		n.dependents = &dependents{}
	}
	n.dependents.add(dep)
}

func (n *Node) removeDependent(dep *Node) {
	if n.dependents == nil {
		return
	}
	n.dependents.remove(dep)
	if n.dependents.len() == 0 {
		n.dependents = nil
	}
}

// eachDependent calls f with every dependent; f must not change n's
// dependents.
func (n *Node) eachDependent(f func(*Node)) {
	if n.dependents != nil {
		n.dependents.each(f)
	}
}

// blocks reports whether dep blocks owner's deletion: whether any of its
// references to owner has blockOwnerDeletion set.
func (dep *Node) blocks(owner uidKey) bool { return blocksIn(dep.owners(), owner) }

func blocksIn(owners []OwnerRef, uid uidKey) bool {
	for _, o := range owners {
		if o.uid == uid && o.Block {
			return true
		}
	}
	return false
}
