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

// Package explain is the collector's explanation of one object: the JSON
// the manager serves at /explain, and that `kubectl ownergc why` prints.
// Its decision is the decision model's (internal/decision), as data
// (Verdict) and in the model's words (Decision).
//
// The endpoint authorizes each request with the caller's own RBAC: after the
// metrics server has authenticated the caller, the handler asks the API
// server whether the caller may get the object, and answers only then,
// naming only the owners and dependents the caller may also get (the others
// are counted, not named). Each request's cost is bounded (Limits): what
// an answer did not check to stay within them, it says (NotChecked).
package explain

import (
	"errors"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/decision"
)

// Path is where the manager serves explanations:
// GET /explain?group=&version=&resource=&namespace=&name= or ?uid=.
const Path = "/explain"

// Graph states of an object.
const (
	// StateObserved: the collector watches the object's kind and has
	// observed it.
	StateObserved = "Observed"
	// StateVirtual: objects name it as their owner; the collector has not
	// observed it (it may not exist, or its kind is not watched).
	StateVirtual = "Virtual"
	// StateUnverified: it was observed, then its kind stopped being served;
	// it cannot be verified until the kind is served again.
	StateUnverified = "Unverified"
	// StateIgnored: its resource is ignored by the GCPolicy.
	StateIgnored = "Ignored"
	// StateNotInGraph: the collector does not know it: it does not exist,
	// or it has no owners and no dependents and its kind is not watched,
	// or it is not observed yet.
	StateNotInGraph = "NotInGraph"
)

// Owner reference statuses: the decision model's owner states
// (decision.Owner*), but for NotChecked.
const (
	// OwnerSolid: the owner exists and is not being deleted in the
	// foreground.
	OwnerSolid = string(decision.OwnerSolid)
	// OwnerDangling: the owner does not exist (at the coordinates the
	// reference names).
	OwnerDangling = string(decision.OwnerDangling)
	// OwnerWaiting: the owner is being deleted in the foreground and waits
	// for its blocking dependents.
	OwnerWaiting = string(decision.OwnerWaiting)
	// OwnerUnverifiable: the collector cannot tell (its kind is not served,
	// it cannot be read): never a reason to delete.
	OwnerUnverifiable = string(decision.OwnerUnverifiable)
	// OwnerNotChecked: this answer did not read the owner, having spent
	// its live reads (Limits.Reads); the collector itself reads it.
	OwnerNotChecked = "NotChecked"
)

// Object names an object.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Resource is group/version/resource, or version/resource for the
	// core group, when known.
	Resource  string    `json:"resource,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
}

// Explanation is the collector's view of one object.
type Explanation struct {
	Object Object `json:"object"`
	// Graph is the object's state in the collector's graph (State*).
	Graph string `json:"graph"`
	// Deletion describes the object's deletion, if it is being deleted.
	Deletion *Deletion `json:"deletion,omitempty"`
	// Owners are the object's owner references, each classified; owners
	// the caller may not read are counted in HiddenOwners.
	Owners       []Owner `json:"owners,omitempty"`
	HiddenOwners int     `json:"hiddenOwners,omitempty"`
	// Dependents are the objects that name it as their owner; those the
	// caller may not read (or beyond the first ones) are counted in
	// HiddenDependents.
	Dependents       []Dependent `json:"dependents,omitempty"`
	HiddenDependents int         `json:"hiddenDependents,omitempty"`
	// Queue is the collector's work on the object.
	Queue Queue `json:"queue"`
	// NotChecked counts what this answer did not check to stay within its
	// limits; nil when it checked everything.
	NotChecked *NotChecked `json:"notChecked,omitempty"`
	// Decision says, in words, what the collector does with the object
	// and why (decision.Decision's words).
	Decision string `json:"decision"`
	// Verdict is the same decision as data: its action, the rule that
	// decided and, for a deletion, the propagation and where it comes
	// from; whether the policy's DryRun holds its writes back; and when
	// the object expires (its expiry).
	Verdict *decision.Decision `json:"verdict,omitempty"`
	// Expiry says, in words, when the object expires and by what (an
	// expiry annotation, a rule of the GCPolicy), and what the expiry
	// collector does then; empty when it does not expire
	// (decision.Expiry's words).
	Expiry string `json:"expiry,omitempty"`
}

// NotChecked is what one answer left unchecked to stay within its limits.
type NotChecked struct {
	// Owners is the number of owner references whose owner was not read
	// (status OwnerNotChecked); Dependents, of dependents whose state was
	// not read (their Remains says so).
	Owners     int `json:"owners,omitempty"`
	Dependents int `json:"dependents,omitempty"`
	// Access is the number of related objects (owners, dependents, objects
	// an error names) whose access was not reviewed: they are counted as
	// hidden, never named.
	Access int `json:"access,omitempty"`
	// Message says it in words.
	Message string `json:"message"`
}

// Deletion is an object's deletion in progress.
type Deletion struct {
	Since      *metav1.Time `json:"since,omitempty"`
	Finalizers []string     `json:"finalizers,omitempty"`
	// Foreground: it waits for its blocking dependents (foregroundDeletion);
	// Orphan: for its dependents to be orphaned (orphan).
	Foreground bool `json:"foreground,omitempty"`
	Orphan     bool `json:"orphan,omitempty"`
}

// Owner is one owner reference of the object.
type Owner struct {
	Object
	Controller         bool `json:"controller,omitempty"`
	BlockOwnerDeletion bool `json:"blockOwnerDeletion,omitempty"`
	// Status is Owner*; Reason says why.
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// Dependent is an object that names the object as its owner.
type Dependent struct {
	Object
	// Blocking: a reference of it to the object blocks the object's
	// foreground deletion.
	Blocking bool `json:"blocking,omitempty"`
	// Remains says why it is still there, when the object waits for it.
	Remains string `json:"remains,omitempty"`
}

// Queue is the collector's work on an object.
type Queue struct {
	// Failures is the number of failed attempts in a row, LastError the
	// latest error.
	Failures  int    `json:"failures,omitempty"`
	LastError string `json:"lastError,omitempty"`
	// Retries is the number of times the object was put back in its queue
	// with backoff.
	Retries int `json:"retries,omitempty"`
}

// Target is the object a request asks about.
type Target struct {
	Resource   schema.GroupVersionResource
	Kind       schema.GroupVersionKind
	Namespaced bool
	Namespace  string
	Name       string
}

// ErrNotFound: the request names no object the collector can explain (a
// UID it does not know, or that names no object).
var ErrNotFound = errors.New("not found")

// Access says whether a related object (an owner, a dependent, an object
// an error names) may be named to the caller.
type Access int

const (
	// Denied: the caller may not get it, or that cannot be told: it is
	// counted, never named.
	Denied Access = iota
	// Allowed: the caller may get it.
	Allowed
	// NotReviewed: the request has spent its reviews (Limits.Reviews): it
	// is counted as hidden, never named, and reported not checked.
	NotReviewed
)

// Visibility answers for each related object of one request whether it may
// be named.
type Visibility func(Object) Access

// Limits bound what one /explain request costs.
type Limits struct {
	// InFlight is the number of requests served at once; beyond it the
	// answer is 429.
	InFlight int
	// Reviews is the number of SubjectAccessReviews one request may make,
	// the object's own included.
	Reviews int
	// Reads is the number of live reads one request may make, the
	// object's own included: its owners and the dependents it waits for
	// are read beyond what the graph holds.
	Reads int
}

// DefaultLimits are the limits the manager serves with.
var DefaultLimits = Limits{InFlight: 4, Reviews: 32, Reads: 16}

// Query returns the query that asks about the object namespace/name of
// resource gvr.
func Query(gvr schema.GroupVersionResource, namespace, name string) url.Values {
	return url.Values{"group": {gvr.Group}, "version": {gvr.Version}, "resource": {gvr.Resource},
		"namespace": {namespace}, "name": {name}}
}
