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
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
)

// GraphUnknown is the graph state of an explanation from API reads alone.
const GraphUnknown = "Unknown"

// WhyResult is what `why` prints: the manager's explanation, or one made
// from API reads alone.
type WhyResult struct {
	// Source is SourceManager or SourceAPI.
	Source string `json:"source"`
	// Manager says where the manager was reached; ManagerError why it could
	// not be, or refused to answer.
	Manager      string `json:"manager,omitempty"`
	ManagerError string `json:"managerError,omitempty"`
	explain.Explanation
	// UnclassifiedOwners are the object's references to the owners the
	// manager counted without naming them (HiddenOwners): owners the caller
	// may not get, or whose access cannot be checked (a kind that is not
	// served). The plugin names them from the object, which the caller may
	// read.
	UnclassifiedOwners []explain.Object `json:"unclassifiedOwners,omitempty"`
	// Unknown lists what an explanation from API reads alone could not know.
	Unknown []string `json:"unknown,omitempty"`
}

// Explanation sources.
const (
	SourceManager = "Manager"
	SourceAPI     = "API"
)

// apiFacts are the API reads an explanation without the manager is made of.
type apiFacts struct {
	target   objectRef
	resource schema.GroupResource
	obj      *metav1.PartialObjectMetadata
	// owners are the lookups of obj's owner references.
	owners []ownerLookup
	// dependents are the objects whose references name obj's UID.
	dependents []dependentEdge
	// incomplete lists the resources that could not be listed.
	incomplete []string
	policy     policyView
	// namespaceLabels reads the labels of obj's namespace, for an expiry
	// rule that selects namespaces by label; nil: not known.
	namespaceLabels func() (map[string]string, error)
}

// explainFromAPI explains an object as well as API reads allow, in the
// manager's terms, and says what it cannot know.
func explainFromAPI(f apiFacts) WhyResult {
	r := WhyResult{Source: SourceAPI, Explanation: explain.Explanation{Object: f.target, Graph: GraphUnknown}}
	r.Unknown = append(r.Unknown,
		"the collector's graph: whether it watches this kind and has observed the object and its owners",
		"the collector's queue: whether it is working on the object, its retries and last error (a deletion refused by a webhook, by a policy or by RBAC shows only there)")
	obj := f.obj
	if d := obj.DeletionTimestamp; d != nil {
		r.Deletion = &explain.Deletion{Since: d, Finalizers: obj.Finalizers,
			Foreground: slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents),
			Orphan:     slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents)}
	}
	unsure := false
	for _, l := range f.owners {
		ref := l.reference
		o := explain.Owner{Object: l.ref, Controller: ref.Controller != nil && *ref.Controller,
			BlockOwnerDeletion: ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion, Status: l.status, Reason: l.reason}
		if l.status == explain.OwnerUnverifiable || l.status == OwnerUnknown {
			unsure = true
		}
		r.Owners = append(r.Owners, o)
	}
	if unsure {
		r.Unknown = append(r.Unknown, "how the collector classifies the owners shown Unverifiable or Unknown here: it reads with its own permissions, and follows the kinds it has seen served")
	}
	for _, e := range f.dependents {
		d := explain.Dependent{Object: e.obj.ref(), Blocking: e.ref.BlockOwnerDeletion != nil && *e.ref.BlockOwnerDeletion}
		if del := r.Deletion; del != nil && ((del.Foreground && d.Blocking) || del.Orphan) {
			d.Remains = remainsFromAPI(e.obj, del, f.policy)
		}
		r.Dependents = append(r.Dependents, d)
	}
	if len(f.incomplete) > 0 {
		r.Unknown = append(r.Unknown, "dependents in resources that could not be listed: "+strings.Join(f.incomplete, "; "))
	}
	if f.policy.policy == nil {
		r.Unknown = append(r.Unknown, "the GCPolicy in force (ignored resources, protection, propagation, mode), so the decision assumes its defaults: "+f.policy.unknown)
	}
	d := decision.Decide(inputFromAPI(f))
	r.Verdict, r.Decision = &d, d.String()
	if d.Expiry != nil {
		r.Expiry = d.Expiry.String()
	}
	return r
}

// inputFromAPI is what API reads establish for the decision model: the
// object, each owner as the plugin looked it up (one it could not read is
// not known), the dependents as far as the caller may list them, and the
// GCPolicy when the caller may read it (otherwise not known: the model
// assumes the defaults, and says so).
func inputFromAPI(f apiFacts) decision.Input {
	in := decision.Input{Object: decision.ObjectOf(&f.obj.ObjectMeta, f.resource), Policy: f.policy.policy,
		Expiry: &decision.ExpiryContext{NamespaceLabels: f.namespaceLabels}}
	for _, l := range f.owners {
		in.Owners = append(in.Owners, decision.Owner{Kind: l.ref.Kind, Name: l.ref.Name, UID: l.ref.UID, State: decision.OwnerState(l.status)})
	}
	deps := decision.Dependents{Count: len(f.dependents), Incomplete: len(f.incomplete) > 0}
	for _, e := range f.dependents {
		if e.ref.BlockOwnerDeletion != nil && *e.ref.BlockOwnerDeletion {
			deps.Blocking++
		}
		if m := e.obj.meta; m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) {
			deps.DeletingDependents = true
		}
	}
	in.Dependents = func() decision.Dependents { return deps }
	return in
}

// remainsFromAPI says why a dependent the object waits for is still there.
func remainsFromAPI(o *listedObject, del *explain.Deletion, p policyView) string {
	if p.policy != nil && p.policy.Ignores(o.resource.GroupResource()) {
		return fmt.Sprintf("its resource %s is ignored by the GCPolicy, so ownergc leaves it alone", o.resource.GroupResource())
	}
	var why []string
	if del.Foreground && del.Since != nil && o.meta.CreationTimestamp.After(del.Since.Time) {
		why = append(why, "it was created after the deletion started")
	}
	if o.meta.DeletionTimestamp != nil {
		if slices.Contains(o.meta.Finalizers, metav1.FinalizerDeleteDependents) {
			why = append(why, "it is itself being deleted in the foreground and waits for its own dependents")
		}
		if others := slices.DeleteFunc(slices.Clone(o.meta.Finalizers), func(f string) bool {
			return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
		}); len(others) > 0 {
			why = append(why, "it carries finalizers "+strings.Join(others, ", "))
		}
	}
	if len(why) > 0 {
		return strings.Join(why, "; ")
	}
	if o.meta.DeletionTimestamp != nil {
		return "it is being deleted"
	}
	if del.Foreground {
		return "it is not being deleted yet: the collector should delete it (whether it tries and fails is not known without the manager)"
	}
	return "the collector should remove the owner from its owner references (whether it tries and fails is not known without the manager)"
}
