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

// Package collector is ownergc's garbage processor: the attempt-to-delete and
// attempt-to-orphan queues, the worker pools that drain them, and the work
// they do (collect an object whose owners are gone, remove dangling
// references, finish foreground deletions, orphan dependents). What to do
// with an object is not decided here: the decision model
// (internal/decision) decides, from what this package learns of the object,
// its owners and its dependents; this package carries its decisions out and
// explains them (/explain).
//
// Decisions are made from the graph and the shared metadata cache; every
// write carries preconditions (the object's UID, and the resourceVersion the
// decision was made from), and a failed precondition means looking again with
// a live read, never giving up. In the common case collecting an object costs
// one request: the DELETE. What the collector cannot verify (an owner of a
// kind that is not served, a kind that cannot be listed) is never a reason to
// delete: it waits and retries.
//
// Files, from the one every other builds on:
//   - identity.go: how objects and owner references are named, placed and
//     compared (describe, namespaceFor, sameReference); it calls nothing
//     else of the package;
//   - operations.go: API requests, each through objectClient, which refuses
//     names that are not one path segment; patch.go: their patch bodies;
//   - shadow.go: dry-run (what the collector would have written, logged and
//     counted) and the shadow agreement with another collector;
//   - events.go, failures.go: reporting (events, failures in a row), naming
//     only what the report's readers may see (redact.go);
//   - classify.go: what is known of each owner of an object;
//   - attempt_to_delete.go: the attempt-to-delete work: the decision
//     model's decisions, carried out; orphan.go: the attempt-to-orphan work;
//   - blocked.go: foreground and orphaning deletions that last
//     (DeletionBlocked events and gauges);
//   - explain.go: explanations (Explain, served at /explain): the same
//     decisions, in words;
//   - collector.go: the queues, the worker pools and leadership; shared.go:
//     the workers a fleet's collectors share in place of pools of their own.
package collector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

// Resources maps kinds to the resources that serve them.
type Resources interface {
	// ResourceFor returns the resource to read and write objects of
	// group/version/kind through and whether it is namespaced; an error when
	// the API server does not serve that kind at that version and no other
	// version may stand in for it (as far as discovery knows).
	ResourceFor(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced bool, err error)
}

// Objects reads objects from the shared metadata cache.
type Objects interface {
	// Cached returns the cached metadata of an object of a watched kind. The
	// object belongs to the cache: never modify it.
	Cached(gk schema.GroupKind, namespace, name string) (*metav1.PartialObjectMetadata, bool)
	// Kind returns the state of the kind's monitor: whether the cache can
	// answer for it.
	Kind(gk schema.GroupKind) monitor.KindState
	// ConfirmDormantEmpty returns nil once no object of a kind that is not
	// watched, since it had none (a dormant monitor's), can have been
	// missed; monitor.ErrDormantWaking while one is being listed again
	// (monitor.Set.ConfirmDormantEmpty).
	ConfirmDormantEmpty(ctx context.Context) error
	// WakeKind watches the kind again if it is dormant: an object of it
	// was read.
	WakeKind(gk schema.GroupKind)
}

// Options configure a Collector.
type Options struct {
	Graph     *graph.Graph
	Resources Resources
	Objects   Objects
	Client    metadata.Interface
	Recorder  events.EventRecorder
	Policy    *policy.Store
	// GraphSynced reports whether the graph has synced every resource that
	// can be synced; workers wait for it (up to SyncTimeout) before they
	// start, so that owners still being listed are not read one by one.
	GraphSynced func() bool
	// SyncTimeout bounds that wait, and how long a decision that needs a
	// kind's cache waits for the kind's initial list before it reads the
	// object live instead (default 30 seconds).
	SyncTimeout time.Duration
	// Changed, when set, is called when the blocked deletions change.
	Changed func()
	// Metrics are the metrics the collector writes (default: the
	// single-cluster ones).
	Metrics *metrics.Set
	// DryRunLimiter, when set, paces the decisions DryRun does not carry
	// out as the client's rate limit paces the writes they stand for, so
	// that a dry run takes the time, and the memory, of the real one
	// rather than deciding a whole cascade at once.
	DryRunLimiter flowcontrol.RateLimiter
	// ExplainClient is the client of explanations' live reads (Explain):
	// a client of their own, with a rate limit of its own, so that
	// explaining never takes from the collector's. Without it,
	// explanations read nothing live.
	ExplainClient metadata.Interface
	// Shared, when set, are the workers the collector takes its workers
	// from (a fleet's members): its pool sizes bound how many of them its
	// items hold at once. Unset, it runs pools of its own.
	Shared *workers.Shared
}

// Queue names; they label the workqueue_* metrics (ownergc_workqueue_* in
// the fleet mode).
const (
	AttemptToDeleteQueue = "ownergc_attempt_to_delete"
	AttemptToOrphanQueue = "ownergc_attempt_to_orphan"
)

// DefaultSyncTimeout is the default Options.SyncTimeout.
const DefaultSyncTimeout = 30 * time.Second

// Collector drains the attempt-to-delete and attempt-to-orphan queues. It is a
// graph.Sink (the graph reports work to it) and a manager.Runnable that needs
// leader election. Until it starts (a standby replica) it takes no work and
// records no events: its queues stay empty while the graph stays warm, and
// when it starts it takes all the work the graph holds (graph.Resync).
//
// Concurrency: the queues are safe for concurrent use; leading is atomic; the
// worker pools are resized under poolsMu by policy changes. Workers otherwise
// share the graph (its own lock), smpUnsupported (a sync.Map), failures (its
// own lock) and recentlyDeleted (an lru.Cache, safe for concurrent use); the
// blocked-deletion scans run in one goroutine of their own and share blocked
// (its own lock) with readers of BlockedDeletions.
type Collector struct {
	opts Options

	attemptToDelete *workers.Queue[*graph.Node]
	attemptToOrphan *workers.Queue[*graph.Node]

	// leading is set when the collector starts: it takes work from then on.
	leading atomic.Bool

	poolsMu    sync.Mutex
	deletePool workers.Workers
	orphanPool workers.Workers

	// smpUnsupported remembers the resources that refused a strategic merge
	// patch (custom resources), so their patches go straight to JSON merge.
	smpUnsupported sync.Map

	failures *failureTracker
	blocked  *blockedTracker
	shadow   *shadow

	// recentlyDeleted remembers, by UID, the resourceVersion at which the
	// collector deleted an object, so that work queued before the informer
	// reports the deletion does not send the same DELETE again.
	recentlyDeleted *lru.Cache
}

// recentlyDeletedSize bounds recentlyDeleted.
const recentlyDeletedSize = 8192

var _ graph.Sink = (*Collector)(nil)

// Close shuts down the collector's queues, which run goroutines from New
// on: Start does it for the two work queues when it returns (and the
// shadow's when its loop ends); Close is for a collector that may never
// have started. Closing twice, or after Start, does nothing more.
func (c *Collector) Close() {
	c.attemptToDelete.ShutDown()
	c.attemptToOrphan.ShutDown()
	c.shadow.verdicts.ShutDown()
}

// New returns a collector.
func New(opts Options) *Collector {
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.For("")
	}
	c := &Collector{
		opts:            opts,
		failures:        newFailureTracker(),
		blocked:         newBlockedTracker(),
		shadow:          newShadow(opts.Shared),
		recentlyDeleted: lru.New(recentlyDeletedSize),
	}
	deletes := workqueue.TypedRateLimitingQueueConfig[*graph.Node]{Name: AttemptToDeleteQueue, MetricsProvider: opts.Metrics.Queues, Clock: opts.Metrics.QueueClock}
	orphans := workqueue.TypedRateLimitingQueueConfig[*graph.Node]{Name: AttemptToOrphanQueue, MetricsProvider: opts.Metrics.Queues, Clock: opts.Metrics.QueueClock}
	c.attemptToDelete, c.attemptToOrphan = workers.NewQueue(opts.Shared, deletes), workers.NewQueue(opts.Shared, orphans)
	return c
}

// AttemptToDelete queues a node for the attempt-to-delete workers.
func (c *Collector) AttemptToDelete(n *graph.Node) {
	if c.leading.Load() {
		c.attemptToDelete.Add(n)
	}
}

// AttemptToOrphan queues an owner for the attempt-to-orphan workers.
func (c *Collector) AttemptToOrphan(n *graph.Node) {
	if c.leading.Load() {
		c.attemptToOrphan.Add(n)
	}
}

// InvalidOwnerNamespace records a Warning event about a dependent whose owner
// reference names an owner that is not in its namespace.
func (c *Collector) InvalidOwnerNamespace(dependent, owner graph.Identity) {
	if c.leading.Load() {
		c.recordInvalidNamespace(dependent, owner)
	}
}

// NeedLeaderElection makes the collector run on the leader only.
func (c *Collector) NeedLeaderElection() bool { return true }

// QueueLengths returns the number of items waiting in each queue.
func (c *Collector) QueueLengths() (attemptToDelete, attemptToOrphan int) {
	return c.attemptToDelete.Len(), c.attemptToOrphan.Len()
}

// Workers returns the current sizes of the worker pools.
func (c *Collector) Workers() (attemptToDelete, attemptToOrphan int) {
	c.poolsMu.Lock()
	defer c.poolsMu.Unlock()
	if c.deletePool == nil {
		return 0, 0
	}
	return c.deletePool.Size(), c.orphanPool.Size()
}

// Start takes the work the graph holds and runs the workers until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("collector")
	ctx = ctrl.LoggerInto(ctx, log)
	defer c.attemptToDelete.ShutDown()
	defer c.attemptToOrphan.ShutDown()

	// From now on the graph's reports are queued; Resync queues what the
	// graph learnt before.
	c.leading.Store(true)
	c.opts.Graph.Resync(c)
	toDelete, toOrphan := c.QueueLengths()
	log.Info("Collector started", "attemptToDelete", toDelete, "attemptToOrphan", toOrphan)

	// Nothing is written on a placeholder policy: a cluster whose
	// GCPolicy says DryRun must not be collected in Enforce for the moment
	// it takes to read it.
	select {
	case <-c.opts.Policy.Settled():
	default:
		log.Info("Waiting for the GCPolicy to be read before starting the workers")
		select {
		case <-c.opts.Policy.Settled():
		case <-ctx.Done():
			return nil
		}
	}
	if c.opts.GraphSynced != nil {
		if err := waitFor(ctx, c.opts.SyncTimeout, c.opts.GraphSynced); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Info("Graph has not synced yet, starting workers anyway", "waited", c.opts.SyncTimeout)
		}
	}

	c.poolsMu.Lock()
	c.deletePool = c.attemptToDelete.Workers(ctx, handler(c.attemptToDelete, c.processAttemptToDelete))
	c.orphanPool = c.attemptToOrphan.Workers(ctx, handler(c.attemptToOrphan, c.processAttemptToOrphan))
	c.poolsMu.Unlock()

	c.resize(ctx, c.opts.Policy.Get())
	c.setDryRun(c.opts.Policy.Get().DryRun)
	c.opts.Policy.Subscribe(func(_, p *policy.Policy) {
		c.resize(ctx, p)
		c.setDryRun(p.DryRun)
	})
	go c.runBlockedScans(ctx)
	go c.runShadow(ctx)
	log.Info("Collector workers started")

	<-ctx.Done()
	c.poolsMu.Lock()
	deletes, orphans := c.deletePool, c.orphanPool
	c.poolsMu.Unlock()
	deletes.Stop()
	orphans.Stop()
	return nil
}

func (c *Collector) resize(ctx context.Context, p *policy.Policy) {
	c.poolsMu.Lock()
	defer c.poolsMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if c.deletePool.Size() != p.AttemptToDeleteWorkers || c.orphanPool.Size() != p.AttemptToOrphanWorkers {
		ctrl.LoggerFrom(ctx).Info("Resizing worker pools", "attemptToDelete", p.AttemptToDeleteWorkers, "attemptToOrphan", p.AttemptToOrphanWorkers)
	}
	c.deletePool.Resize(p.AttemptToDeleteWorkers)
	c.orphanPool.Resize(p.AttemptToOrphanWorkers)
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return errors.New("timed out")
		case <-tick.C:
		}
	}
	return nil
}

// errRequeue asks for the item to be looked at again later, with backoff,
// without it being an error (a virtual node that exists but is not observed
// yet).
var errRequeue = errors.New("requeue")

// errWaitForSync asks for the item to be looked at again shortly: it waits
// for its kind's informer to finish its initial list.
var errWaitForSync = errors.New("waiting for the kind's informer to sync")

// confirmDormantEmpty is called before a foreground or orphaning deletion
// completes: the dependents it read from the graph are all there are, but
// for objects of kinds not watched since they had none (monitor's dormant
// kinds), which it checks again; while one is listed again, the item waits
// for it as for a kind's sync.
func (c *Collector) confirmDormantEmpty(ctx context.Context) error {
	err := c.opts.Objects.ConfirmDormantEmpty(ctx)
	if errors.Is(err, monitor.ErrDormantWaking) {
		ctrl.LoggerFrom(ctx).V(2).Info("Waiting for a kind that had no object to be listed again", "reason", err.Error())
		return errWaitForSync
	}
	return err
}

// waitForSyncDelay is how soon an item waiting for its kind's sync is looked
// at again.
const waitForSyncDelay = 250 * time.Millisecond

// notServedError wraps the failure to map a kind to a resource: the API
// server does not serve it (yet, or any more). Items failing with it are
// retried with backoff and logged quietly.
type notServedError struct{ err error }

func (e *notServedError) Error() string { return e.err.Error() }
func (e *notServedError) Unwrap() error { return e.err }

// quiet reports whether err is an expected outcome rather than a failure.
func quiet(err error) bool {
	var notServed *notServedError
	return errors.Is(err, errRequeue) || errors.Is(err, errWaitForSync) || errors.As(err, &notServed)
}

// handler returns what the workers of q hand its items to: process, and
// the item handed back to q as the outcome says (handleItem).
func handler(q workqueue.TypedRateLimitingInterface[*graph.Node], process func(context.Context, *graph.Node) error) workers.Handler[*graph.Node] {
	return func(ctx context.Context, n *graph.Node) { handleItem(ctx, q, n, process(ctx, n)) }
}

// handleItem hands n, taken from q, back to q as the error its processing
// returned says: forgotten, or queued again (rate-limited, or shortly when
// its kind is still listing). The workers mark it done.
func handleItem(ctx context.Context, q workqueue.TypedRateLimitingInterface[*graph.Node], n *graph.Node, err error) {
	var notServed *notServedError
	switch {
	case err == nil:
		q.Forget(n)
	case errors.Is(err, errRequeue):
		ctrl.LoggerFrom(ctx).V(4).Info("Looking again later", "uid", n.UID(), "retries", q.NumRequeues(n))
		q.AddRateLimited(n)
	case errors.Is(err, errWaitForSync):
		ctrl.LoggerFrom(ctx).V(4).Info("Waiting for the kind's informer to sync", "uid", n.UID())
		q.AddAfter(n, waitForSyncDelay)
	case errors.As(err, &notServed):
		ctrl.LoggerFrom(ctx).V(4).Info("Kind not served, will retry", "uid", n.UID(), "reason", err.Error())
		q.AddRateLimited(n)
	default:
		ctrl.LoggerFrom(ctx).Error(err, "Processing failed, will retry", "uid", n.UID(), "retries", q.NumRequeues(n))
		q.AddRateLimited(n)
	}
}
