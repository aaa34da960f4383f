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
)

// nodeTable is an index of nodes: an open-addressing hash table whose slots
// are the nodes themselves (linear probing, deletion by backward shift, so
// no tombstones), keyed by something each node holds (its UID, or its
// namespace and name). A slot costs 8 bytes, a quarter of what a Go map of
// the same index costs per entry before its load factor, and the table
// shrinks again when its nodes go (a Go map never does). Its load stays
// between 3/16 and 3/4.
//
// A nodeTable is not safe for concurrent use: the graph's lock guards it.
type nodeTable struct {
	slots []*Node
	count int
	// hash returns the hash of a node's key.
	hash func(*Node) uint64
	// fold, when set, maps every hash to few values: tests use it to make
	// keys collide.
	fold func(uint64) uint64
}

func (t *nodeTable) slot(h uint64) uint64 {
	if t.fold != nil {
		h = t.fold(h)
	}
	return h & uint64(len(t.slots)-1)
}

const minTableSize = 8

// seed seeds every table's hash: random per process, so that names chosen
// to collide cannot be prepared in advance.
var seed = maphash.MakeSeed()

// find returns the node whose key hashes to h and that eq accepts.
func (t *nodeTable) find(h uint64, eq func(*Node) bool) *Node {
	if t.count == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(h); ; i = (i + 1) & mask {
		n := t.slots[i]
		if n == nil {
			return nil
		}
		if eq(n) {
			return n
		}
	}
}

// insert adds n, whose key no node in the table has.
func (t *nodeTable) insert(n *Node) {
	if (t.count+1)*4 > len(t.slots)*3 {
		t.resize(max(minTableSize, len(t.slots)*2))
	}
	t.place(n)
	t.count++
}

func (t *nodeTable) place(n *Node) {
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(t.hash(n)); ; i = (i + 1) & mask {
		if t.slots[i] == nil {
			t.slots[i] = n
			return
		}
	}
}

// remove removes n itself, if present, and reports whether it was.
func (t *nodeTable) remove(n *Node) bool {
	if t.count == 0 {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	i := t.slot(t.hash(n))
	for ; t.slots[i] != n; i = (i + 1) & mask {
		if t.slots[i] == nil {
			return false
		}
	}
	// Shift back the nodes after the gap that may not sit between their
	// home slot and the gap.
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		home := t.slot(t.hash(t.slots[j]))
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nil
	t.count--
	if len(t.slots) > minTableSize && t.count*16 < len(t.slots)*3 {
		t.resize(len(t.slots) / 2)
	}
	return true
}

func (t *nodeTable) resize(size int) {
	old := t.slots
	t.slots = make([]*Node, size)
	for _, n := range old {
		if n != nil {
			t.place(n)
		}
	}
}

// each calls f with every node; f must not change the table.
func (t *nodeTable) each(f func(*Node)) {
	for _, n := range t.slots {
		if n != nil {
			f(n)
		}
	}
}

// nodes returns every node, for loops that change the table.
func (t *nodeTable) nodes() []*Node {
	out := make([]*Node, 0, t.count)
	t.each(func(n *Node) { out = append(out, n) })
	return out
}

// uidTable indexes nodes by UID.
type uidTable struct{ nodeTable }

func newUIDTable() *uidTable {
	return &uidTable{nodeTable{hash: func(n *Node) uint64 { return maphash.String(seed, string(n.uid)) }}}
}

// get returns the node with key k.
func (t *uidTable) get(k uidKey) (*Node, bool) {
	n := t.find(maphash.String(seed, string(k)), func(n *Node) bool { return n.uid == k })
	return n, n != nil
}

// nameTable indexes the observed nodes of a kind by namespace and name.
type nameTable struct{ nodeTable }

func newNameTable() *nameTable {
	return &nameTable{nodeTable{hash: func(n *Node) uint64 { return nameHash(n.namespace, n.name) }}}
}

func nameHash(ns namespace, name string) uint64 {
	return maphash.Comparable(seed, nsName{ns, name})
}

// get returns the node at namespace/name, or nil.
func (t *nameTable) get(ns namespace, name string) *Node {
	return t.find(nameHash(ns, name), func(n *Node) bool { return n.namespace == ns && n.name == name })
}

// set indexes n under its namespace and name, in place of any other node.
func (t *nameTable) set(n *Node) {
	if old := t.get(n.namespace, n.name); old != nil {
		if old == n {
			return
		}
		t.remove(old)
	}
	t.insert(n)
}
