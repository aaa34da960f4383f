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

package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
)

// explainDependents bounds the dependents an explanation names (the others
// are counted); each may cost a live read when the object waits for it.
const explainDependents = 50

// explainReads is the live reads of one explanation: at most left, through
// the explanations' own client (Options.ExplainClient), never the
// collector's. refused counts the reads it refused once left was spent.
//
// Concurrency: one explanation's; not safe for concurrent use.
type explainReads struct {
	client  metadata.Interface
	left    int
	refused int
}

// read is a liveRead: errNotChecked once the reads are spent or without a
// client. A name that cannot be one path segment costs no read.
func (r *explainReads) read(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	if err := explain.ValidatePath(namespace, name); err != nil {
		return nil, about(gvr, namespace, name, err)
	}
	if r.client == nil || r.left <= 0 {
		r.refused++
		return nil, errNotChecked
	}
	oc, err := objectClient(r.client, gvr, namespace, name)
	if err != nil {
		return nil, about(gvr, namespace, name, err)
	}
	r.left--
	obj, err := oc.Get(ctx, name, metav1.GetOptions{})
	return obj, about(gvr, namespace, name, err)
}

// Explain explains an object from the collector's point of view: its state
// in the graph, each owner reference classified as a decision would classify
// it (read-only: nothing is written, and nothing is recorded in the
// absent-owner cache), its dependents, its queue state, and the decision in
// words.
//
// Its cost is bounded: at most reads live reads (the object's own, then
// its owners' that the graph cannot answer for, then the dependents it
// waits for), through a client of its own; the owners and dependents left
// unread are reported not checked (explain.NotChecked), and an owner not
// checked never lets the decision say that the object will be deleted.
// visible says which related objects may be named, and is asked once per
// owner and named dependent (those it did not review are counted, as
// hidden and not checked); no text of the answer names another object
// (the queue's last error says only what visible allows).
//
// Concurrency: explanations run beside the workers and one another; each
// reads the graph and the failure tracker under their locks and keeps its
// reads to itself. visible is called from the calling goroutine only.
func (c *Collector) Explain(ctx context.Context, t explain.Target, reads int, visible explain.Visibility) (ex explain.Explanation) {
	ex = explain.Explanation{Object: explain.Object{
		APIVersion: t.Kind.GroupVersion().String(), Kind: t.Kind.Kind,
		Resource: discovery.FormatGVR(t.Resource), Namespace: t.Namespace, Name: t.Name,
	}}
	r := &explainReads{client: c.opts.ExplainClient, left: reads}
	nc := &explain.NotChecked{}
	see := func(o explain.Object) bool {
		switch visible(o) {
		case explain.Allowed:
			return true
		case explain.NotReviewed:
			nc.Access++
		}
		return false
	}
	defer func() { ex.NotChecked = notChecked(nc, reads) }()

	id := graph.Identity{Group: t.Kind.Group, Version: t.Kind.Version, Kind: t.Kind.Kind, Namespace: t.Namespace, Name: t.Name}
	p := c.opts.Policy.Get()
	in := decision.Input{Object: decision.Object{Resource: t.Resource.GroupResource(), Namespace: t.Namespace}, Policy: p}
	defer func() {
		d := decision.Decide(in)
		ex.Verdict, ex.Decision = &d, d.String()
		if d.Expiry != nil {
			ex.Expiry = d.Expiry.String()
		}
	}()
	live, err := r.read(ctx, t.Resource, t.Namespace, t.Name)
	switch {
	case err == nil:
		id.UID = live.UID
		ex.Object.UID = live.UID
	case !isGone(err):
		ex.Graph = explain.StateNotInGraph
		in.Object.ReadError = err.Error()
		return ex
	}
	ignored := p.Ignores(t.Resource.GroupResource())
	var n *graph.Node
	if id.UID != "" {
		n = c.opts.Graph.Node(id.UID)
	} else {
		n = c.opts.Graph.NodeFor(id.Group, id.Kind, id.Namespace, id.Name)
	}
	var state graph.NodeState
	switch {
	case ignored:
		ex.Graph = explain.StateIgnored
	case n == nil:
		ex.Graph = explain.StateNotInGraph
	default:
		state = c.opts.Graph.Describe(n)
		switch {
		case state.Observed:
			ex.Graph = explain.StateObserved
		case state.HasOwners:
			ex.Graph = explain.StateUnverified
		default:
			ex.Graph = explain.StateVirtual
		}
	}
	if live == nil {
		in.Object.Absent, in.Object.Referenced = true, n != nil && !state.Observed
		nc.Dependents, _ = c.explainDependents(ctx, r, &ex, n, nil, see)
		return ex
	}
	in.Object = decision.ObjectOf(&live.ObjectMeta, t.Resource.GroupResource())
	in.Expiry = c.explainExpiry(ctx, r, t.Namespace, see)
	if live.DeletionTimestamp != nil {
		ex.Deletion = &explain.Deletion{Since: live.DeletionTimestamp, Finalizers: live.Finalizers,
			Foreground: slices.Contains(live.Finalizers, metav1.FinalizerDeleteDependents),
			Orphan:     slices.Contains(live.Finalizers, metav1.FinalizerOrphanDependents)}
	}
	// Every reference counts for the decision; only those the caller may
	// read are named, and those that name no object (their name cannot be
	// one path segment): the object the caller may get states them, and
	// they tell nothing of another.
	for _, ref := range live.OwnerReferences {
		o := c.explainOwner(ctx, r.read, id, ref)
		owner := decision.OwnerOf(ref, ownerState(o.Status))
		if o.Status == explain.OwnerNotChecked {
			nc.Owners++
		}
		if explain.ValidateName(ref.Name) != nil || see(o.Object) {
			ex.Owners = append(ex.Owners, o)
		} else {
			ex.HiddenOwners++
			owner.Hidden = true
		}
		in.Owners = append(in.Owners, owner)
	}
	var deps decision.Dependents
	nc.Dependents, deps = c.explainDependents(ctx, r, &ex, n, ex.Deletion, see)
	in.Dependents = func() decision.Dependents { return deps }
	if n != nil {
		if failures, err := c.failures.lastError(n); err != nil {
			ex.Queue.Failures = failures
			ex.Queue.LastError = redact(err, func(o explain.Object) bool {
				return sameObject(o, t.Resource, t.Namespace, t.Name) || see(o)
			})
		}
		ex.Queue.Retries = c.attemptToDelete.NumRequeues(n)
	}
	return ex
}

// ownerState is the decision model's state of an owner an explanation
// classified (explain.Owner*): one it did not read is not known.
func ownerState(status string) decision.OwnerState {
	if status == explain.OwnerNotChecked {
		return decision.OwnerUnknown
	}
	return decision.OwnerState(status)
}

// notChecked returns nc with its message, or nil when the explanation
// checked everything.
func notChecked(nc *explain.NotChecked, reads int) *explain.NotChecked {
	var parts []string
	if nc.Owners > 0 {
		parts = append(parts, fmt.Sprintf("%s not read (status %s)", count(nc.Owners, "owner was", "owners were"), explain.OwnerNotChecked))
	}
	if nc.Dependents > 0 {
		parts = append(parts, count(nc.Dependents, "dependent it waits for was not read", "dependents it waits for were not read"))
	}
	if len(parts) > 0 {
		parts[0] = fmt.Sprintf("this answer reads at most %d objects live: %s", reads, parts[0])
	}
	if nc.Access > 0 {
		they := "they are"
		if nc.Access == 1 {
			they = "it is"
		}
		parts = append(parts, fmt.Sprintf("your access to %s was not reviewed (this answer reviews a bounded number): %s counted as hidden",
			count(nc.Access, "related object", "related objects"), they))
	}
	if len(parts) == 0 {
		return nil
	}
	nc.Message = strings.Join(parts, "; ") + "; the collector itself checks them"
	return nc
}

// explainOwner classifies one owner reference as the collector does
// (findOwner), reading the owner with read when the graph and the
// absent-owner cache cannot answer, and says why in words. It records
// nothing: no event, nothing in the absent-owner cache.
func (c *Collector) explainOwner(ctx context.Context, read liveRead, dependent graph.Identity, ref metav1.OwnerReference) explain.Owner {
	o := explain.Owner{Object: explain.Object{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID},
		Controller: boolValue(ref.Controller), BlockOwnerDeletion: boolValue(ref.BlockOwnerDeletion)}
	f := c.findOwner(ctx, read, dependent, ref)
	gvr, namespaced, resolved := f.gvr, f.namespaced, f.resolved
	if f.basis == basisObserved || f.basis == basisAbsentAtVersion {
		// The graph answered before the kind was mapped.
		gvr, namespaced, resolved = c.resolveOwner(ref)
	}
	if resolved {
		o.Resource = discovery.FormatGVR(gvr)
		o.Namespace = namespaceFor(namespaced, dependent.Namespace)
	}
	o.Status = string(f.state)
	switch f.basis {
	case basisInvalidAPIVersion:
		o.Reason = fmt.Sprintf("its apiVersion is invalid: %v", f.err)
	case basisObserved:
		o.Reason = "the collector observes it"
		if f.state == decision.OwnerWaiting {
			o.Reason = waitingOwner
		}
	case basisAbsentAtVersion, basisAbsent:
		o.Reason = fmt.Sprintf("confirmed absent %s ago", time.Since(f.since).Round(time.Second))
	case basisGoneBeforeUnserved:
		o.Reason = "confirmed absent before its kind stopped being served"
	case basisNotServed:
		o.Reason = fmt.Sprintf("%v; it cannot be verified, and that is never a reason to delete", f.err)
	case basisNamespacedOwnerOfClusterScoped:
		o.Reason = "a cluster-scoped object cannot have an owner of a namespaced kind"
	case basisNotChecked:
		o.Status, o.Reason = explain.OwnerNotChecked, errNotChecked.Error()
	case basisReadFailed:
		o.Reason = fmt.Sprintf("it cannot be read: %v", f.err)
	case basisRead:
		switch {
		case f.live == nil:
			o.Reason = "no such object"
		case f.state == decision.OwnerDangling:
			o.Reason = fmt.Sprintf("its name belongs to another object (uid %s)", f.live.UID)
		case f.state == decision.OwnerWaiting:
			o.Reason = waitingOwner
		default:
			o.Reason = "it exists"
		}
	}
	// A name that cannot be one path segment is why such an owner is gone,
	// whether the collector found that now (basisInvalidName) or when it
	// verified the owner before (the absent-owner cache).
	var invalid *explain.InvalidNameError
	if f.state == decision.OwnerDangling && errors.As(explain.ValidateName(ref.Name), &invalid) {
		o.Reason = fmt.Sprintf(
			"its name cannot be one path segment (%s), so it names no object: the collector never reads it and treats the reference as dangling",
			strings.Join(invalid.Reasons, "; "))
	}
	return o
}

// waitingOwner says why an owner is WaitingForDependents.
const waitingOwner = "it is being deleted in the foreground and waits for its blocking dependents"

// resolveOwner maps the kind an owner reference names to its resource;
// resolved is false when it maps to none.
func (c *Collector) resolveOwner(ref metav1.OwnerReference) (gvr schema.GroupVersionResource, namespaced, resolved bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return gvr, false, false
	}
	gvr, namespaced, err = c.opts.Resources.ResourceFor(gv.WithKind(ref.Kind))
	return gvr, namespaced, err == nil
}

// explainDependents lists n's dependents the caller may see (asking see for
// each until explainDependents are named); when the object waits for them
// (a foreground or orphaning deletion), each says why it remains, reading
// it with r. It returns the number of dependents it did not read, r's
// reads spent, and what the decision model takes of the dependents (all of
// them, as the graph holds them: the collector decides from them all).
func (c *Collector) explainDependents(ctx context.Context, r *explainReads, ex *explain.Explanation, n *graph.Node, del *explain.Deletion, see func(explain.Object) bool) (int, decision.Dependents) {
	var state decision.Dependents
	if n == nil {
		return 0, state
	}
	deps := c.opts.Graph.Dependents(n, false)
	slicesSortDependents(deps)
	e := &blockedEntry{node: n}
	if del != nil {
		e.Foreground = del.Foreground
		if del.Since != nil {
			e.Since = del.Since.Time
		}
	}
	refused := r.refused
	state.Count = len(deps)
	for _, d := range deps {
		if d.Blocking {
			state.Blocking++
		}
		state.DeletingDependents = state.DeletingDependents || d.DeletingDependents
		o := explain.Object{APIVersion: d.Identity.APIVersion(), Kind: d.Identity.Kind, Namespace: d.Identity.Namespace, Name: d.Identity.Name, UID: d.Identity.UID}
		var gvr schema.GroupVersionResource
		if res, namespaced, err := c.resourceOf(d.Identity); err == nil {
			gvr, o.Resource, o.Namespace = res, discovery.FormatGVR(res), namespaceFor(namespaced, d.Identity.Namespace)
		}
		if len(ex.Dependents) == explainDependents || !see(o) {
			ex.HiddenDependents++
			if d.Blocking {
				state.HiddenBlocking++
			}
			continue
		}
		dep := explain.Dependent{Object: o, Blocking: d.Blocking}
		if del != nil && ((del.Foreground && d.Blocking) || del.Orphan) {
			// Its last error is about itself, or names objects the
			// caller may also need to get.
			dep.Remains = c.whyRemains(ctx, r.read, d, e, func(about explain.Object) bool {
				return sameObject(about, gvr, o.Namespace, o.Name) || see(about)
			})
		}
		ex.Dependents = append(ex.Dependents, dep)
	}
	return r.refused - refused, state
}

// count says n things: "1 thing", "2 things".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func slicesSortDependents(deps []graph.DependentState) {
	slices.SortFunc(deps, func(a, b graph.DependentState) int {
		return strings.Compare(describe(a.Identity), describe(b.Identity))
	})
}
