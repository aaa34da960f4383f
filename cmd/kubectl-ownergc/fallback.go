package main

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
		r.Unknown = append(r.Unknown, "whether the GCPolicy ignores its resource: "+f.policy.unknown)
	}
	r.Decision = decideFromAPI(f, r)
	return r
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

// decideFromAPI says what a collector does with the object, as far as API
// reads tell, in the manager's words.
func decideFromAPI(f apiFacts, r WhyResult) string {
	obj := f.obj
	if p := f.policy.policy; p != nil && p.Ignores(f.resource) {
		if f.policy.fromObject {
			return fmt.Sprintf("left alone: its resource %s is ignored by the GCPolicy", f.resource)
		}
		return fmt.Sprintf("left alone: its resource %s is ignored by default (there is no GCPolicy default)", f.resource)
	}
	if f.policy.policy == nil && isDefaultIgnored(f.resource) {
		return fmt.Sprintf("probably left alone: its resource %s is ignored by default (the GCPolicy, which may say otherwise, could not be read)", f.resource)
	}
	if d := r.Deletion; d != nil {
		blocking := 0
		for _, dep := range r.Dependents {
			if dep.Blocking {
				blocking++
			}
		}
		switch {
		case d.Foreground && blocking > 0:
			return fmt.Sprintf("being deleted in the foreground: it waits until its blocking dependents are gone (%d found)", blocking)
		case d.Foreground && len(f.incomplete) > 0:
			return "being deleted in the foreground: no blocking dependent found in the resources you may list; once none remains, the collector removes its foregroundDeletion finalizer"
		case d.Foreground:
			return "being deleted in the foreground: no blocking dependent remains, the collector should remove its foregroundDeletion finalizer (if it stays, is a collector running?)"
		case d.Orphan:
			return fmt.Sprintf("being deleted with the orphan policy: the collector removes it from its dependents' owner references (%d found), then its orphan finalizer", len(r.Dependents))
		case len(obj.Finalizers) > 0:
			return fmt.Sprintf("being deleted; nothing for the collector to do: it waits for its finalizers %s, which whoever added them must remove", strings.Join(obj.Finalizers, ", "))
		default:
			return "being deleted"
		}
	}
	if len(r.Owners) == 0 {
		return "kept: it has no owner references, and the collector deletes only objects whose owners are gone"
	}
	var solid, dangling, waiting, unverifiable, unknown []string
	for _, o := range r.Owners {
		name := o.Kind + " " + o.Name
		switch o.Status {
		case explain.OwnerSolid:
			solid = append(solid, name)
		case explain.OwnerDangling:
			dangling = append(dangling, name)
		case explain.OwnerWaiting:
			waiting = append(waiting, name)
		case explain.OwnerUnverifiable:
			unverifiable = append(unverifiable, name)
		default:
			unknown = append(unknown, name+" ("+o.Reason+")")
		}
	}
	switch {
	case len(unverifiable) > 0:
		return "kept: owner " + strings.Join(unverifiable, ", ") + " cannot be verified; the collector never deletes on what it cannot verify"
	case len(unknown) > 0:
		return "not known: owner " + strings.Join(unknown, ", ") + " could not be read; the collector reads it with its own permissions"
	case len(solid) > 0 && len(dangling)+len(waiting) > 0:
		return "kept: owner " + strings.Join(solid, ", ") + " exists; the collector removes its references to " + strings.Join(append(dangling, waiting...), ", ")
	case len(solid) > 0:
		return "kept: owner " + strings.Join(solid, ", ") + " exists"
	case len(waiting) > 0 && len(r.Dependents) > 0:
		return "will be deleted in the foreground: its owner " + strings.Join(waiting, ", ") + " is being deleted in the foreground"
	default:
		return fmt.Sprintf("will be deleted with propagation %s: all its owners are gone", propagationFor(obj, f.policy))
	}
}

// propagationFor is the propagation a collector deletes obj with.
func propagationFor(obj *metav1.PartialObjectMetadata, p policyView) string {
	switch {
	case slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents):
		return string(metav1.DeletePropagationOrphan)
	case slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents):
		return string(metav1.DeletePropagationForeground)
	case p.policy != nil:
		return string(p.policy.DefaultPropagation)
	default:
		return "Background (unless the GCPolicy sets another default)"
	}
}

func isDefaultIgnored(gr schema.GroupResource) bool {
	return gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")
}
