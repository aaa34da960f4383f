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

package main

import (
	"cmp"
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/explain"
)

// objectRef names an object, as the manager's explanations do.
type objectRef = explain.Object

// Tree directions.
const (
	DirectionDependents = "Dependents"
	DirectionOwners     = "Owners"
)

// Node statuses; an object that exists has none.
const (
	// NodeDangling: the owner a reference names does not exist.
	NodeDangling = "Dangling"
	// NodeUnverifiable: the owner's kind is not served (or the reference
	// cannot be valid): nobody can tell whether it exists.
	NodeUnverifiable = "Unverifiable"
	// NodeUnknown: the owner could not be read.
	NodeUnknown = "Unknown"
	// NodeCycle: the object is already on the path from the root.
	NodeCycle = "Cycle"
)

// Tree is the ownership tree around an object.
type Tree struct {
	// Direction is Dependents (the objects below the root) or Owners (the
	// objects above it).
	Direction string `json:"direction"`
	Root      *Node  `json:"root"`
	// Incomplete says what could not be read: the objects there are
	// missing from the tree.
	Incomplete []string `json:"incomplete,omitempty"`
}

// Node is one object of a tree.
type Node struct {
	Object            objectRef    `json:"object"`
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	Finalizers        []string     `json:"finalizers,omitempty"`
	// Reference is the owner reference that links the node to its parent in
	// the tree: the node's reference to its parent (Dependents), or the
	// parent's reference to the node (Owners).
	Reference *Reference `json:"reference,omitempty"`
	// OtherOwners counts the node's references to owners other than its
	// parent (Dependents): it is not collected while any of them exists.
	OtherOwners int `json:"otherOwners,omitempty"`
	// Status is empty for an object that exists, Dangling, Unverifiable,
	// Unknown or Cycle otherwise; Reason says why.
	Status   string  `json:"status,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Children []*Node `json:"children,omitempty"`
}

// Reference is what an owner reference says besides the owner's name.
type Reference struct {
	Controller         bool `json:"controller,omitempty"`
	BlockOwnerDeletion bool `json:"blockOwnerDeletion,omitempty"`
}

func referenceOf(r metav1.OwnerReference) *Reference {
	return &Reference{Controller: r.Controller != nil && *r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion}
}

// newNode makes the node of an object that exists.
func newNode(ref objectRef, m metav1.ObjectMeta) *Node {
	n := &Node{Object: ref, Finalizers: m.Finalizers, DeletionTimestamp: m.DeletionTimestamp}
	if !m.CreationTimestamp.IsZero() {
		t := m.CreationTimestamp
		n.CreationTimestamp = &t
	}
	return n
}

// Foreground reports whether the node is being deleted in the foreground.
func (n *Node) Foreground() bool {
	return n.DeletionTimestamp != nil && slices.Contains(n.Finalizers, metav1.FinalizerDeleteDependents)
}

// Orphaning reports whether the node is being deleted with the orphan policy.
func (n *Node) Orphaning() bool {
	return n.DeletionTimestamp != nil && slices.Contains(n.Finalizers, metav1.FinalizerOrphanDependents)
}

// BlockingChildren counts the children whose reference blocks the node's
// deletion.
func (n *Node) BlockingChildren() int {
	c := 0
	for _, ch := range n.Children {
		if ch.Reference != nil && ch.Reference.BlockOwnerDeletion && ch.Status == "" {
			c++
		}
	}
	return c
}

// dependentsIndex maps an owner's UID to the objects whose references name
// it, each with that reference.
type dependentsIndex map[types.UID][]dependentEdge

type dependentEdge struct {
	obj *listedObject
	ref metav1.OwnerReference
}

func indexDependents(objects []*listedObject) dependentsIndex {
	idx := dependentsIndex{}
	for _, o := range objects {
		seen := map[types.UID]bool{}
		for _, r := range o.meta.OwnerReferences {
			if seen[r.UID] {
				continue // a duplicate reference
			}
			seen[r.UID] = true
			idx[r.UID] = append(idx[r.UID], dependentEdge{obj: o, ref: r})
		}
	}
	for uid := range idx {
		slices.SortFunc(idx[uid], func(a, b dependentEdge) int {
			return cmp.Or(cmp.Compare(a.obj.kind.Kind, b.obj.kind.Kind), cmp.Compare(a.obj.meta.Namespace, b.obj.meta.Namespace),
				cmp.Compare(a.obj.meta.Name, b.obj.meta.Name))
		})
	}
	return idx
}

// buildDependents builds the tree of the objects below root, recursively,
// from the listed objects.
func buildDependents(root objectRef, rootMeta metav1.ObjectMeta, objects []*listedObject) *Node {
	idx := indexDependents(objects)
	n := newNode(root, rootMeta)
	addDependents(n, idx, map[types.UID]bool{root.UID: true})
	return n
}

func addDependents(n *Node, idx dependentsIndex, path map[types.UID]bool) {
	for _, e := range idx[n.Object.UID] {
		c := newNode(e.obj.ref(), e.obj.meta)
		c.Reference = referenceOf(e.ref)
		c.OtherOwners = otherOwners(e.obj.meta.OwnerReferences, n.Object.UID)
		n.Children = append(n.Children, c)
		if path[c.Object.UID] {
			c.Status, c.Reason = NodeCycle, "it is already on the path above: the references form a cycle"
			continue
		}
		path[c.Object.UID] = true
		addDependents(c, idx, path)
		delete(path, c.Object.UID)
	}
}

// otherOwners counts the owners, other than parent, that refs name.
func otherOwners(refs []metav1.OwnerReference, parent types.UID) int {
	seen := map[types.UID]bool{parent: true}
	for _, r := range refs {
		seen[r.UID] = true
	}
	return len(seen) - 1
}

// buildOwners builds the tree of the objects above root, recursively,
// looking each owner up.
func buildOwners(ctx context.Context, root objectRef, rootMeta metav1.ObjectMeta, lookup ownerLookupFunc) *Node {
	n := newNode(root, rootMeta)
	addOwners(ctx, n, rootMeta.OwnerReferences, lookup, map[types.UID]bool{root.UID: true})
	return n
}

func addOwners(ctx context.Context, n *Node, refs []metav1.OwnerReference, lookup ownerLookupFunc, path map[types.UID]bool) {
	for _, r := range refs {
		l := lookup(ctx, n.Object.Namespace, r)
		var c *Node
		if l.obj != nil {
			c = newNode(l.ref, l.obj.ObjectMeta)
		} else {
			c = &Node{Object: l.ref, Status: nodeStatus(l.status), Reason: l.reason}
		}
		c.Reference = referenceOf(r)
		n.Children = append(n.Children, c)
		if l.obj == nil {
			continue
		}
		if path[r.UID] {
			c.Status, c.Reason = NodeCycle, "it is already on the path below: the references form a cycle"
			continue
		}
		path[r.UID] = true
		addOwners(ctx, c, l.obj.OwnerReferences, lookup, path)
		delete(path, r.UID)
	}
}

// nodeStatus maps an owner status to the node status of an owner that
// could not be read.
func nodeStatus(ownerStatus string) string {
	switch ownerStatus {
	case explain.OwnerDangling:
		return NodeDangling
	case explain.OwnerUnverifiable:
		return NodeUnverifiable
	default:
		return NodeUnknown
	}
}

func isNotFound(err error) bool  { return err != nil && apierrors.IsNotFound(err) }
func isForbidden(err error) bool { return err != nil && apierrors.IsForbidden(err) }
