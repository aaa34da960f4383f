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

// Package expiry is the expiry collector: it deletes any object of a
// watched resource once its time to live has passed — the time its
// annotations ownergc.io/ttl and ownergc.io/expires give, or for an object
// that carries neither, the first rule of the GCPolicy's
// spec.collectors.expiry that selects it. When an object expires, and what
// the collector then does, is the decision model's (decision.ExpiryOf): the
// collector acts on it, /explain and the kubectl plugin say it.
//
// It watches nothing of its own and lists nothing: the monitors keep each
// object's creation time and expiry annotations in the graph, and tell the
// collector of every observation (monitor.Observer), from which it keeps a
// time-ordered schedule — a heap of the objects that expire, and only of
// those — and a timer for the earliest. When an object's time comes it is
// decided again from the graph and deleted with its UID and
// resourceVersion as preconditions: an object whose annotation was removed
// or extended meanwhile is scheduled again, not deleted, and one that
// changed after the decision fails the precondition and is decided again
// from its new version. Each deletion is one request, through the
// collector's client and rate limit. The one list it may make is of the
// Namespaces' labels, while a rule selects namespaces by label.
//
// It is an API-level collector like those of internal/apigc — a runnable
// on the leader, off unless the policy enables it, reported by name in
// status.collectors (Status) — and keeps nothing while off: a standby
// schedules nothing, and a new leader finds everything due by scanning the
// graph it already holds. Protection wins, ignored resources never expire,
// DryRun decides and reports without deleting (decision.Permit), and an
// annotation that cannot be read is never a reason to delete: the object
// gets a Warning event InvalidExpiry, once.
package expiry

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/logging"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

// Name is the collector's field in spec.collectors and status.collectors.
const Name = "expiry"

// Event reasons of the events recorded about objects.
const (
	// ReasonInvalidExpiry (Warning): an expiry annotation cannot be read;
	// the object does not expire by it.
	ReasonInvalidExpiry = "InvalidExpiry"
	// ReasonExpiresSoon (Warning): the object expires within the policy's
	// warnBefore.
	ReasonExpiresSoon = "ExpiresSoon"
	eventAction       = "Expiry"
)

// Options configure the collector. Graph, Policy, Discovery and Client are
// required, but for Status.
type Options struct {
	// Graph is what the monitors observed: each object's creation time,
	// expiry annotations, resourceVersion, finalizers and protection.
	Graph *graph.Graph
	// Policy is the policy in force; the collector acts only once it is
	// settled (read from the cluster).
	Policy *policy.Store
	// Discovery maps each kind to its resource.
	Discovery interface{ Snapshot() *discovery.Snapshot }
	// Client deletes the objects: the owner-reference collector's, so that
	// both share its rate limit. It also lists and watches the Namespaces'
	// labels when a rule selects namespaces by label.
	Client metadata.Interface
	// Recorder records InvalidExpiry and ExpiresSoon; nil records nothing.
	Recorder events.EventRecorder
	// Metrics are the metrics it writes (default: the single-cluster ones).
	Metrics *metrics.Set
	// Changed, when set, is called when what Status reports changes
	// (enabled, synced).
	Changed func()
	// Workers delete the objects whose time has come (default 8).
	Workers int
	// Shared, when set, are the workers a session's queue takes its
	// Workers from (a fleet's members). Unset, each session runs a pool of
	// its own.
	Shared *workers.Shared
	// BeforeDelete, when set, is called after an object is decided due and
	// before it is deleted: tests change the object there.
	BeforeDelete func(ctx context.Context, obj *graph.Object)
}

// Engine is the expiry collector. Build it with New, run it with the
// manager (it needs the leader election lease), and have the monitors tell
// it of their observations (it is their monitor.Observer).
//
// Concurrency: Start's goroutine starts and stops sessions; the monitors
// call Observed from their goroutines; mu guards sess and the schedule;
// the counters are atomic; reported is an lru.Cache, safe for concurrent
// use.
type Engine struct {
	opts    Options
	metrics *metrics.Expiry
	kicks   chan struct{}

	// running: a session schedules (the leader, enabled, its Namespaces
	// synced); Observed returns at once otherwise.
	running atomic.Bool
	// scheduled is the schedule's length, for Observed's fast path.
	scheduled atomic.Int64

	mu    sync.Mutex
	sess  *session
	sched *schedule

	lastRun                   atomic.Int64
	deleted, dryRun, invalids atomic.Int64
	// reported remembers what was reported once per object: an invalid
	// annotation's value, a warning, a DryRun or protected decision.
	reported *lru.Cache
	// kicksHandled counts the policy changes Start has acted on.
	kicksHandled atomic.Int64
}

var _ apigc.Collector = (*Engine)(nil)

// reportedSize bounds Engine.reported.
const reportedSize = 16384

// conflictRecheck is how long after a failed precondition the object is
// looked at again, should its new version not have been observed by then
// (the observation decides it again at once).
const conflictRecheck = 2 * time.Second

// New returns the collector, complete: run it with the manager.
func New(opts Options) *Engine {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.For("")
	}
	e := &Engine{opts: opts, metrics: opts.Metrics.Expiry, kicks: make(chan struct{}, 1), reported: lru.New(reportedSize), sched: newSchedule()}
	opts.Policy.Subscribe(func(_, _ *policy.Policy) { e.kick() })
	return e
}

func (e *Engine) kick() {
	select {
	case e.kicks <- struct{}{}:
	default:
	}
}

func (e *Engine) changed() {
	if e.opts.Changed != nil {
		e.opts.Changed()
	}
}

// NeedLeaderElection makes the collector run on the leader only.
func (e *Engine) NeedLeaderElection() bool { return true }

// Status implements apigc.Collector.
func (e *Engine) Status() apigc.Status {
	st := apigc.Status{
		Name:            Name,
		Enabled:         e.opts.Policy.Get().Collectors.Expiry.Enabled,
		Watches:         "the graph",
		Deleted:         e.deleted.Load(),
		DryRunDeletions: e.dryRun.Load(),
		Invalid:         e.invalids.Load(),
		Scheduled:       e.scheduled.Load(),
	}
	if t := e.lastRun.Load(); t != 0 {
		st.LastRun = time.Unix(0, t)
	}
	e.mu.Lock()
	if s := e.sess; s != nil {
		st.Running, st.Synced = true, s.synced.Load()
		if s.namespaces != nil {
			st.Watches = "the graph, Namespaces' labels"
		}
	}
	e.mu.Unlock()
	return st
}

// Start runs a session while the policy enables the collector, until ctx
// ends. It waits for the policy to be settled: nothing expires on a
// placeholder.
func (e *Engine) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName(Name)
	ctx = ctrl.LoggerInto(ctx, log)
	select {
	case <-e.opts.Policy.Settled():
	case <-ctx.Done():
		return nil
	}
	prev := e.opts.Policy.Get()
	e.kick()
	for {
		select {
		case <-ctx.Done():
			e.stopSession()
			return nil
		case <-e.kicks:
		}
		p := e.opts.Policy.Get()
		want := p.Collectors.Expiry.Enabled
		e.mu.Lock()
		s := e.sess
		e.mu.Unlock()
		switch {
		case want && s == nil:
			log.Info("Expiry enabled: scheduling from the graph")
			e.startSession(ctx, p)
			e.changed()
		case !want && s != nil:
			log.Info("Expiry disabled: schedule dropped")
			e.stopSession()
			e.changed()
		case want && (s.namespaces != nil) != p.Collectors.Expiry.NeedsNamespaceLabels():
			// Namespace labels needed now, or no longer: a new session.
			e.stopSession()
			e.startSession(ctx, p)
			e.changed()
		case want && affects(prev, p):
			s.rescan()
		}
		prev = p
		e.kicksHandled.Add(1)
	}
}

// affects reports whether a policy change changes what expires, when, or
// what the collector does then.
func affects(old, cur *policy.Policy) bool {
	oe, ce := old.Collectors.Expiry, cur.Collectors.Expiry
	return old.DryRun != cur.DryRun || !slices.Equal(old.ProtectedNamespaces, cur.ProtectedNamespaces) ||
		!old.SameIgnored(cur) || old.DefaultPropagation != cur.DefaultPropagation ||
		!slices.Equal(old.PropagationOverrides, cur.PropagationOverrides) ||
		oe.WarnBefore != ce.WarnBefore || !sameRules(oe.Rules, ce.Rules)
}

func sameRules(a, b []policy.ExpiryRule) bool {
	return slices.EqualFunc(a, b, func(x, y policy.ExpiryRule) bool {
		return x.GroupResource == y.GroupResource && x.After == y.After && slices.Equal(x.Namespaces, y.Namespaces) &&
			(x.Selector == nil) == (y.Selector == nil) && (x.Selector == nil || x.Selector.String() == y.Selector.String())
	})
}

// session is one enabled period on the leader: the schedule's timer, the
// queue of objects whose time has come, its workers, and the Namespaces'
// labels when a rule needs them.
type session struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	queue  workqueue.TypedRateLimitingInterface[key]
	// workers delete the queue's objects: a pool of the session's own, or
	// its lane in the shared workers (Options.Shared).
	workers    workers.Workers
	namespaces *namespaceLabels
	// wake tells the timer that the schedule's earliest time moved
	// earlier; rescans asks for a scan of the graph.
	wake, rescans chan struct{}
	synced        atomic.Bool
	// touched, during a scan, holds the objects observed since it began:
	// the scan, which read the graph before, does not schedule them.
	touched map[types.UID]struct{}
}

func (e *Engine) startSession(parent context.Context, p *policy.Policy) {
	ctx, cancel := context.WithCancel(parent)
	s := &session{
		e: e, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		wake: make(chan struct{}, 1), rescans: make(chan struct{}, 1),
	}
	q := workers.NewQueue(e.opts.Shared, workqueue.TypedRateLimitingQueueConfig[key]{
		Name: "ownergc_expiry", MetricsProvider: e.opts.Metrics.Queues, Clock: e.opts.Metrics.QueueClock})
	s.queue, s.workers = q, q.Workers(ctx, s.handle)
	if p.Collectors.Expiry.NeedsNamespaceLabels() {
		s.namespaces = newNamespaceLabels(e.opts.Client, s.rescan)
	}
	e.mu.Lock()
	e.sess = s
	e.mu.Unlock()
	go s.run()
}

func (e *Engine) stopSession() {
	e.mu.Lock()
	s := e.sess
	e.sess = nil
	e.mu.Unlock()
	if s == nil {
		return
	}
	e.running.Store(false)
	s.cancel()
	<-s.done
	e.mu.Lock()
	e.sched = newSchedule()
	e.setScheduled()
	e.mu.Unlock()
}

func (s *session) rescan() {
	select {
	case s.rescans <- struct{}{}:
	default:
	}
}

// run syncs the Namespaces' labels when needed, scans the graph, starts
// the workers and runs the timer until the session ends.
func (s *session) run() {
	defer close(s.done)
	e, log := s.e, ctrl.LoggerFrom(s.ctx)
	var informer sync.WaitGroup
	defer func() {
		s.workers.Stop()
		s.queue.ShutDown()
		informer.Wait()
	}()
	if s.namespaces != nil {
		informer.Go(func() { s.namespaces.informer.RunWithContext(s.ctx) })
		if !toolscache.WaitForCacheSync(s.ctx.Done(), s.namespaces.informer.HasSynced) {
			return
		}
	}
	e.running.Store(true)
	s.scan()
	s.synced.Store(true)
	e.changed()
	log.Info("Expiry scheduled from the graph", "scheduled", e.scheduled.Load())
	s.workers.Resize(e.opts.Workers)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		e.mu.Lock()
		next, ok := e.sched.next()
		e.mu.Unlock()
		wait := time.Hour
		if ok {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-s.rescans:
			s.scan()
		case <-timer.C:
		}
		e.mu.Lock()
		due := e.sched.due(time.Now())
		e.setScheduled()
		e.mu.Unlock()
		for _, k := range due {
			s.queue.Add(k)
		}
	}
}

// scan builds the schedule again from the graph: every object that carries
// an expiry annotation, and every object of the kinds a rule names. No
// list: the graph holds them all.
func (s *session) scan() {
	e := s.e
	p := e.opts.Policy.Get()
	snap := e.opts.Discovery.Snapshot()
	if snap == nil {
		return // nothing observed yet: observations schedule
	}
	resources := make(map[schema.GroupKind]schema.GroupResource, len(snap.Watchable))
	for _, r := range snap.Watchable {
		resources[r.GroupKind()] = r.GroupResource()
	}
	// From here on, observations schedule into a new schedule and are
	// marked touched: the scan, which reads the graph now, leaves them be.
	e.mu.Lock()
	s.touched = make(map[types.UID]struct{})
	e.sched = newSchedule()
	e.setScheduled()
	e.mu.Unlock()
	var found []*graph.Object
	e.opts.Graph.ScanExpiry(func(gk schema.GroupKind) bool {
		gr, ok := resources[gk]
		return ok && p.Collectors.Expiry.HasRulesFor(gr)
	}, func(o *graph.Object) { found = append(found, o) })

	now := time.Now()
	for _, o := range found {
		if gr, ok := resources[schema.GroupKind{Group: o.Group, Kind: o.Kind}]; ok {
			s.consider(gr, o, p, now, true)
		}
	}
	e.mu.Lock()
	s.touched = nil
	e.mu.Unlock()
}

// Observed implements monitor.Observer: the schedule follows the graph's
// observations. It runs on the monitors' goroutines: a few map operations.
func (e *Engine) Observed(res discovery.Resource, obj *graph.Object, deleted bool) {
	if !e.running.Load() {
		return // a standby, or disabled: nothing is scheduled
	}
	p := e.opts.Policy.Get()
	gr := res.GroupResource()
	if deleted || (!obj.Expiry.Any() && !p.Collectors.Expiry.HasRulesFor(gr)) {
		// Not an object that expires (a scan that found it so before
		// schedules it: its time, looked at, decides nothing).
		if e.scheduled.Load() > 0 {
			e.unschedule(obj.UID)
		}
		return
	}
	e.mu.Lock()
	s := e.sess
	if s != nil && s.touched != nil {
		s.touched[obj.UID] = struct{}{}
	}
	e.mu.Unlock()
	if s != nil {
		s.consider(gr, obj, p, time.Now(), false)
	}
}

// consider schedules obj for when the collector must look at it next:
// its expiry time, the time to warn before it, or now (due, or to report);
// or takes it out of the schedule. A scan's object (scanned) observed since
// the scan began (touched) is left as its observation scheduled it.
func (s *session) consider(gr schema.GroupResource, obj *graph.Object, p *policy.Policy, now time.Time, scanned bool) {
	e := s.e
	d := e.decide(s, gr, obj, p, now)
	k := key{uid: obj.UID, gk: schema.GroupKind{Group: obj.Group, Kind: obj.Kind}, namespace: obj.Namespace, name: obj.Name}
	var at time.Time
	switch {
	case d == nil:
	case d.State == decision.ExpiryScheduled:
		at = d.When()
		if w := e.warnAt(d); !w.IsZero() && !e.wasReported(report{uid: obj.UID, what: ReasonExpiresSoon, value: d.When().String()}) {
			at = w
		}
	case d.State == decision.ExpiryDue, d.State == decision.ExpiryProtected:
		at = d.When()
	}
	if d != nil && d.State != decision.ExpiryIgnored && d.State != decision.ExpiryDisabled && e.unreported(obj.UID, d) {
		at = now // an annotation that cannot be read, to report
	}
	if !at.IsZero() && at.Before(now) {
		at = now
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if scanned {
		if _, ok := s.touched[obj.UID]; ok {
			return
		}
	}
	if e.sess != s {
		return // the session ended meanwhile
	}
	if at.IsZero() {
		e.sched.remove(obj.UID)
	} else if e.sched.set(k, at) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	e.setScheduled()
}

// warnAt returns when to warn that the object expires, zero without
// warnBefore.
func (e *Engine) warnAt(d *decision.Expiry) time.Time {
	w := e.opts.Policy.Get().Collectors.Expiry.WarnBefore
	if w == 0 || d.At == nil {
		return time.Time{}
	}
	return d.At.Add(-w)
}

func (e *Engine) unschedule(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sched.remove(uid)
	e.setScheduled()
}

// setScheduled reports the schedule's length; mu is held.
func (e *Engine) setScheduled() {
	n := int64(e.sched.len())
	if e.scheduled.Swap(n) != n {
		e.metrics.Scheduled.Set(float64(n))
	}
}

// decide is the decision model's expiry of obj, of resource gr.
func (e *Engine) decide(s *session, gr schema.GroupResource, obj *graph.Object, p *policy.Policy, now time.Time) *decision.Expiry {
	o := decision.Object{Resource: gr, Namespace: obj.Namespace, Name: obj.Name, Created: obj.Created,
		Annotations: annotations(obj), Finalizers: obj.Finalizers, Deleting: obj.DeletionTimestamp != nil}
	c := decision.ExpiryContext{Now: now}
	if ns := s.namespaces; ns != nil {
		if obj.Namespace == "" {
			o.Labels, _ = ns.get(obj.Name) // a Namespace's own
		}
		c.NamespaceLabels = func() (map[string]string, error) {
			if l, ok := ns.get(obj.Namespace); ok {
				return l, nil
			}
			return nil, fmt.Errorf("namespace %s not observed", obj.Namespace)
		}
	}
	return decision.ExpiryOf(o, p, c)
}

// annotations are the annotations of obj the decision reads: its expiry
// annotations and its protection.
func annotations(obj *graph.Object) map[string]string {
	a := make(map[string]string, 3)
	if obj.Expiry.HasTTL {
		a[ownergcv1alpha1.TTLAnnotation] = obj.Expiry.TTL
	}
	if obj.Expiry.HasExpires {
		a[ownergcv1alpha1.ExpiresAnnotation] = obj.Expiry.Expires
	}
	if obj.Protected {
		a[ownergcv1alpha1.ProtectedAnnotation] = "true"
	}
	return a
}

// handle processes one object whose time has come, taken from the queue
// by the workers, and hands it back: forgotten, or queued again with
// backoff when it failed.
func (s *session) handle(_ context.Context, k key) {
	if s.ctx.Err() != nil {
		return
	}
	err := s.process(k)
	s.e.lastRun.Store(time.Now().UnixNano())
	switch {
	case err == nil:
		s.queue.Forget(k)
	case s.ctx.Err() != nil:
	default:
		ctrl.LoggerFrom(s.ctx).Error(err, "Expiry failed, will retry", "kind", k.gk.Kind, "namespace", k.namespace, "name", k.name)
		s.queue.AddRateLimited(k)
	}
}

// process decides again, from the graph, about an object whose time has
// come, and acts: warns, reports, or deletes it.
func (s *session) process(k key) error {
	e, log := s.e, ctrl.LoggerFrom(s.ctx)
	obj, ok := e.opts.Graph.Lookup(k.gk, k.namespace, k.name)
	if !ok || obj.UID != k.uid {
		return nil // gone, or another object by now: nothing to do
	}
	snap := e.opts.Discovery.Snapshot()
	if snap == nil {
		return nil
	}
	res, ok := snap.Resolve(schema.GroupVersionKind{Group: obj.Group, Version: obj.Version, Kind: obj.Kind})
	if !ok {
		return nil // not served: observed again once it is
	}
	p := e.opts.Policy.Get()
	now := time.Now()
	d := e.decide(s, res.GroupResource(), obj, p, now)
	if d == nil {
		return nil
	}
	log = logging.WithValues(log, "kind", obj.Kind, "namespace", obj.Namespace, "name", obj.Name, "uid", obj.UID)
	e.reportInvalid(obj, d, log)
	switch d.State {
	case decision.ExpiryScheduled:
		if w := e.warnAt(d); !w.IsZero() && !now.Before(w) && e.firstReport(report{uid: obj.UID, what: ReasonExpiresSoon, value: d.When().String()}) {
			e.record(obj, corev1.EventTypeWarning, ReasonExpiresSoon, "%s", d.String())
		}
		s.consider(res.GroupResource(), obj, p, now, false)
	case decision.ExpiryProtected:
		if e.firstReport(report{uid: obj.UID, what: "Protected", value: d.When().String()}) {
			log.Info("Protected: not expiring", "expiry", d.String())
		}
	case decision.ExpiryDue:
		return s.expire(obj, res, d, p, log)
	}
	return nil
}

// expire deletes an object whose time has come, with its UID and
// resourceVersion as preconditions; in DryRun it logs and counts it once.
func (s *session) expire(obj *graph.Object, res discovery.Resource, d *decision.Expiry, p *policy.Policy, log logr.Logger) error {
	e := s.e
	switch decision.Permit(p, obj.Namespace, annotations(obj)) {
	case decision.Permitted:
	case decision.DryRun:
		if e.firstReport(report{uid: obj.UID, what: "DryRun", value: d.When().String()}) {
			log.Info("Dry run: would delete", "reason", "expired", "expiry", d.String())
			e.dryRun.Add(1)
		}
		return nil
	default:
		return nil // protected: ExpiryOf says so first
	}
	if err := explain.ValidatePath(obj.Namespace, obj.Name); err != nil {
		return nil // names no object (the API server never sends one)
	}
	if e.opts.BeforeDelete != nil {
		e.opts.BeforeDelete(s.ctx, obj)
	}
	ri := e.opts.Client.Resource(res.GroupVersionResource)
	var rc metadata.ResourceInterface = ri
	if res.Namespaced {
		rc = ri.Namespace(obj.Namespace)
	}
	uid, rv, prop := obj.UID, obj.ResourceVersion, d.Propagation
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &prop}
	if rv != "" {
		opts.Preconditions.ResourceVersion = &rv
	}
	err := rc.Delete(s.ctx, obj.Name, opts)
	switch {
	case err == nil:
		e.deleted.Add(1)
		e.metrics.Expired.WithLabelValues(res.Group, res.Resource, source(d.By)).Inc()
		log.Info("Expired: deleted", "expiry", d.String())
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		// Changed since the graph observed it (or another object by that
		// name): its new version, observed, is decided again.
		log.V(1).Info("Expiring object changed meanwhile, deciding again from its new version", "error", err.Error())
		s.queue.AddAfter(key{uid: obj.UID, gk: schema.GroupKind{Group: obj.Group, Kind: obj.Kind}, namespace: obj.Namespace, name: obj.Name}, conflictRecheck)
	default:
		return fmt.Errorf("deleting %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
	}
	return nil
}

// source is ownergc_expired_total's source label of what gave the time.
func source(by decision.ExpirySource) string {
	switch by {
	case decision.ByTTL:
		return metrics.ExpirySourceTTL
	case decision.ByExpires:
		return metrics.ExpirySourceExpires
	}
	return metrics.ExpirySourceRule
}

// report is something reported once per object.
type report struct {
	uid         types.UID
	what, value string
}

// firstReport reports whether r was not reported yet, and remembers it.
func (e *Engine) firstReport(r report) bool {
	if _, ok := e.reported.Get(r); ok {
		return false
	}
	e.reported.Add(r, struct{}{})
	return true
}

func (e *Engine) wasReported(r report) bool {
	_, ok := e.reported.Get(r)
	return ok
}

// unreported reports whether d holds an invalid annotation not reported
// yet for the object.
func (e *Engine) unreported(uid types.UID, d *decision.Expiry) bool {
	return slices.ContainsFunc(d.Invalid, func(a decision.InvalidAnnotation) bool {
		return !e.wasReported(report{uid: uid, what: ReasonInvalidExpiry, value: a.Annotation + "=" + a.Value})
	})
}

// reportInvalid records a Warning event InvalidExpiry for each of obj's
// expiry annotations that cannot be read, once per value, and counts it.
func (e *Engine) reportInvalid(obj *graph.Object, d *decision.Expiry, log logr.Logger) {
	if d.State == decision.ExpiryIgnored || d.State == decision.ExpiryDisabled {
		return
	}
	for _, a := range d.Invalid {
		if !e.firstReport(report{uid: obj.UID, what: ReasonInvalidExpiry, value: a.Annotation + "=" + a.Value}) {
			continue
		}
		e.invalids.Add(1)
		e.metrics.Invalid.Inc()
		a.Value = shorten(a.Value)
		log.Info("Expiry annotation cannot be read: the object does not expire by it", "annotation", a.Annotation, "value", a.Value, "error", a.Error)
		e.record(obj, corev1.EventTypeWarning, ReasonInvalidExpiry, "%s; the object does not expire by it", a.String())
	}
}

// shorten bounds a value an event quotes.
func shorten(v string) string {
	const limit = 100
	if len(v) <= limit {
		return v
	}
	return v[:limit] + "…"
}

// record records an event about obj.
func (e *Engine) record(obj *graph.Object, eventType, reason, format string, args ...any) {
	if e.opts.Recorder == nil {
		return
	}
	regarding := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: schema.GroupVersion{Group: obj.Group, Version: obj.Version}.String(), Kind: obj.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID},
	}
	e.opts.Recorder.Eventf(regarding, nil, eventType, reason, eventAction, format, args...)
}
