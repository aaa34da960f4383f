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
	"encoding/binary"
	"strconv"
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The graph is the monitors' store. A monitor's reflector hands every object
// it lists or watches straight to Observe; no informer store keeps the
// object beside its node. So an observed node holds, besides its links,
// what the collector reads of "the cached object": the resourceVersion its
// preconditions name, the deletion timestamp, the finalizers, the owner
// references exactly as the object has them, and whether it is protected.
// Lookup gives them back, by kind, namespace and name (the index a store
// keeps for its informer); the graph's own index is by UID.
//
// The common object (not being deleted, no finalizers, a numeric
// resourceVersion, references in canonical form, no expiry annotation)
// costs the node 8 bytes for the resourceVersion, 8 for its creation time
// and a nil pointer; the rest sits in a nodeMeta that only the objects
// that need it allocate. Finalizer sets and expiry annotations are
// interned.

// nodeMeta is the part of an observed object's metadata that most objects
// do without.
type nodeMeta struct {
	// resourceVersion, when the node's rv is zero, exactly as observed.
	resourceVersion string
	// deletion is the deletionTimestamp in Unix nanoseconds, while the
	// node has flagBeingDeleted.
	deletion int64
	// finalizers are the finalizers joined by NUL (which a finalizer name,
	// a qualified name, cannot contain); zero when there are none.
	finalizers unique.Handle[string]
	// refs are the owner references exactly as observed, when the node's
	// OwnerRefs would not give them back (an apiVersion with an empty
	// group before its slash): rare, and kept whole.
	refs []metav1.OwnerReference
	// expiry is the object's expiry annotations (expiryKey); zero when it
	// has neither.
	expiry unique.Handle[string]
}

// OwnerRef.opt bits.
const (
	refControllerSet uint8 = 1 << iota
	refController
	refBlockSet
)

const finalizerSeparator = "\x00"

// refFlags returns the block flag and the opt bits of an owner reference.
func refFlags(r *metav1.OwnerReference) (block bool, opt uint8) {
	if r.Controller != nil {
		opt |= refControllerSet
		if *r.Controller {
			opt |= refController
		}
	}
	if r.BlockOwnerDeletion != nil {
		opt |= refBlockSet
		block = *r.BlockOwnerDeletion
	}
	return block, opt
}

// ownerRef is the node's record of reference r, by key, to owner (nil: not
// in the graph) of kind k; it shares the owner node's name string when the
// reference names it so.
func ownerRef(r *metav1.OwnerReference, key uidKey, owner *Node, k *Kind) OwnerRef {
	block, opt := refFlags(r)
	ref := OwnerRef{uid: key, Name: r.Name, Kind: k, Block: block, opt: opt}
	if owner != nil && owner.name == r.Name {
		ref.Name = owner.name
	}
	return ref
}

// ownerReference returns the reference as the object has it, with fresh
// optional booleans.
func (o *OwnerRef) ownerReference() metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: o.Kind.apiVersion, Kind: o.Kind.gk.kind, Name: o.Name, UID: o.uid.UID()}
	if o.opt&refControllerSet != 0 {
		v := o.opt&refController != 0
		r.Controller = &v
	}
	if o.opt&refBlockSet != 0 {
		v := o.Block
		r.BlockOwnerDeletion = &v
	}
	return r
}

// store keeps what the collector reads of obj in n (the owner links are
// setOwners' business).
func (n *Node) store(obj *Object) {
	var m nodeMeta
	rv := numericRV(obj.ResourceVersion)
	if rv == 0 {
		m.resourceVersion = obj.ResourceVersion
	}
	n.setRV(rv)
	if obj.DeletionTimestamp != nil {
		m.deletion = obj.DeletionTimestamp.UnixNano()
	}
	if len(obj.Finalizers) > 0 {
		m.finalizers = unique.Make(strings.Join(obj.Finalizers, finalizerSeparator))
	}
	for i := range obj.OwnerReferences {
		if strings.HasPrefix(obj.OwnerReferences[i].APIVersion, "/") {
			m.refs = make([]metav1.OwnerReference, len(obj.OwnerReferences))
			for j := range obj.OwnerReferences {
				obj.OwnerReferences[j].DeepCopyInto(&m.refs[j])
			}
			break
		}
	}
	if obj.Expiry.Any() {
		if n.meta != nil && n.meta.expiry != (unique.Handle[string]{}) && expiryOfKey(n.meta.expiry.Value()) == obj.Expiry {
			m.expiry = n.meta.expiry // unchanged: no new key to intern
		} else {
			m.expiry = obj.Expiry.key()
		}
	}
	n.set(flagProtected, obj.Protected)
	n.created = obj.Created.Unix()
	switch {
	case m.resourceVersion == "" && m.deletion == 0 && m.finalizers == (unique.Handle[string]{}) && m.refs == nil && m.expiry == (unique.Handle[string]{}):
		n.meta = nil
	case n.meta != nil && m.refs == nil && n.meta.refs == nil && n.meta.resourceVersion == m.resourceVersion &&
		n.meta.deletion == m.deletion && n.meta.finalizers == m.finalizers && n.meta.expiry == m.expiry:
		// Unchanged: keep the one allocated.
	default:
		stored := m // only this copy escapes: the common cases allocate nothing
		n.meta = &stored
	}
}

// numericRV returns rv as a number if it is one in canonical decimal form
// (so that formatting the number gives rv back exactly) no larger than
// maxRV, zero otherwise.
func numericRV(rv string) uint64 {
	if rv == "" || rv[0] == '0' || len(rv) > 20 {
		return 0
	}
	for i := 0; i < len(rv); i++ {
		if rv[i] < '0' || rv[i] > '9' {
			return 0
		}
	}
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || v > maxRV {
		return 0
	}
	return v
}

// resourceVersion returns the resourceVersion exactly as observed.
func (n *Node) resourceVersion() string {
	switch {
	case n.rv() != 0:
		return strconv.FormatUint(n.rv(), 10)
	case n.meta != nil:
		return n.meta.resourceVersion
	}
	return ""
}

// object returns what n holds of its object, in new memory (strings
// shared).
func (n *Node) object() *Object {
	obj := &Object{
		Group: n.kind.gk.group, Version: n.kind.version, Kind: n.kind.gk.kind,
		Namespace: n.namespace.Value(), Name: n.name, UID: n.uid.UID(),
		ResourceVersion: n.resourceVersion(),
		Protected:       n.has(flagProtected),
	}
	if n.has(flagObserved) && n.created != zeroTime {
		obj.Created = time.Unix(n.created, 0)
	}
	var m nodeMeta
	if n.meta != nil {
		m = *n.meta
	}
	if m.expiry != (unique.Handle[string]{}) {
		obj.Expiry = expiryOfKey(m.expiry.Value())
	}
	if n.has(flagBeingDeleted) {
		t := metav1.NewTime(time.Unix(0, m.deletion))
		obj.DeletionTimestamp = &t
	}
	if m.finalizers != (unique.Handle[string]{}) {
		obj.Finalizers = strings.Split(m.finalizers.Value(), finalizerSeparator)
	}
	switch {
	case m.refs != nil:
		obj.OwnerReferences = make([]metav1.OwnerReference, len(m.refs))
		for i := range m.refs {
			m.refs[i].DeepCopyInto(&obj.OwnerReferences[i])
		}
	case n.ownerLen > 0:
		owners := n.owners()
		obj.OwnerReferences = make([]metav1.OwnerReference, len(owners))
		for i := range owners {
			obj.OwnerReferences[i] = owners[i].ownerReference()
		}
	}
	return obj
}

// Lookup returns the object of a kind (any version) that its monitor
// observed at namespace/name, as last observed: a new Object, the caller's.
func (g *Graph) Lookup(key schema.GroupKind, namespace, name string) (*Object, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	gk, ok := g.groupKinds[key]
	if !ok {
		return nil, false
	}
	n := gk.byName.get(namespaceOf(namespace), name)
	if n == nil {
		return nil, false
	}
	return n.object(), true
}

// Listing is the namespaces and names a monitor's list contained.
type Listing struct {
	names map[nsName]struct{}
}

// NewListing returns an empty Listing with room for n names.
func NewListing(n int) *Listing { return &Listing{names: make(map[nsName]struct{}, n)} }

// Add records that the list contained namespace/name.
func (l *Listing) Add(namespace, name string) {
	l.names[nsName{namespaceOf(namespace), name}] = struct{}{}
}

// Unlisted calls f with the namespace, name and UID of every observed node
// of a kind that the listing lacks (under the read lock: f must not call
// into the graph).
func (g *Graph) Unlisted(key schema.GroupKind, l *Listing, f func(namespace, name string, uid types.UID)) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if gk, ok := g.groupKinds[key]; ok {
		gk.byName.each(func(n *Node) {
			if _, listed := l.names[nsName{n.namespace, n.name}]; !listed {
				f(n.namespace.Value(), n.name, n.uid.UID())
			}
		})
	}
}

// zeroTime is the zero time.Time in Unix seconds: a creation time the
// object did not have.
var zeroTime = time.Time{}.Unix()

// ExpiryAnnotations are the values of an object's expiry annotations
// (ownergc.io/ttl and ownergc.io/expires), as the graph keeps them for the
// expiry collector: the graph neither names nor reads them.
type ExpiryAnnotations struct {
	TTL, Expires       string
	HasTTL, HasExpires bool
}

// Any reports whether the object carries either annotation.
func (a ExpiryAnnotations) Any() bool { return a.HasTTL || a.HasExpires }

// key encodes the annotations as one string, which nodes intern: a byte of
// presence flags, the length of the ttl as a varint, the ttl, the expiry.
func (a ExpiryAnnotations) key() unique.Handle[string] {
	var flags byte
	if a.HasTTL {
		flags |= 1
	}
	if a.HasExpires {
		flags |= 2
	}
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(a.TTL)+len(a.Expires))
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(a.TTL)))
	b = append(append(b, a.TTL...), a.Expires...)
	return unique.Make(string(b))
}

// expiryOfKey decodes key.
func expiryOfKey(key string) ExpiryAnnotations {
	flags, rest := key[0], key[1:]
	n, w := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	rest = rest[w:]
	return ExpiryAnnotations{TTL: rest[:n], Expires: rest[n:], HasTTL: flags&1 != 0, HasExpires: flags&2 != 0}
}

// ScanExpiry calls f with what the graph holds of every observed object
// that carries an expiry annotation, and of every observed object of the
// kinds all selects (the kinds some expiry rule names): the expiry
// collector's schedule, built from the graph without a list. It runs
// under the read lock: f must not call into the graph.
func (g *Graph) ScanExpiry(all func(schema.GroupKind) bool, f func(*Object)) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for key, gk := range g.groupKinds {
		every := all != nil && all(key)
		gk.byName.each(func(n *Node) {
			if every || (n.meta != nil && n.meta.expiry != (unique.Handle[string]{})) {
				f(n.object())
			}
		})
	}
}

// ObservedCount returns how many objects of a kind the graph holds as
// observed (its virtual and unverified nodes left out).
func (g *Graph) ObservedCount(key schema.GroupKind) int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if gk, ok := g.groupKinds[key]; ok {
		return gk.byName.count
	}
	return 0
}
