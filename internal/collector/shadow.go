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
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/workers"
)

// Dry-run and shadow agreement. In dry-run the collector decides as always
// but writes nothing: each decision that would have written is logged,
// counted and remembered, while another collector (normally
// kube-controller-manager's) does the work. The shadow compares: a decision
// that the other collector carries out within the grace period is an
// agreement, one it does not is a disagreement ("ownergc would ..., still
// there"); an object with owners that someone deletes although the collector
// would keep it, while one of its owners is gone or going (so it looks like
// a garbage collector's cascade, not a user's or a controller's deletion),
// is a disagreement ("deleted, ownergc would keep"), and one it would have
// deleted too an agreement.

// Actions of dry-run decisions (label of ownergc_shadow_decisions_total).
const (
	ActionDelete           = "delete"
	ActionOrphan           = "orphan"
	ActionRemoveReferences = "removeReferences"
	ActionRemoveFinalizer  = "removeFinalizer"
)

// Outcomes of dry-run decisions.
const (
	OutcomeAgreed    = "agreed"
	OutcomeDisagreed = "disagreed"
)

// ReasonShadowDisagreement (Warning, on the object): in dry-run, another
// collector did what ownergc would not, or did not do what ownergc would.
const ReasonShadowDisagreement = "ShadowDisagreement"

// verdictDelay is how long after someone deleted an object the collector
// judges what it would have done: long enough for it to observe the owners'
// own deletions, which its informers may see after the dependent's.
const verdictDelay = 2 * time.Second

// Shadow is the state of the shadow agreement.
type Shadow struct {
	// Active: the collector runs in dry-run.
	Active bool
	// Since is when dry-run started.
	Since time.Time
	// Agreed and Disagreed count the outcomes since then.
	Agreed, Disagreed int
	// LastDisagreement is the latest disagreement, nil when none.
	LastDisagreement *Disagreement
}

// Disagreement is one decision on which another collector and ownergc
// differ.
type Disagreement struct {
	Object graph.Identity
	Action string
	// Message says what happened and what ownergc would have done.
	Message string
	Time    time.Time
}

// A dry run of a large cascade holds one pending decision per dependent
// until it is resolved, so they are kept small. A deletion, by far the most
// common, is its object's UID and a few bytes (about 40 with the map's own
// overhead, TestPendingDeletionsAreSmall): its identity and deletion state
// are the graph's, where the object stays while nobody deletes it. The other
// decisions keep the identity's strings (shared with the graph's) and an
// interned group/version/kind.

// pendingDelete is a pending deletion decision.
type pendingDelete struct {
	// at is when it was decided, in whole seconds after the shadow started,
	// rounded up.
	at uint32
	// propagation indexes propagations.
	propagation uint8
}

var propagations = [...]metav1.DeletionPropagation{"", metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}

func propagationIndex(p metav1.DeletionPropagation) uint8 {
	for i, q := range propagations {
		if q == p {
			return uint8(i)
		}
	}
	return 0
}

// shadowKey names a pending decision other than a deletion.
type shadowKey struct {
	uid types.UID
	// target is the owner UID of a reference removal, the finalizer of a
	// finalizer removal.
	target string
	action string
}

// shadowEntry is a pending decision other than a deletion: the object but
// its UID (in the key) and when it was decided.
type shadowEntry struct {
	kind            *schema.GroupVersionKind
	namespace, name string
	since           time.Time
}

// identity returns the identity of the decision's object.
func (e *shadowEntry) identity(uid types.UID) graph.Identity {
	return graph.Identity{Group: e.kind.Group, Version: e.kind.Version, Kind: e.kind.Kind,
		Namespace: e.namespace, Name: e.name, UID: uid}
}

// notCarriedOut is the message of a decision nobody carried out within the
// grace period.
func notCarriedOut(action, detail string, grace time.Duration) string {
	return fmt.Sprintf("ownergc would %s (%s), and after %s nobody has", action, detail, grace)
}

// detail says what a decision would have done, for messages.
func detail(action, target string, propagation metav1.DeletionPropagation) string {
	switch action {
	case ActionDelete:
		return "propagation " + string(propagation)
	case ActionRemoveFinalizer:
		return "finalizer " + target
	default:
		return "reference to owner " + target
	}
}

// deletionVerdict is a deletion someone else made, to be judged.
type deletionVerdict struct {
	id     graph.Identity
	owners []graph.OwnerRef
}

// shadow follows the dry-run decisions.
//
// Concurrency: mu guards every field but verdicts (a workqueue, safe for
// concurrent use).
type shadow struct {
	mu      sync.Mutex
	state   Shadow
	deletes map[types.UID]pendingDelete
	pending map[shadowKey]shadowEntry
	// kinds interns the group/version/kinds of pending.
	kinds map[schema.GroupVersionKind]*schema.GroupVersionKind
	// deleted remembers the objects whose deletion was counted (Unix
	// nanoseconds), so that a late decision about one, or a late report of
	// its deletion, is not counted again.
	deleted map[types.UID]int64
	// verdicts holds the deletions to judge, each after delay, judged one
	// at a time (runShadow) by a worker of the collector's own or, in a
	// fleet, of the shared workers.
	verdicts *workers.Queue[*deletionVerdict]
	// delay is verdictDelay; tests shorten it.
	delay time.Duration
	// activated is signalled when the shadow agreement starts: the scans
	// of pending decisions run only while it is active (an engine that
	// enforces wakes for nothing).
	activated chan struct{}
}

// countedFor is how long a counted deletion is remembered.
const countedFor = 10 * time.Minute

// newShadow returns the shadow agreement, its verdicts judged by workers
// taken from shared when set.
func newShadow(shared *workers.Shared) *shadow {
	s := &shadow{delay: verdictDelay, activated: make(chan struct{}, 1),
		verdicts: workers.NewQueue(shared, workqueue.TypedRateLimitingQueueConfig[*deletionVerdict]{})}
	s.forget()
	return s
}

// forget drops every pending decision and counted deletion, with fresh
// maps (clearing one, or deleting its keys, would keep the buckets of the
// largest cascade). Called with mu held, or before the shadow is shared.
func (s *shadow) forget() {
	s.deletes = make(map[types.UID]pendingDelete)
	s.pending = make(map[shadowKey]shadowEntry)
	s.kinds = make(map[schema.GroupVersionKind]*schema.GroupVersionKind)
	s.deleted = make(map[types.UID]int64)
}

// active reports whether the shadow agreement runs (dry-run).
func (s *shadow) active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Active
}

// secondsAfterStart returns t in whole seconds after the shadow started,
// rounded up (so that a decision is never judged older than it is).
func (s *shadow) secondsAfterStart(t time.Time) uint32 {
	d := t.Sub(s.state.Since)
	return uint32(max(0, (d+time.Second-1)/time.Second))
}

// decidedAt returns when a pending deletion was decided.
func (s *shadow) decidedAt(d pendingDelete) time.Time {
	return s.state.Since.Add(time.Duration(d.at) * time.Second)
}

// Shadow returns the state of the shadow agreement.
func (c *Collector) Shadow() Shadow {
	c.shadow.mu.Lock()
	defer c.shadow.mu.Unlock()
	st := c.shadow.state
	if st.LastDisagreement != nil {
		d := *st.LastDisagreement
		st.LastDisagreement = &d
	}
	return st
}

// dryRun reports whether the collector must not write.
func (c *Collector) dryRun() bool { return c.opts.Policy.Get().DryRun }

// setDryRun starts or stops the shadow agreement when dry-run is switched.
// Switched to enforce, the collector takes again all the work the graph
// holds: what it only decided in dry-run, it now carries out.
func (c *Collector) setDryRun(on bool) {
	s := c.shadow
	s.mu.Lock()
	if s.state.Active == on {
		s.mu.Unlock()
		return
	}
	if on {
		s.state = Shadow{Active: true, Since: time.Now()}
		select {
		case s.activated <- struct{}{}:
		default:
		}
	} else {
		s.state.Active = false
		s.forget()
	}
	s.mu.Unlock()
	if !on {
		c.opts.Graph.Resync(c)
	}
}

// would logs, counts and remembers a decision that was not carried out:
// action on the object id; target is the owner UID of a reference removal,
// the finalizer of a finalizer removal; propagation is a deletion's.
func (c *Collector) would(ctx context.Context, action, target string, id graph.Identity, propagation metav1.DeletionPropagation, keyvals ...any) {
	if l := c.opts.DryRunLimiter; l != nil {
		_ = l.Wait(ctx) // only a cancelled context ends it early
	}
	ctrl.LoggerFrom(ctx).Info("Dry run: would "+action, append([]any{"detail", detail(action, target, propagation)}, keyvals...)...)
	c.opts.Metrics.DryRunDecisions.WithLabelValues(action).Inc()
	s := c.shadow
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.state.Active {
		return
	}
	now := time.Now()
	if action == ActionDelete {
		if _, counted := s.deleted[id.UID]; counted {
			return
		}
		if _, ok := s.deletes[id.UID]; !ok {
			s.deletes[id.UID] = pendingDelete{at: s.secondsAfterStart(now), propagation: propagationIndex(propagation)}
		}
		return
	}
	k := shadowKey{uid: id.UID, target: target, action: action}
	if _, ok := s.pending[k]; ok {
		return
	}
	gvk := schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
	kind := s.kinds[gvk]
	if kind == nil {
		kind = &gvk
		s.kinds[gvk] = kind
	}
	s.pending[k] = shadowEntry{kind: kind, namespace: id.Namespace, name: id.Name, since: now}
}

// DeletionObserved implements graph.Sink: in dry-run, a deletion someone
// else made is judged a moment later.
func (c *Collector) DeletionObserved(id graph.Identity, owners []graph.OwnerRef) {
	if c.leading.Load() && c.dryRun() {
		c.shadow.verdicts.AddAfter(&deletionVerdict{id: id, owners: owners}, c.shadow.delay)
	}
}

// ReferenceRemoved implements graph.Sink. Removals are checked against the
// pending decisions by the shadow's scans; nothing to do here.
func (c *Collector) ReferenceRemoved(graph.Identity, graph.OwnerRef) {}

// runShadow resolves the pending decisions and judges the deletions others
// made, until ctx ends.
func (c *Collector) runShadow(ctx context.Context) {
	judges := c.shadow.verdicts.Workers(ctx, c.judgeDeletion)
	judges.Resize(1)
	defer func() {
		judges.Stop()
		c.shadow.verdicts.ShutDown()
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if !c.shadow.active() {
			tick.Stop()
			select {
			case <-ctx.Done():
				return
			case <-c.shadow.activated:
			}
			tick.Reset(time.Second)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.resolvePending(ctx, time.Now())
	}
}

// resolvePending counts the pending decisions the other collector has
// carried out as agreements, and those it has not within the grace period
// as disagreements.
func (c *Collector) resolvePending(ctx context.Context, now time.Time) {
	grace := c.opts.Policy.Get().ShadowGracePeriod
	s := c.shadow
	s.mu.Lock()
	if len(s.deleted) > 0 {
		for uid, at := range s.deleted {
			if now.Sub(time.Unix(0, at)) > countedFor {
				delete(s.deleted, uid)
			}
		}
		if len(s.deleted) == 0 {
			s.deleted = make(map[types.UID]int64) // let the buckets go
		}
	}
	uids := make([]types.UID, 0, len(s.deletes))
	for uid := range s.deletes {
		uids = append(uids, uid)
	}
	keys := make([]shadowKey, 0, len(s.pending))
	for k := range s.pending {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, uid := range uids {
		c.resolveDelete(ctx, uid, now, grace)
	}
	for _, k := range keys {
		s.mu.Lock()
		e, ok := s.pending[k]
		s.mu.Unlock()
		if !ok {
			continue
		}
		done, deletedInstead := c.carriedOut(k, &e)
		switch {
		case done:
			c.outcome(ctx, k, e.identity(k.uid), OutcomeAgreed, "")
		case deletedInstead:
			c.outcome(ctx, k, e.identity(k.uid), OutcomeDisagreed, fmt.Sprintf("it was deleted, while ownergc would only %s (%s)", k.action, detail(k.action, k.target, "")))
		case now.Sub(e.since) >= grace:
			c.outcome(ctx, k, e.identity(k.uid), OutcomeDisagreed, notCarriedOut(k.action, detail(k.action, k.target, ""), grace))
		}
	}
	s.mu.Lock()
	// Deleting keys never shrinks a map: let the buckets of a large
	// cascade go once it is resolved.
	if len(uids) > 0 && len(s.deletes) == 0 {
		s.deletes = make(map[types.UID]pendingDelete)
	}
	if len(keys) > 0 && len(s.pending) == 0 {
		s.pending = make(map[shadowKey]shadowEntry)
	}
	s.mu.Unlock()
}

// resolveDelete resolves a pending deletion by what the graph holds: an
// object that left the graph, or is being deleted, was deleted by the other
// collector; one still there after the grace period was not. While the
// object's kind is not observed (it stopped being served), nobody can tell
// what became of it: the decision waits, past the grace period too, until
// the kind is served again (or deleted, its nodes with it) or dry-run ends.
func (c *Collector) resolveDelete(ctx context.Context, uid types.UID, now time.Time, grace time.Duration) {
	s := c.shadow
	s.mu.Lock()
	d, ok := s.deletes[uid]
	decided := s.decidedAt(d)
	s.mu.Unlock()
	if !ok {
		return
	}
	k := shadowKey{uid: uid, action: ActionDelete}
	o := c.opts.Graph.Owner(uid)
	switch {
	case !o.Known || o.BeingDeleted:
		c.outcome(ctx, k, o.Identity, OutcomeAgreed, "")
	case !o.Observed:
	case now.Sub(decided) >= grace:
		c.outcome(ctx, k, o.Identity, OutcomeDisagreed, notCarriedOut(ActionDelete, detail(ActionDelete, "", propagations[d.propagation]), grace))
	}
}

// carriedOut reports whether the object now looks as a reference or
// finalizer removal would have left it; deletedInstead, when it finds the
// object deleted, which the decision would not have done.
func (c *Collector) carriedOut(k shadowKey, e *shadowEntry) (done, deletedInstead bool) {
	obj, ok := c.opts.Objects.Cached(e.kind.GroupKind(), e.namespace, e.name)
	gone := !ok || obj.UID != k.uid
	if k.action == ActionRemoveFinalizer {
		return gone || !slices.Contains(obj.Finalizers, k.target), false
	}
	if gone || obj.DeletionTimestamp != nil {
		return false, true
	}
	return !slices.ContainsFunc(obj.OwnerReferences, func(r metav1.OwnerReference) bool { return string(r.UID) == k.target }), false
}

// outcome counts and reports the outcome of a pending decision about the
// object id (only its UID is needed for an agreement).
func (c *Collector) outcome(ctx context.Context, k shadowKey, id graph.Identity, outcome, message string) {
	s := c.shadow
	s.mu.Lock()
	var ok bool
	if k.action == ActionDelete {
		if _, ok = s.deletes[k.uid]; ok {
			delete(s.deletes, k.uid)
		}
	} else if _, ok = s.pending[k]; ok {
		delete(s.pending, k)
	}
	active := s.state.Active
	s.mu.Unlock()
	if !ok || !active {
		return
	}
	id.UID = k.uid
	c.count(ctx, id, k.action, outcome, message)
}

// count records an outcome.
func (c *Collector) count(ctx context.Context, id graph.Identity, action, outcome, message string) {
	s := c.shadow
	s.mu.Lock()
	if !s.state.Active {
		s.mu.Unlock()
		return
	}
	if action == ActionDelete {
		s.deleted[id.UID] = time.Now().UnixNano()
	}
	if outcome == OutcomeAgreed {
		s.state.Agreed++
	} else {
		s.state.Disagreed++
		s.state.LastDisagreement = &Disagreement{Object: id, Action: action, Message: message, Time: time.Now()}
	}
	s.mu.Unlock()
	c.opts.Metrics.ShadowDecisions.WithLabelValues(action, outcome).Inc()
	if outcome == OutcomeDisagreed {
		ctrl.LoggerFrom(ctx).Info("Shadow disagreement", "object", id, "action", action, "message", message)
		c.recordEvent(id, corev1.EventTypeWarning, ReasonShadowDisagreement, "dry run: %s", message)
	}
	if c.opts.Changed != nil {
		c.opts.Changed()
	}
}

// judgeDeletion judges a deletion someone else made: what would ownergc
// have done with the object?
func (c *Collector) judgeDeletion(ctx context.Context, v *deletionVerdict) {
	s := c.shadow
	s.mu.Lock()
	_, decided := s.deletes[v.id.UID]
	_, counted := s.deleted[v.id.UID]
	s.mu.Unlock()
	if decided || counted {
		return // the pending decision resolves itself, or was counted
	}
	var keep, going []string
	in := decision.Input{Object: decision.Object{Resource: c.groupResource(v.id), Namespace: v.id.Namespace}, Policy: c.opts.Policy.Get(),
		// Whether it had dependents decides only how it is deleted.
		Dependents: func() decision.Dependents { return decision.Dependents{} }}
	for _, o := range v.owners {
		ref := metav1.OwnerReference{APIVersion: o.Kind.APIVersion(), Kind: o.Kind.GroupKind().Kind, Name: o.Name, UID: o.UID()}
		e := c.explainOwner(ctx, c.get, v.id, ref)
		in.Owners = append(in.Owners, decision.OwnerOf(ref, ownerState(e.Status)))
		switch e.Status {
		case explain.OwnerSolid, explain.OwnerUnverifiable:
			keep = append(keep, fmt.Sprintf("%s %s (%s)", ref.Kind, ref.Name, e.Reason))
		default:
			going = append(going, ref.Kind+" "+ref.Name)
		}
	}
	if len(going) == 0 {
		// Every owner lives: a user's or a controller's deletion, not a
		// collector's decision.
		return
	}
	switch d := decision.Decide(in); {
	case d.Action == decision.Delete:
		c.count(ctx, v.id, ActionDelete, OutcomeAgreed, "")
	case len(keep) > 0:
		c.count(ctx, v.id, ActionDelete, OutcomeDisagreed, fmt.Sprintf(
			"it was deleted while its owners %s were gone or going, but ownergc would keep it: owner %s",
			strings.Join(going, ", "), strings.Join(keep, ", ")))
	default:
		// Protected by its namespace, or of a resource now ignored.
		c.count(ctx, v.id, ActionDelete, OutcomeDisagreed, fmt.Sprintf(
			"it was deleted while its owners %s were gone or going, but ownergc would keep it: %s", strings.Join(going, ", "), d))
	}
}
