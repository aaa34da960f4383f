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

// Package apigc holds the API-level collectors besides the owner-reference
// collector: terminated Pods (pods.go), finished Jobs (jobs.go) and stale
// CertificateSigningRequests (csrs.go), with the semantics of
// kube-controller-manager's pod-garbage-collector-controller,
// ttl-after-finished-controller and
// certificatesigningrequest-cleaner-controller.
//
// Each collector is a manager.Runnable of its own that needs leader
// election. It costs nothing while the GCPolicy leaves it disabled: only
// while it is enabled does it run a session — informers of its own (not the
// manager's shared cache), whose cache keeps only the fields the collector
// reads, a named workqueue and its workers — and disabling it stops the
// session and drops the cache. Every write carries the object's UID as a
// precondition, and its resourceVersion where the decision depends on the
// object's state; DryRun (log "Dry run: would …", count, write nothing) and
// protection (protected namespaces, the ownergc.io/protected annotation)
// apply as they do to the owner-reference collector.
//
// The cached types (podInfo, jobInfo, …) are no API: controller-gen skips
// the package (+kubebuilder:skip).
//
// +kubebuilder:skip
package apigc

// What the collectors read and write (the manager's */* rule covers it; these
// say what for).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch;delete

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

// Options configure the collectors.
type Options struct {
	// Client reads and writes the objects; its rate limit bounds the
	// collectors' requests (informers included).
	Client Clients
	// Policy is the policy in force: whether each collector is enabled, its
	// settings, DryRun and protection.
	Policy *policy.Store
	// Changed, when set, is called when a collector's state that the
	// GCPolicy status reports changes (enabled, cache synced).
	Changed func()
	// PodQuarantine is how long the terminated-Pod collector waits before it
	// confirms with a live read that a Node its Pods are bound to is gone
	// (kube-controller-manager's 40 s when zero). Only tests change it.
	PodQuarantine time.Duration
	// Metrics are the metrics the collectors and their queues write
	// (default: the single-cluster ones).
	Metrics *metrics.Set
	// Shared, when set, are the workers a session's queue takes its workers
	// from (a fleet's members), at most the collector's worker count at
	// once. Unset, each session runs a pool of its own.
	Shared *workers.Shared
}

// metricSet returns the metrics the collectors write.
func (o Options) metricSet() *metrics.Set {
	if o.Metrics == nil {
		return metrics.For("")
	}
	return o.Metrics
}

// Collector is one API-level collector: a runnable on the leader that runs
// a session while the policy enables it.
type Collector interface {
	manager.Runnable
	manager.LeaderElectionRunnable
	// Status reports the collector's state.
	Status() Status
}

// Status is the state of one collector.
type Status struct {
	// Name is the collector's field in spec.collectors ("terminatedPods").
	Name string
	// Enabled: the policy in force enables the collector.
	Enabled bool
	// Running: its session runs (it is enabled, on the leader); Synced: the
	// session's cache has synced.
	Running, Synced bool
	// Watches names what its cache holds ("Pods, Nodes").
	Watches string
	// LastRun is when it last examined its objects; zero before.
	LastRun time.Time
	// Deleted and DryRunDeletions count, since this manager became the
	// leader, the objects it deleted and those it would have deleted in
	// DryRun.
	Deleted, DryRunDeletions int64
	// Scheduled and Invalid (the expiry collector's): the objects whose
	// expiry is scheduled, and those found, since this manager became the
	// leader, with an expiry annotation that cannot be read.
	Scheduled, Invalid int64
	// ListError is the latest error listing or watching what it watches,
	// while its cache has not synced (RBAC that does not allow it, say).
	ListError string
}

// work is what a collector does during one session.
type work[T comparable] interface {
	// resync queues the work the cache holds: after the cache synced, when
	// the policy changes what the collector decides, and periodically when
	// the collector asks for it.
	resync()
	// process decides about one item of the queue and acts on it; an error
	// retries the item with backoff.
	process(ctx context.Context, item T) error
}

// definition describes one collector.
type definition[T comparable] struct {
	// name is its field in spec.collectors; metric names its metrics and
	// queue (ownergc_<metric>).
	name, metric string
	// watches names what its cache holds, for the status.
	watches string
	workers int
	// resyncEvery, when set, resyncs the session periodically.
	resyncEvery time.Duration
	metrics     *metrics.APIGC
	enabled     func(p *policy.Policy) bool
	// affects reports whether a policy change (while enabled) changes what
	// the collector decides, so that the session must resync. DryRun and
	// protection changes always do.
	affects func(old, cur *policy.Policy) bool
	// start creates the session's informers in s.factory, with handlers
	// that add to s.queue, and returns the session's work.
	start func(s *session[T]) work[T]
	// transform trims the objects of the session's informers.
	transform toolscache.TransformFunc
}

// runner runs a collector's sessions.
//
// Concurrency: Start's goroutine starts and stops sessions; mu guards cur,
// read by Status; the counters are atomic; reported is an lru.Cache, safe
// for concurrent use.
type runner[T comparable] struct {
	def   definition[T]
	opts  Options
	kicks chan struct{}

	mu  sync.Mutex
	cur *session[T]

	lastRun                 atomic.Int64
	deleted, dryRunDeletion atomic.Int64
	// reported remembers the decisions logged and counted in DryRun or
	// for protected objects, so that a decision made again (every resync)
	// is reported once.
	reported *lru.Cache
	// kicksHandled counts the policy changes Start has acted on (tests wait
	// for it).
	kicksHandled atomic.Int64
}

// reportedSize bounds runner.reported.
const reportedSize = 16384

func newRunner[T comparable](def definition[T], opts Options) *runner[T] {
	r := &runner[T]{def: def, opts: opts, kicks: make(chan struct{}, 1), reported: lru.New(reportedSize)}
	opts.Policy.Subscribe(func(_, _ *policy.Policy) { r.kick() })
	return r
}

func (r *runner[T]) kick() {
	select {
	case r.kicks <- struct{}{}:
	default:
	}
}

func (r *runner[T]) changed() {
	if r.opts.Changed != nil {
		r.opts.Changed()
	}
}

// NeedLeaderElection makes the collector run on the leader only.
func (r *runner[T]) NeedLeaderElection() bool { return true }

// Status implements Collector.
func (r *runner[T]) Status() Status {
	st := Status{
		Name:            r.def.name,
		Enabled:         r.def.enabled(r.opts.Policy.Get()),
		Watches:         r.def.watches,
		Deleted:         r.deleted.Load(),
		DryRunDeletions: r.dryRunDeletion.Load(),
	}
	if t := r.lastRun.Load(); t != 0 {
		st.LastRun = time.Unix(0, t)
	}
	r.mu.Lock()
	if r.cur != nil {
		st.Running, st.Synced = true, r.cur.synced.Load()
		if e := r.cur.listError.Load(); e != nil && !st.Synced {
			st.ListError = *e
		}
	}
	r.mu.Unlock()
	return st
}

// Start runs a session while the policy enables the collector, until ctx
// ends.
func (r *runner[T]) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName(r.def.name)
	ctx = ctrl.LoggerInto(ctx, log)
	prev := r.opts.Policy.Get()
	r.kick()
	for {
		select {
		case <-ctx.Done():
			r.stopSession()
			return nil
		case <-r.kicks:
		}
		p := r.opts.Policy.Get()
		if prev.DryRun != p.DryRun || !slices.Equal(prev.ProtectedNamespaces, p.ProtectedNamespaces) {
			r.reported.Clear()
		}
		want := r.def.enabled(p)
		r.mu.Lock()
		running := r.cur != nil
		r.mu.Unlock()
		switch {
		case want && !running:
			log.Info("Collector enabled: starting its informers and workers")
			r.startSession(ctx)
			r.changed()
		case !want && running:
			log.Info("Collector disabled: stopping its informers and workers")
			r.stopSession()
			r.changed()
		case want && (prev.DryRun != p.DryRun || !slices.Equal(prev.ProtectedNamespaces, p.ProtectedNamespaces) || r.def.affects(prev, p)):
			r.mu.Lock()
			r.cur.requestResync()
			r.mu.Unlock()
		}
		prev = p
		r.kicksHandled.Add(1)
	}
}

// session is one enabled period of a collector: its informers, queue and
// workers.
type session[T comparable] struct {
	r *runner[T]
	// informers are the session's, created by newInformer.
	informers []toolscache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[T]
	// workers run the queue's items: a pool of the session's own, or its
	// lane in the shared workers (Options.Shared).
	workers workers.Workers
	// work is what the collector does in the session (definition.start).
	work work[T]
	// waitFor are the handlers to wait for, registered by start.
	waitFor []toolscache.InformerSynced
	resyncs chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	// synced is set once the handlers have synced.
	synced atomic.Bool
	// listError is the latest error of an informer's list or watch.
	listError atomic.Pointer[string]
}

// watch has enqueue called for every object inf adds or updates, and the
// session wait for the handler to sync.
func (s *session[T]) watch(inf toolscache.SharedIndexInformer, enqueue func(obj any)) {
	h, _ := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	s.waitFor = append(s.waitFor, h.HasSynced)
}

// lister lists and watches one resource with a typed client.
type lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// newInformer returns an informer of the session for the resource c lists,
// whose objects are of example's type, trimmed by the collector's transform,
// its list and watch errors logged and kept for the collector's status (a
// cache that cannot sync says why); the session runs it. (Not
// client-go's informer factory: it would build in an informer and a lister
// of every API group, for three resources.)
func newInformer[T comparable, L runtime.Object](s *session[T], c lister[L], example runtime.Object) toolscache.SharedIndexInformer {
	lw := toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, opts)
		},
	}, s.r.opts.Client)
	inf := toolscache.NewSharedIndexInformerWithOptions(lw, example, toolscache.SharedIndexInformerOptions{Indexers: toolscache.Indexers{}})
	_ = inf.SetTransform(s.r.def.transform)
	_ = inf.SetWatchErrorHandler(func(r *toolscache.Reflector, err error) {
		msg := err.Error()
		s.listError.Store(&msg)
		s.r.changed()
		toolscache.DefaultWatchErrorHandler(context.Background(), r, err)
	})
	s.informers = append(s.informers, inf)
	return inf
}

func (r *runner[T]) startSession(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	s := &session[T]{
		r:       r,
		resyncs: make(chan struct{}, 1),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	q := workers.NewQueue(r.opts.Shared, workqueue.TypedRateLimitingQueueConfig[T]{
		Name: "ownergc_" + r.def.metric, MetricsProvider: r.opts.metricSet().Queues, Clock: r.opts.metricSet().QueueClock})
	s.queue, s.workers = q, q.Workers(ctx, s.handle)
	s.work = r.def.start(s)
	r.mu.Lock()
	r.cur = s
	r.mu.Unlock()
	go s.run(ctx)
}

func (r *runner[T]) stopSession() {
	r.mu.Lock()
	s := r.cur
	r.cur = nil
	r.mu.Unlock()
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
}

func (s *session[T]) requestResync() {
	select {
	case s.resyncs <- struct{}{}:
	default:
	}
}

// run starts the informers, waits for them to sync, resyncs, and has the
// workers take the queue's items until ctx ends; then it stops everything
// and drops the cache.
func (s *session[T]) run(ctx context.Context) {
	defer close(s.done)
	log := ctrl.LoggerFrom(ctx)
	var informers sync.WaitGroup
	defer func() {
		s.workers.Stop()
		s.queue.ShutDown()
		informers.Wait() // they stop with ctx, which has ended
	}()
	for _, inf := range s.informers {
		informers.Go(func() { inf.RunWithContext(ctx) })
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), s.waitFor...) {
		return
	}
	s.synced.Store(true)
	log.Info("Collector's cache synced", "watches", s.r.def.watches)
	s.r.changed()
	s.workers.Resize(s.r.def.workers)
	s.work.resync()
	var tick <-chan time.Time
	if d := s.r.def.resyncEvery; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.resyncs:
		case <-tick:
		}
		s.work.resync()
	}
}

// handle decides about an item the workers took from the queue and hands it
// back: forgotten, or queued again with backoff when it failed.
func (s *session[T]) handle(ctx context.Context, item T) {
	if ctx.Err() != nil {
		// The session stops (the collector was disabled): what is still
		// handed out is decided no more.
		return
	}
	err := s.work.process(ctx, item)
	s.r.lastRun.Store(time.Now().UnixNano())
	if err == nil {
		s.queue.Forget(item)
		return
	}
	if ctx.Err() == nil {
		if apierrors.IsConflict(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("Object changed meanwhile, will look again", "item", item, "error", err.Error())
		} else {
			ctrl.LoggerFrom(ctx).Error(err, "Collecting failed, will retry", "item", item)
		}
		s.queue.AddRateLimited(item)
	}
}

// deletion is a deletion a collector decided.
type deletion struct {
	// object is the trimmed metadata of the object to delete.
	object *metav1.ObjectMeta
	// kind names its kind in logs ("Pod").
	kind string
	// reason is the rule that led to it (label of the metrics).
	reason string
	// detail says why, in words, for the logs.
	detail string
}

func (d deletion) keyvals() []any {
	kv := []any{"kind", d.kind, "name", d.object.Name, "uid", d.object.UID, "reason", d.reason, "detail", d.detail}
	if d.object.Namespace != "" {
		kv = append(kv, "namespace", d.object.Namespace)
	}
	return kv
}

// permitted reports whether the collector may carry out d, as the owner
// reference collector's decisions do (decision.Permit): not when the
// policy protects the object, nor in DryRun. Either is logged and counted
// once per object and rule.
func (r *runner[T]) permitted(ctx context.Context, d deletion) bool {
	log := ctrl.LoggerFrom(ctx)
	key := reportKey{uid: d.object.UID, reason: d.reason}
	switch decision.Permit(r.opts.Policy.Get(), d.object.Namespace, d.object.Annotations) {
	case decision.ProtectedByAnnotation, decision.ProtectedByNamespace:
		if r.firstReport(key) {
			log.Info("Protected: not deleting", d.keyvals()...)
			r.def.metrics.Protected.WithLabelValues(d.reason).Inc()
		}
		return false
	case decision.DryRun:
		if r.firstReport(key) {
			log.Info("Dry run: would delete", d.keyvals()...)
			r.def.metrics.DryRunDeletions.WithLabelValues(d.reason).Inc()
			r.dryRunDeletion.Add(1)
		}
		return false
	}
	return true
}

type reportKey struct {
	uid    types.UID
	reason string
}

// firstReport reports whether key was not reported yet, and remembers it.
func (r *runner[T]) firstReport(key reportKey) bool {
	if _, ok := r.reported.Get(key); ok {
		return false
	}
	r.reported.Add(key, struct{}{})
	return true
}

// recordDeleted counts and logs a deletion the collector made.
func (r *runner[T]) recordDeleted(log logr.Logger, d deletion) {
	r.deleted.Add(1)
	r.def.metrics.Deleted.WithLabelValues(d.reason).Inc()
	log.Info("Deleted "+d.kind, d.keyvals()...)
}

// trimMeta keeps of an object's metadata what the collectors read: its
// identity, resourceVersion, generation, creation and deletion timestamps,
// and the protection annotation.
func trimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
	if v, ok := m.Annotations[ownergcv1alpha1.ProtectedAnnotation]; ok {
		out.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: v}
	}
	return out
}

// preconditions returns DeleteOptions preconditions on uid and, when not
// empty, resourceVersion.
func preconditions(uid types.UID, resourceVersion string) *metav1.Preconditions {
	p := &metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		p.ResourceVersion = &resourceVersion
	}
	return p
}
