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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
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

type shadowKey struct {
	uid    types.UID
	action string
	// target is the owner UID of a reference removal, the finalizer of a
	// finalizer removal.
	target string
}

type shadowEntry struct {
	id     graph.Identity
	since  time.Time
	detail string
}

// deletionVerdict is a deletion someone else made, to be judged.
type deletionVerdict struct {
	id     graph.Identity
	owners []graph.OwnerRef
}

// shadow follows the dry-run decisions.
//
// Concurrency: mu guards every field but verdicts (a workqueue, safe for
// concurrent use); active mirrors state.Active for the graph's reports.
type shadow struct {
	mu      sync.Mutex
	state   Shadow
	pending map[shadowKey]*shadowEntry
	// deleted remembers the objects whose deletion was counted, so that a
	// late decision about one, or a late report of its deletion, is not
	// counted again.
	deleted  map[types.UID]time.Time
	verdicts workqueue.TypedDelayingInterface[*deletionVerdict]
	// delay is verdictDelay; tests shorten it.
	delay time.Duration
}

// countedFor is how long a counted deletion is remembered.
const countedFor = 10 * time.Minute

func newShadow() *shadow {
	return &shadow{pending: make(map[shadowKey]*shadowEntry), deleted: make(map[types.UID]time.Time),
		verdicts: workqueue.NewTypedDelayingQueue[*deletionVerdict](), delay: verdictDelay}
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
	} else {
		s.state.Active = false
		clear(s.pending)
		clear(s.deleted)
	}
	s.mu.Unlock()
	if !on {
		c.opts.Graph.Resync(c)
	}
}

// would logs, counts and remembers a decision that was not carried out.
func (c *Collector) would(ctx context.Context, action, target string, id graph.Identity, detail string, keyvals ...any) {
	if l := c.opts.DryRunLimiter; l != nil {
		_ = l.Wait(ctx) // only a cancelled context ends it early
	}
	ctrl.LoggerFrom(ctx).Info("Dry run: would "+action, append([]any{"detail", detail}, keyvals...)...)
	c.opts.Metrics.DryRunDecisions.WithLabelValues(action).Inc()
	s := c.shadow
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.state.Active {
		return
	}
	k := shadowKey{uid: id.UID, action: action, target: target}
	if _, counted := s.deleted[id.UID]; counted && action == ActionDelete {
		return
	}
	if _, ok := s.pending[k]; !ok {
		s.pending[k] = &shadowEntry{id: id, since: time.Now(), detail: detail}
	}
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
	go func() {
		<-ctx.Done()
		c.shadow.verdicts.ShutDown()
	}()
	go func() {
		for {
			v, quit := c.shadow.verdicts.Get()
			if quit {
				return
			}
			c.judgeDeletion(ctx, v)
			c.shadow.verdicts.Done(v)
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
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
	for uid, at := range s.deleted {
		if now.Sub(at) > countedFor {
			delete(s.deleted, uid)
		}
	}
	keys := make([]shadowKey, 0, len(s.pending))
	for k := range s.pending {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.mu.Lock()
		e, ok := s.pending[k]
		s.mu.Unlock()
		if !ok {
			continue
		}
		done, deletedInstead := c.carriedOut(k, e)
		switch {
		case done:
			c.outcome(ctx, k, e, OutcomeAgreed, "")
		case deletedInstead:
			c.outcome(ctx, k, e, OutcomeDisagreed, fmt.Sprintf("it was deleted, while ownergc would only %s (%s)", k.action, e.detail))
		case now.Sub(e.since) >= grace:
			c.outcome(ctx, k, e, OutcomeDisagreed, fmt.Sprintf("ownergc would %s (%s), and after %s nobody has", k.action, e.detail, grace))
		}
	}
}

// carriedOut reports whether the object now looks as the decision would
// have left it; deletedInstead, when a decision that would have kept it
// finds it deleted.
func (c *Collector) carriedOut(k shadowKey, e *shadowEntry) (done, deletedInstead bool) {
	obj, ok := c.opts.Objects.Cached(e.id.GroupKind(), e.id.Namespace, e.id.Name)
	gone := !ok || obj.UID != e.id.UID
	switch k.action {
	case ActionDelete:
		return gone || obj.DeletionTimestamp != nil, false
	case ActionRemoveFinalizer:
		return gone || !slices.Contains(obj.Finalizers, k.target), false
	default: // a reference removal
		if gone || obj.DeletionTimestamp != nil {
			return false, true
		}
		return !slices.ContainsFunc(obj.OwnerReferences, func(r metav1.OwnerReference) bool { return string(r.UID) == k.target }), false
	}
}

// outcome counts and reports the outcome of a pending decision.
func (c *Collector) outcome(ctx context.Context, k shadowKey, e *shadowEntry, outcome, message string) {
	s := c.shadow
	s.mu.Lock()
	if _, ok := s.pending[k]; !ok || !s.state.Active {
		s.mu.Unlock()
		return
	}
	delete(s.pending, k)
	s.mu.Unlock()
	c.count(ctx, e.id, k.action, outcome, message)
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
		s.deleted[id.UID] = time.Now()
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
	_, decided := s.pending[shadowKey{uid: v.id.UID, action: ActionDelete}]
	_, counted := s.deleted[v.id.UID]
	s.mu.Unlock()
	if decided || counted {
		return // the pending decision resolves itself, or was counted
	}
	var keep, going []string
	for _, o := range v.owners {
		ref := metav1.OwnerReference{APIVersion: o.Kind.APIVersion(), Kind: o.Kind.GroupKind().Kind, Name: o.Name, UID: o.UID}
		e := c.explainOwner(ctx, v.id, ref)
		switch e.Status {
		case explain.OwnerSolid, explain.OwnerUnverifiable:
			keep = append(keep, fmt.Sprintf("%s %s (%s)", ref.Kind, ref.Name, e.Reason))
		default:
			going = append(going, ref.Kind+" "+ref.Name)
		}
	}
	switch {
	case len(going) == 0:
		// Every owner lives: a user's or a controller's deletion, not a
		// collector's decision.
	case len(keep) == 0:
		c.count(ctx, v.id, ActionDelete, OutcomeAgreed, "")
	default:
		c.count(ctx, v.id, ActionDelete, OutcomeDisagreed, fmt.Sprintf(
			"it was deleted while its owners %s were gone or going, but ownergc would keep it: owner %s",
			strings.Join(going, ", "), strings.Join(keep, ", ")))
	}
}
