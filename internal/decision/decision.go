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

// Package decision is the rule at the heart of ownergc — may this object
// be deleted, and how — written once. Decide takes what is known of an
// object, of each of its owners and, where the rule needs them, of its
// dependents, with the policy in force, and returns the decision with its
// reasons as data; Decision.String says it in words (words.go, the only
// place that wording lives).
//
// Three readers share it: the collector acts on it
// (internal/collector/attempt_to_delete.go), /explain renders it
// (internal/collector/explain.go), and `kubectl ownergc why` renders it,
// from the manager's answer or, without the manager, from what API reads
// establish (cmd/kubectl-ownergc/fallback.go). So what the collector does
// and what every explanation says cannot drift apart.
//
// It does no I/O and keeps no state. What its caller could not learn it
// takes as not known — an owner not read, dependents not listed, a policy
// not read — and a decision never deletes on what is not known: an owner
// that cannot be verified keeps the object, one not read makes the
// decision Unknown. Permit, the check of protection and dry-run before a
// deletion, is shared with the API-level collectors (internal/apigc).
package decision

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/policy"
)

// OwnerState is what is known of the owner an owner reference names.
type OwnerState string

const (
	// OwnerSolid: the owner exists at the referenced coordinates and is not
	// being deleted in the foreground.
	OwnerSolid OwnerState = "Solid"
	// OwnerDangling: the owner does not exist — observed deleted, in the
	// absent-owner cache, not found by a live read or found there with
	// another UID — or the reference names no object (its name cannot be
	// one path segment).
	OwnerDangling OwnerState = "Dangling"
	// OwnerWaiting: the owner is being deleted in the foreground and waits
	// for its blocking dependents.
	OwnerWaiting OwnerState = "WaitingForDependents"
	// OwnerUnverifiable: it cannot be told — its kind is not served, it
	// cannot be read, a cluster-scoped object names an owner of a
	// namespaced kind. Never a reason to delete.
	OwnerUnverifiable OwnerState = "Unverifiable"
	// OwnerUnknown: the owner was not read (an explanation spent its
	// reads, its reader may not read it): the collector reads it itself.
	OwnerUnknown OwnerState = "Unknown"
)

// Owner is one owner reference of the object and what is known of its
// owner.
type Owner struct {
	Kind, Name string
	UID        types.UID
	State      OwnerState
	// Hidden: the reader of the decision may not read the owner; its words
	// never name it.
	Hidden bool
}

// OwnerOf returns the Owner ref names, in state.
func OwnerOf(ref metav1.OwnerReference, state OwnerState) Owner {
	return Owner{Kind: ref.Kind, Name: ref.Name, UID: ref.UID, State: state}
}

// OwnerFromRead classifies the owner a reference with UID uid names from
// what a read of the referenced coordinates found: found is nil when no
// object is there. An object with another UID is another object (the
// owner was deleted and its name taken again): the owner is gone.
func OwnerFromRead(uid types.UID, found *metav1.PartialObjectMetadata) OwnerState {
	switch {
	case found == nil || found.UID != uid:
		return OwnerDangling
	case found.DeletionTimestamp != nil && slices.Contains(found.Finalizers, metav1.FinalizerDeleteDependents):
		return OwnerWaiting
	}
	return OwnerSolid
}

// Object is what is known of the object decided about.
type Object struct {
	// Resource is its resource: the policy's ignored resources and
	// propagation overrides name resources. Resource "" (its kind maps to
	// no resource) matches only what names its whole group.
	Resource  schema.GroupResource
	Namespace string
	// Name and Created are its name and creation time, and Labels its
	// labels: only expiry reads them (ExpiryOf; a Namespace's name and
	// labels are those an expiry rule selects it by).
	Name    string
	Created time.Time
	Labels  map[string]string
	// Annotations are its annotations; only ownergc.io/protected counts,
	// and for expiry ownergc.io/ttl and ownergc.io/expires.
	Annotations map[string]string
	Finalizers  []string
	// Deleting: it has a deletionTimestamp.
	Deleting bool
	// Absent: it does not exist; Referenced: objects still name it as
	// their owner (the collector has not confirmed it absent yet).
	Absent, Referenced bool
	// ReadError, when set, says why the object could not be read: nothing
	// can be decided.
	ReadError string
}

// ObjectOf returns the Object of an existing object's metadata, of
// resource gr.
func ObjectOf(m *metav1.ObjectMeta, gr schema.GroupResource) Object {
	return Object{Resource: gr, Namespace: m.Namespace, Name: m.Name, Created: m.CreationTimestamp.Time, Labels: m.Labels,
		Annotations: m.Annotations, Finalizers: m.Finalizers, Deleting: m.DeletionTimestamp != nil}
}

// Dependents is what is known of the object's dependents.
type Dependents struct {
	// Count is the number of dependents; Blocking, of those whose reference
	// to the object blocks its foreground deletion (blockOwnerDeletion).
	Count, Blocking int
	// HiddenBlocking is the number of the blocking dependents the reader
	// may not read: counted in the words, never named.
	HiddenBlocking int
	// DeletingDependents: one of them is itself being deleted in the
	// foreground (maybe an ownership cycle).
	DeletingDependents bool
	// Incomplete: some dependents could not be looked for (resources the
	// reader may not list); the counts are of those found.
	Incomplete bool
}

// Input is what a decision is made from.
type Input struct {
	Object Object
	// Owners are the object's owner references, every one, in order.
	Owners []Owner
	// Dependents returns what is known of the object's dependents. Decide
	// calls it only when the decision depends on them — an object being
	// deleted in the foreground; one whose owners are all gone or waiting,
	// some waiting — and at most once. nil: nothing is known of them.
	Dependents func() Dependents
	// Policy is the policy in force; nil when it is not known (the
	// GCPolicy could not be read): the decision is made with the defaults
	// and says so (Decision.PolicyUnknown).
	Policy *policy.Policy
	// Expiry, when set, asks for the expiry part of the decision
	// (Decision.Expiry) of an object that exists.
	Expiry *ExpiryContext
}

// Action is what the collector does with the object.
type Action string

const (
	// Keep: nothing; the object stays.
	Keep Action = "Keep"
	// Ignore: its resource is ignored by the policy: it is never written.
	Ignore Action = "Ignore"
	// Delete: delete it, with Propagation.
	Delete Action = "Delete"
	// RemoveReferences: it keeps a live owner; remove its references to
	// the owners that are gone or waiting (Decision.Remove).
	RemoveReferences Action = "RemoveReferences"
	// Protect: every owner is gone or waiting, but the policy protects it:
	// remove its references to them (Decision.Remove) instead of deleting
	// it.
	Protect Action = "Protect"
	// WaitForDependents: it is being deleted in the foreground and
	// blocking dependents remain: they are deleted first.
	WaitForDependents Action = "WaitForDependents"
	// RemoveForegroundFinalizer: it is being deleted in the foreground and
	// no blocking dependent remains: remove its foregroundDeletion
	// finalizer.
	RemoveForegroundFinalizer Action = "RemoveForegroundFinalizer"
	// Orphan: it is being deleted with the orphan policy: remove it from
	// its dependents' owner references, then its orphan finalizer.
	Orphan Action = "Orphan"
	// WaitForFinalizers: it is being deleted; other finalizers hold it,
	// nothing is the collector's to do.
	WaitForFinalizers Action = "WaitForFinalizers"
	// Absent: it does not exist.
	Absent Action = "Absent"
	// Unknown: what the decision needs was not learnt (Reason says what).
	Unknown Action = "Unknown"
)

// Writes reports whether the collector writes to carry the action out.
func (a Action) Writes() bool {
	switch a {
	case Delete, RemoveReferences, Protect, RemoveForegroundFinalizer, Orphan:
		return true
	}
	return false
}

// Reason is the rule that decided.
type Reason string

const (
	ReasonObjectNotRead        Reason = "ObjectNotRead"
	ReasonObjectAbsent         Reason = "ObjectAbsent"
	ReasonIgnored              Reason = "ResourceIgnored"
	ReasonNoOwners             Reason = "NoOwners"
	ReasonOwnerUnverifiable    Reason = "OwnerUnverifiable"
	ReasonOwnerExists          Reason = "OwnerExists"
	ReasonOwnersNotRead        Reason = "OwnersNotRead"
	ReasonProtectedNamespace   Reason = "ProtectedNamespace"
	ReasonProtectedAnnotation  Reason = "ProtectedAnnotation"
	ReasonOwnerWaiting         Reason = "OwnerWaiting"
	ReasonOwnersGone           Reason = "OwnersGone"
	ReasonBlockingDependents   Reason = "BlockingDependents"
	ReasonNoBlockingDependents Reason = "NoBlockingDependents"
	ReasonDependentsNotListed  Reason = "DependentsNotListed"
	ReasonOrphanFinalizer      Reason = "OrphanFinalizer"
	ReasonFinalizers           Reason = "Finalizers"
)

// Source says where a deletion's propagation comes from.
type Source string

const (
	// FromOrphanFinalizer, FromForegroundFinalizer: the object's own
	// finalizer asks for it.
	FromOrphanFinalizer     Source = "OrphanFinalizer"
	FromForegroundFinalizer Source = "ForegroundFinalizer"
	// FromOverride: the policy's propagation override for its resource.
	FromOverride Source = "Override"
	// FromDefault: the policy's default propagation.
	FromDefault Source = "Default"
	// FromWaitingOwner: an owner waits for it in the foreground, and it has
	// dependents of its own: they go first.
	FromWaitingOwner Source = "WaitingOwner"
)

// Decision is what the collector does with an object, and why.
type Decision struct {
	Action Action `json:"action"`
	Reason Reason `json:"reason"`
	// Propagation is a deletion's (Delete); PropagationFrom says why.
	Propagation     metav1.DeletionPropagation `json:"propagation,omitempty"`
	PropagationFrom Source                     `json:"propagationFrom,omitempty"`
	// UnblockFirst: before it is deleted in the foreground, its owner
	// references stop blocking their owners — one of its dependents is
	// itself deleted in the foreground, maybe a cycle in which owners would
	// wait for each other.
	UnblockFirst bool `json:"unblockFirst,omitempty"`
	// DryRun: the action writes and the policy's mode is DryRun: the
	// collector logs and counts it, and writes nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// PolicyUnknown: the policy in force was not known; the decision
	// assumes the defaults.
	PolicyUnknown bool `json:"policyUnknown,omitempty"`
	// Remove are the UIDs of the owners whose references the action
	// removes (RemoveReferences, Protect): the dangling, then the waiting.
	Remove []types.UID `json:"-"`
	// Expiry is when the object expires and what the expiry collector
	// does then, when asked for (Input.Expiry) and the object expires by
	// an annotation or a rule (ExpiryOf).
	Expiry *Expiry `json:"expiry,omitempty"`

	// What the words say; a decision decoded from JSON has none of it.
	object     Object
	owners     []Owner
	dependents Dependents
	fromPolicy bool
}

// Decide decides what the collector does with the object in.Object. Its
// rules, in order (the first that applies decides):
//
//   - the object could not be read: unknown; it does not exist: absent;
//   - its resource is ignored: it is never written;
//   - being deleted: with foregroundDeletion, it waits for its blocking
//     dependents, or once none remains its finalizer is removed; with
//     orphan, its dependents are orphaned; otherwise its other finalizers
//     hold it;
//   - no owner references: kept;
//   - an owner that cannot be verified: kept, whatever the others;
//   - a solid owner: kept, without its references to the owners that are
//     gone or waiting;
//   - an owner not read: unknown;
//   - protected (policy.Protection): kept, without its references to its
//     owners;
//   - an owner waiting and dependents of its own: deleted in the
//     foreground (its dependents not all listed: unknown);
//   - otherwise every owner is gone: deleted with its own orphan or
//     foregroundDeletion finalizer's propagation, or the policy's for its
//     resource.
//
// A decision that writes carries DryRun when the policy is in DryRun.
//
// Asked for (Input.Expiry), the decision also says when the object
// expires (ExpiryOf), whatever the rules above decided.
func Decide(in Input) Decision {
	d := decide(in)
	if in.Expiry != nil && in.Object.ReadError == "" && !in.Object.Absent {
		d.Expiry = ExpiryOf(in.Object, in.Policy, *in.Expiry)
	}
	return d
}

func decide(in Input) Decision {
	p := in.Policy
	d := Decision{object: in.Object, owners: in.Owners}
	if p == nil {
		p, d.PolicyUnknown = policy.Defaults(), true
	}
	d.fromPolicy = p.FromPolicy
	deps := func() Dependents {
		if in.Dependents == nil {
			return Dependents{Incomplete: true}
		}
		return in.Dependents()
	}
	o := in.Object
	switch {
	case o.ReadError != "":
		return d.is(Unknown, ReasonObjectNotRead)
	case o.Absent:
		return d.is(Absent, ReasonObjectAbsent)
	case p.Ignores(o.Resource):
		return d.is(Ignore, ReasonIgnored)
	case o.Deleting:
		return d.deleting(p, deps)
	case len(in.Owners) == 0:
		return d.is(Keep, ReasonNoOwners)
	}

	var solid, unverifiable, unknown int
	var dangling, waiting []types.UID
	for _, ow := range in.Owners {
		switch ow.State {
		case OwnerSolid:
			solid++
		case OwnerDangling:
			dangling = append(dangling, ow.UID)
		case OwnerWaiting:
			waiting = append(waiting, ow.UID)
		case OwnerUnknown:
			unknown++
		default:
			// Unverifiable, or a state this model does not know: never a
			// reason to delete.
			unverifiable++
		}
	}
	remove := append(dangling, waiting...)
	switch {
	case unverifiable > 0:
		return d.is(Keep, ReasonOwnerUnverifiable)
	case solid > 0 && len(remove) > 0:
		d.Remove = remove
		return d.writes(RemoveReferences, ReasonOwnerExists, p)
	case solid > 0:
		return d.is(Keep, ReasonOwnerExists)
	case unknown > 0:
		return d.is(Unknown, ReasonOwnersNotRead)
	}
	if perm := Permit(p, o.Namespace, o.Annotations); perm.Protected() {
		d.Remove = remove
		r := ReasonProtectedNamespace
		if perm == ProtectedByAnnotation {
			r = ReasonProtectedAnnotation
		}
		return d.writes(Protect, r, p)
	}
	if len(waiting) > 0 {
		d.dependents = deps()
		switch {
		case d.dependents.Count > 0:
			d.Propagation, d.PropagationFrom = metav1.DeletePropagationForeground, FromWaitingOwner
			d.UnblockFirst = d.dependents.DeletingDependents
			return d.writes(Delete, ReasonOwnerWaiting, p)
		case d.dependents.Incomplete:
			// In the foreground if it has dependents: not known.
			d.Propagation, d.PropagationFrom = Propagation(o.Finalizers, p, o.Resource)
			return d.is(Unknown, ReasonDependentsNotListed)
		}
	}
	d.Propagation, d.PropagationFrom = Propagation(o.Finalizers, p, o.Resource)
	return d.writes(Delete, ReasonOwnersGone, p)
}

// deleting decides about an object being deleted.
func (d Decision) deleting(p *policy.Policy, deps func() Dependents) Decision {
	switch f := d.object.Finalizers; {
	case slices.Contains(f, metav1.FinalizerDeleteDependents):
		d.dependents = deps()
		switch {
		case d.dependents.Blocking > 0:
			return d.is(WaitForDependents, ReasonBlockingDependents)
		case d.dependents.Incomplete:
			return d.is(Unknown, ReasonDependentsNotListed)
		}
		return d.writes(RemoveForegroundFinalizer, ReasonNoBlockingDependents, p)
	case slices.Contains(f, metav1.FinalizerOrphanDependents):
		return d.writes(Orphan, ReasonOrphanFinalizer, p)
	}
	return d.is(WaitForFinalizers, ReasonFinalizers)
}

func (d Decision) is(a Action, r Reason) Decision {
	d.Action, d.Reason = a, r
	return d
}

// writes is an action that writes: in DryRun, only logged and counted.
func (d Decision) writes(a Action, r Reason, p *policy.Policy) Decision {
	d.DryRun = p.DryRun
	return d.is(a, r)
}

// Propagation is how the collector deletes an object whose owners are all
// gone: its own orphan or foregroundDeletion finalizer wins, then the
// policy's propagation for its resource (an override, or the default).
func Propagation(finalizers []string, p *policy.Policy, gr schema.GroupResource) (metav1.DeletionPropagation, Source) {
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan, FromOrphanFinalizer
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground, FromForegroundFinalizer
	}
	if o, ok := p.OverrideFor(gr); ok {
		return o, FromOverride
	}
	return p.PropagationFor(gr), FromDefault
}

// Permission is what the policy lets a collector do with an object it
// decided to delete.
type Permission string

const (
	// Permitted: delete it.
	Permitted Permission = ""
	// ProtectedByNamespace, ProtectedByAnnotation: never delete it
	// (policy.Protection), whatever the mode.
	ProtectedByNamespace  Permission = "ProtectedByNamespace"
	ProtectedByAnnotation Permission = "ProtectedByAnnotation"
	// DryRun: the policy's mode is DryRun: log and count the deletion,
	// write nothing.
	DryRun Permission = "DryRun"
)

// Protected reports whether the permission is a protection.
func (p Permission) Protected() bool {
	return p == ProtectedByNamespace || p == ProtectedByAnnotation
}

// Permit says whether the policy lets a collector delete the object in
// namespace with those annotations: protection first, then the mode. The
// owner-reference collector decides with it (a protected object loses its
// references instead: Protect) and the API-level collectors check it
// before any write.
func Permit(p *policy.Policy, namespace string, annotations map[string]string) Permission {
	switch p.Protection(namespace, annotations) {
	case policy.ProtectedByAnnotation:
		return ProtectedByAnnotation
	case policy.ProtectedByNamespace:
		return ProtectedByNamespace
	}
	if p.DryRun {
		return DryRun
	}
	return Permitted
}
