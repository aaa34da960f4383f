// Package collector is ownergc's garbage processor: the attempt-to-delete and
// attempt-to-orphan queues, the worker pools that drain them, and the
// decisions they make (collect an object whose owners are gone, remove
// dangling references, finish foreground deletions, orphan dependents).
//
// Decisions are made from the graph and the shared metadata cache; every
// write carries preconditions (the object's UID, and the resourceVersion the
// decision was made from), and a failed precondition means looking again with
// a live read, never giving up. In the common case collecting an object costs
// one request: the DELETE.
package collector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/policy"
)

// Resources maps kinds to the resources that serve them.
type Resources interface {
	// ResourceFor returns the resource that serves group/version/kind and
	// whether it is namespaced; an error when the API server does not serve
	// that kind in that version (as far as discovery knows).
	ResourceFor(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced bool, err error)
}

// Objects reads objects from the shared metadata cache.
type Objects interface {
	// Cached returns the cached metadata of an object of a watched kind. The
	// object belongs to the cache: never modify it.
	Cached(gk schema.GroupKind, namespace, name string) (*metav1.PartialObjectMetadata, bool)
	// Watching reports whether a kind is watched and whether its informer has
	// synced into the graph.
	Watching(gk schema.GroupKind) (watched, synced bool)
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
	SyncTimeout time.Duration
}

// Queue names; they label the workqueue_* metrics.
const (
	AttemptToDeleteQueue = "ownergc_attempt_to_delete"
	AttemptToOrphanQueue = "ownergc_attempt_to_orphan"
)

// Collector drains the attempt-to-delete and attempt-to-orphan queues. It is a
// graph.Sink (the graph fills its queues) and a manager.Runnable that needs
// leader election: on a standby replica the queues fill but nothing writes.
//
// Concurrency: the queues and pools are safe for concurrent use; the worker
// pools are resized under poolsMu by policy changes. Workers share nothing
// else but the graph (its own lock) and smpUnsupported (a sync.Map).
type Collector struct {
	opts Options

	attemptToDelete workqueue.TypedRateLimitingInterface[*graph.Node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*graph.Node]

	poolsMu    sync.Mutex
	deletePool *pool
	orphanPool *pool

	// smpUnsupported remembers the resources that refused a strategic merge
	// patch (custom resources), so their patches go straight to JSON merge.
	smpUnsupported sync.Map

	failures *failureTracker

	// recentlyDeleted remembers, by UID, the resourceVersion at which the
	// collector deleted an object, so that work queued before the informer
	// reports the deletion does not send the same DELETE again.
	recentlyDeleted *lru.Cache
}

// recentlyDeletedSize bounds recentlyDeleted.
const recentlyDeletedSize = 8192

var _ graph.Sink = (*Collector)(nil)

// New returns a collector; its queues accept work at once.
func New(opts Options) *Collector {
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = time.Minute
	}
	return &Collector{
		opts: opts,
		attemptToDelete: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*graph.Node](),
			workqueue.TypedRateLimitingQueueConfig[*graph.Node]{Name: AttemptToDeleteQueue}),
		attemptToOrphan: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*graph.Node](),
			workqueue.TypedRateLimitingQueueConfig[*graph.Node]{Name: AttemptToOrphanQueue}),
		failures:        newFailureTracker(),
		recentlyDeleted: lru.New(recentlyDeletedSize),
	}
}

// AttemptToDelete queues a node for the attempt-to-delete workers.
func (c *Collector) AttemptToDelete(n *graph.Node) { c.attemptToDelete.Add(n) }

// AttemptToOrphan queues an owner for the attempt-to-orphan workers.
func (c *Collector) AttemptToOrphan(n *graph.Node) { c.attemptToOrphan.Add(n) }

// InvalidOwnerNamespace records a Warning event about a dependent whose owner
// reference names an owner that is not in its namespace.
func (c *Collector) InvalidOwnerNamespace(dependent, owner graph.Identity) {
	c.recordInvalidNamespace(dependent, owner.APIVersion(), owner.Kind, owner.Name, owner.UID)
}

// NeedLeaderElection makes the workers run on the leader only.
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
	return c.deletePool.size(), c.orphanPool.size()
}

// Start runs the workers until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("collector")
	ctx = ctrl.LoggerInto(ctx, log)
	defer c.attemptToDelete.ShutDown()
	defer c.attemptToOrphan.ShutDown()

	if c.opts.GraphSynced != nil {
		if err := waitFor(ctx, c.opts.SyncTimeout, c.opts.GraphSynced); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Info("Graph has not synced yet, starting workers anyway", "waited", c.opts.SyncTimeout)
		}
	}

	c.poolsMu.Lock()
	c.deletePool = newPool(ctx, func(ctx context.Context, stop <-chan struct{}) {
		runWorker(ctx, stop, c.attemptToDelete, c.processAttemptToDelete)
	})
	c.orphanPool = newPool(ctx, func(ctx context.Context, stop <-chan struct{}) {
		runWorker(ctx, stop, c.attemptToOrphan, c.processAttemptToOrphan)
	})
	c.poolsMu.Unlock()

	c.resize(ctx, c.opts.Policy.Get())
	c.opts.Policy.Subscribe(func(_, p *policy.Policy) { c.resize(ctx, p) })
	log.Info("Collector workers started")

	<-ctx.Done()
	c.poolsMu.Lock()
	c.deletePool.resize(0)
	c.orphanPool.resize(0)
	c.poolsMu.Unlock()
	return nil
}

func (c *Collector) resize(ctx context.Context, p *policy.Policy) {
	c.poolsMu.Lock()
	defer c.poolsMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if c.deletePool.size() != p.AttemptToDeleteWorkers || c.orphanPool.size() != p.AttemptToOrphanWorkers {
		ctrl.LoggerFrom(ctx).Info("Resizing worker pools", "attemptToDelete", p.AttemptToDeleteWorkers, "attemptToOrphan", p.AttemptToOrphanWorkers)
	}
	c.deletePool.resize(p.AttemptToDeleteWorkers)
	c.orphanPool.resize(p.AttemptToOrphanWorkers)
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

// pool is a resizable set of workers. Shrinking stops workers after the item
// they are working on, so no queued work is lost.
type pool struct {
	ctx     context.Context
	run     func(ctx context.Context, stop <-chan struct{})
	workers []chan struct{}
}

func newPool(ctx context.Context, run func(ctx context.Context, stop <-chan struct{})) *pool {
	return &pool{ctx: ctx, run: run}
}

func (p *pool) size() int { return len(p.workers) }

func (p *pool) resize(n int) {
	for len(p.workers) < n {
		stop := make(chan struct{})
		p.workers = append(p.workers, stop)
		go p.run(p.ctx, stop)
	}
	for len(p.workers) > n {
		last := len(p.workers) - 1
		close(p.workers[last])
		p.workers = p.workers[:last]
	}
}

// errRequeue asks for the item to be looked at again later, with backoff,
// without it being an error (a virtual node that exists but is not observed
// yet).
var errRequeue = errors.New("requeue")

// errWaitForSync asks for the item to be looked at again shortly: it waits
// for its kind's informer to finish its initial list.
var errWaitForSync = errors.New("waiting for the kind's informer to sync")

// waitForSyncDelay is how soon an item waiting for its kind's sync is looked
// at again.
const waitForSyncDelay = 250 * time.Millisecond

func runWorker(ctx context.Context, stop <-chan struct{}, q workqueue.TypedRateLimitingInterface[*graph.Node], process func(context.Context, *graph.Node) error) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, quit := q.Get()
		if quit {
			return
		}
		err := process(ctx, n)
		var notServed *notServedError
		switch {
		case err == nil:
			q.Forget(n)
		case errors.Is(err, errRequeue):
			q.AddRateLimited(n)
		case errors.Is(err, errWaitForSync):
			q.AddAfter(n, waitForSyncDelay)
		case errors.As(err, &notServed):
			ctrl.LoggerFrom(ctx).V(4).Info("Kind not served, will retry", "uid", n.UID(), "reason", err.Error())
			q.AddRateLimited(n)
		default:
			ctrl.LoggerFrom(ctx).Error(err, "Processing failed, will retry", "uid", n.UID(), "retries", q.NumRequeues(n))
			q.AddRateLimited(n)
		}
		q.Done(n)
	}
}

// failureTracker counts consecutive failures per node so that deletions that
// keep failing are reported once, as an event, rather than on every retry.
type failureTracker struct {
	mu     sync.Mutex
	counts map[*graph.Node]int
}

func newFailureTracker() *failureTracker {
	return &failureTracker{counts: make(map[*graph.Node]int)}
}

// failed records a failure and returns the number of consecutive failures.
func (f *failureTracker) failed(n *graph.Node) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[n]++
	return f.counts[n]
}

func (f *failureTracker) succeeded(n *graph.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.counts, n)
}

// failureEventThreshold is the number of consecutive failures after which a
// Warning event is recorded about the object.
const failureEventThreshold = 5

func describe(id graph.Identity) string {
	if id.Namespace == "" {
		return fmt.Sprintf("%s %s", id.Kind, id.Name)
	}
	return fmt.Sprintf("%s %s/%s", id.Kind, id.Namespace, id.Name)
}

// The collector reads, deletes and patches objects of every resource, as the
// collector in kube-controller-manager does, and records events about them.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
