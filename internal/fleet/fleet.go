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

// Package fleet runs one ownergc engine per cluster that a
// multicluster-runtime provider engages: the fleet is a multicluster-aware
// runnable of a multicluster-runtime manager, whose Engage starts the
// cluster's engine (discovery, monitors, graph, collector, and beside them
// the GCPolicy controller; no controller-runtime manager of its own: the
// fleet runs them, engine.Engine.Run) and whose engagement context,
// cancelled when the provider drops the cluster or the coordinator hands it
// to another replica, stops it. Engines share the process, the host's
// manager, the list slots and the workers of every queue (each cluster
// holding no more of them than its own pools would have, workers.Shared): a
// cluster that is unreachable, slow or failing discovery never delays
// another.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/logging"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/workers"
)

// Options configure a fleet.
type Options struct {
	// Scheme knows the kinds the engines' Events are about and what runs
	// beside them reads and writes (the GCPolicy API).
	Scheme *runtime.Scheme
	// Config adjusts the client configuration of a cluster, as the
	// provider built it (rate limits, compression); may be nil.
	Config func(cfg *rest.Config)
	// Setup returns what runs beside the cluster's engine (the GCPolicy
	// controller), reading and writing the cluster through
	// eng.Connection(); ctx carries the cluster's logger. When it returns
	// a NoKindMatchError (the cluster does not serve the GCPolicy CRD), the
	// engine runs without what needs the kind, and is built again once the
	// cluster serves it.
	Setup func(ctx context.Context, cluster string, eng *engine.Engine) ([]manager.Runnable, error)
	// RetryAfter is the first wait before an engine that failed to build
	// or exited with an error is built again (default 1s, doubling up to a
	// minute).
	RetryAfter time.Duration
	// MaxObjects bounds the objects (nodes of the graph, virtual ones
	// included) one cluster's engine may hold: beyond it, the engine stops,
	// its status says why, and it is built again only after
	// OverLimitRetryAfter; 0 for no bound.
	MaxObjects int
	// OverLimitRetryAfter is how long an engine stopped by MaxObjects waits
	// before it is built again (default 10 minutes).
	OverLimitRetryAfter time.Duration
	// ProbeInterval is how long a cluster whose API server answered a probe
	// is taken to answer without another, as long as none of its engine's
	// requests fails to reach it (default DefaultProbeInterval).
	ProbeInterval time.Duration
	// ConcurrentLists bounds how many lists the engines' monitors run at
	// once, all clusters together (default DefaultConcurrentLists): many
	// clusters engaged at once list a few kinds at a time.
	ConcurrentLists int
	// ListBurst is called as bursts of the engines' lists start and end
	// (monitor.Burst): the fleet mode runs the Go garbage collector less
	// often while they stream (internal/run).
	ListBurst monitor.Burst
	// DormantCheck is how often the engines check a kind with no object,
	// which they do not watch, for a first one (default
	// DefaultDormantCheck; negative: every kind is watched). See
	// monitor.Options.DormantCheck.
	DormantCheck time.Duration
}

// DefaultDormantCheck is how often a fleet's engines check each kind that
// had no object for one: most kinds of an idle control plane have none,
// and a watch costs two goroutines and its buffers where a check costs one
// small LIST a minute (every 30 s, the checks of some fifty kinds cost an
// idle member about 0.3 millicores: `make bench`, fleet at rest).
const DefaultDormantCheck = time.Minute

// DefaultConcurrentLists is how many lists a fleet's monitors run at once
// by default: enough that an idle cluster's sixty-odd kinds list in a few
// round trips, few enough that a storm of engagements holds little more
// than the process holds at rest.
const DefaultConcurrentLists = 16

// Fleet is the set of engines of the engaged clusters.
//
// Concurrency: mu guards members; each member's state is guarded by its own
// mutex.
type Fleet struct {
	opts Options
	// lists are the list slots every engine's monitors share; workers the
	// workers every engine's queues take their workers from.
	lists   *monitor.ListSlots
	workers *workers.Shared
	// fence, when sharding, makes each cluster's engine run on one replica
	// at a time.
	fence *engineFence
	// gate, with the kubeconfig-secrets source, knows why a Secret engages
	// no cluster.
	gate *gate

	// stopped ends with the fleet (Start's context): every engine's run
	// ends with it, whether or not its engagement has ended yet.
	stopped context.Context
	stop    context.CancelFunc

	mu      sync.Mutex
	members map[string]*member
	subs    []func(name string)
	wg      sync.WaitGroup
}

// New returns an empty fleet.
func New(opts Options) *Fleet {
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.OverLimitRetryAfter <= 0 {
		opts.OverLimitRetryAfter = 10 * time.Minute
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ConcurrentLists <= 0 {
		opts.ConcurrentLists = DefaultConcurrentLists
	}
	if opts.DormantCheck == 0 {
		opts.DormantCheck = DefaultDormantCheck
	}
	f := &Fleet{opts: opts, members: make(map[string]*member), lists: monitor.NewListSlots(opts.ConcurrentLists, opts.ListBurst),
		workers: workers.NewShared(0)}
	f.stopped, f.stop = context.WithCancel(context.Background())
	return f
}

var _ multicluster.Aware = (*Fleet)(nil)

// Start implements manager.Runnable: it waits for the manager to stop, then
// stops every engine and waits for them. An engine's engagement ends only
// when the provider's controller stops, which the manager stops after the
// fleet: waiting for that, the fleet would hold the manager's shutdown
// until its grace period ran out. When sharding, it holds the replica's
// heartbeat from the start until every engine has stopped.
func (f *Fleet) Start(ctx context.Context) error {
	var heartbeat chan error
	stopHeartbeat := func() {}
	if f.fence != nil {
		hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		heartbeat = make(chan error, 1)
		go func() { heartbeat <- f.fence.heartbeat(hctx) }()
		stopHeartbeat = cancel
	}
	select {
	case <-ctx.Done():
	case err := <-heartbeat:
		// It cannot be held at all: no engine ever ran, and those waiting
		// for it end with the manager.
		return err
	}
	f.stop()
	f.wg.Wait()
	stopHeartbeat()
	if heartbeat != nil {
		return <-heartbeat
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the fleet
// runs wherever clusters are engaged (the provider decides, on the leader or
// on every replica when sharding).
func (f *Fleet) NeedLeaderElection() bool { return false }

// Engage implements multicluster.Aware: it starts the cluster's engine, in
// the background, and stops it when ctx ends. An engine of the same cluster
// that is still stopping (the cluster was re-engaged) is waited for first,
// so that a cluster never has two engines at once.
func (f *Fleet) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	if ctx.Err() != nil {
		// Disengaged already: engaged, it would take the place of the
		// cluster's running engine among the members.
		return nil
	}
	m := &member{name: name.String(), engaged: time.Now(), done: make(chan struct{}), cfg: rest.CopyConfig(cl.GetConfig())}
	m.reach.onFailure = func() { f.changed(m.name) }
	f.mu.Lock()
	prev := f.members[m.name]
	f.members[m.name] = m
	f.mu.Unlock()
	// The engine logs under the cluster's name, not under what engaged it.
	log := logging.WithValues(ctrl.Log, "cluster", m.name)
	log.Info("Cluster engaged")
	f.changed(m.name)
	// The engine stops when the cluster is disengaged, or the fleet stops.
	ctx, cancel := context.WithCancel(ctx)
	stopWithFleet := context.AfterFunc(f.stopped, cancel)
	f.wg.Go(func() {
		defer cancel()
		defer stopWithFleet()
		defer close(m.done)
		defer f.drop(m)
		if prev != nil {
			select {
			case <-prev.done:
			case <-ctx.Done():
				return
			}
		}
		f.run(ctrl.LoggerInto(ctx, log), m, rest.CopyConfig(m.cfg))
		log.Info("Cluster disengaged: its engine has stopped")
	})
	return nil
}

// run builds and runs the cluster's engine until ctx ends, building it again
// after a failure.
func (f *Fleet) run(ctx context.Context, m *member, cfg *rest.Config) {
	log := ctrl.LoggerFrom(ctx)
	wait := f.opts.RetryAfter
	for {
		var err error
		if f.fence != nil {
			err = f.fence.do(ctx, m.name, func(ctx context.Context) error { return f.runOnce(ctx, m, cfg) })
		} else {
			err = f.runOnce(ctx, m, cfg)
		}
		restart := errors.Is(err, errServedNow)
		if restart {
			m.stopped(nil)
		} else {
			m.stopped(err)
		}
		f.changed(m.name)
		if ctx.Err() != nil {
			return
		}
		if restart {
			log.Info("The cluster now serves what the engine's setup needed; building the engine again")
			wait = f.opts.RetryAfter
			continue
		}
		next := wait
		if errors.Is(err, ErrTooManyObjects) {
			// Built again at once, it would fill up again just as fast.
			next = f.opts.OverLimitRetryAfter
			log.Info("The cluster's engine holds more objects than a cluster may: stopped", "limit", f.opts.MaxObjects, "retryAfter", next)
		} else {
			log.Error(err, "The cluster's engine stopped; starting it again", "after", wait)
			wait = min(2*wait, time.Minute)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

// runOnce builds the cluster's engine and runs it until ctx ends or it
// fails.
func (f *Fleet) runOnce(ctx context.Context, m *member, cfg *rest.Config) error {
	// Each engine is built on a copy: wrapped below, the configuration of
	// the next one would be wrapped again.
	cfg = rest.CopyConfig(cfg)
	if f.opts.Config != nil {
		f.opts.Config(cfg)
	}
	// The engine's requests tell whether the cluster answers (Probe).
	cfg.Wrap(m.reach.wrap)
	log := ctrl.LoggerFrom(ctx)
	eng, err := engine.NewCluster(m.name, cfg, engine.ClusterOptions{
		Lists: f.lists, Workers: f.workers, DormantCheck: max(f.opts.DormantCheck, 0), Scheme: f.opts.Scheme, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("building the engine of cluster %s: %w", m.name, err)
	}
	defer eng.Release()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var beside []manager.Runnable
	if f.opts.Setup != nil {
		var err error
		beside, err = f.opts.Setup(ctx, m.name, eng)
		var noMatch *meta.NoKindMatchError
		switch {
		case errors.As(err, &noMatch):
			// Run without what needs the kind (the GCPolicy controller,
			// when the cluster does not serve GCPolicies: the built-in
			// defaults are in force), and build the engine again once the
			// cluster serves it.
			log.Info("The cluster does not serve a kind its setup needs; running without it until it does", "kind", noMatch.GroupKind.String())
			// Without the GCPolicy kind, the defaults are the member's
			// policy.
			eng.SettlePolicy()
			eng.OnDiscovery(func() {
				if eng.ServesKind(noMatch.GroupKind) {
					cancel(errServedNow)
				}
			})
		case err != nil:
			return fmt.Errorf("setting up cluster %s: %w", m.name, err)
		}
	}
	m.started(eng)
	eng.OnStatusChange(func() { f.changed(m.name) })
	f.changed(m.name)
	if f.opts.MaxObjects > 0 {
		go f.bound(runCtx, cancel, eng)
	}
	if err := eng.Run(runCtx, beside...); err != nil {
		return fmt.Errorf("running the engine of cluster %s: %w", m.name, err)
	}
	if ctx.Err() == nil {
		if cause := context.Cause(runCtx); errors.Is(cause, errServedNow) || errors.Is(cause, ErrTooManyObjects) {
			return cause
		}
		return errors.New("the engine stopped")
	}
	return nil
}

// ErrTooManyObjects: a cluster's engine stopped because its graph held more
// objects than Options.MaxObjects.
var ErrTooManyObjects = errors.New("the cluster has more objects than one cluster may hold")

// boundInterval is how often bound looks at the graph's size while it
// changes, or nears the bound: an initial list streams some tens of
// thousands of objects a second. While the graph holds still and far from
// the bound, the interval doubles up to boundIdleInterval: an idle member's
// bound costs a wake-up every few seconds, not four a second.
const (
	boundInterval     = 250 * time.Millisecond
	boundIdleInterval = 4 * time.Second
)

// bound stops the engine, through cancel, once its graph holds more than
// MaxObjects nodes, so that one cluster cannot take the memory of all.
func (f *Fleet) bound(ctx context.Context, cancel context.CancelCauseFunc, eng *engine.Engine) {
	interval := boundInterval
	t := time.NewTimer(interval)
	defer t.Stop()
	last := -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g := eng.Graph()
		n := g.Len() + g.VirtualLen()
		if n > f.opts.MaxObjects {
			cancel(fmt.Errorf("%w: its graph holds %d objects, the limit is %d (--max-objects-per-cluster)", ErrTooManyObjects, n, f.opts.MaxObjects))
			return
		}
		interval = nextBoundInterval(interval, n, last, f.opts.MaxObjects)
		last = n
		t.Reset(interval)
	}
}

// nextBoundInterval is bound's next interval after one of interval that
// found n objects, last the time before, under a bound of most.
func nextBoundInterval(interval time.Duration, n, last, most int) time.Duration {
	if n != last || most-n <= most/4 {
		return boundInterval
	}
	return min(2*interval, boundIdleInterval)
}

// errServedNow: the cluster now serves a kind that its engine's setup
// needed, and the engine is built again to use it.
var errServedNow = errors.New("the cluster now serves a kind the engine's setup needed")

// drop forgets m once its engine has stopped, unless the cluster was
// engaged again meanwhile.
func (f *Fleet) drop(m *member) {
	f.mu.Lock()
	if f.members[m.name] == m {
		delete(f.members, m.name)
	}
	f.mu.Unlock()
	f.changed(m.name)
}

func (f *Fleet) changed(name string) {
	f.mu.Lock()
	subs := slices.Clone(f.subs)
	f.mu.Unlock()
	for _, s := range subs {
		s(name)
	}
}

// Subscribe registers fn to be called, from the cluster's goroutine, when a
// cluster is engaged, its engine starts, fails or its status changes, or it
// is dropped; fn must not block.
func (f *Fleet) Subscribe(fn func(name string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, fn)
}

// Probe tells whether the API server of an engaged cluster answers: it
// asks for its version, within timeout, unless it answered a probe less
// than Options.ProbeInterval ago and none of the engine's requests has
// failed to reach it since (the first such failure is reported to the
// subscribers, who probe again).
func (f *Fleet) Probe(ctx context.Context, name string, timeout time.Duration) error {
	f.mu.Lock()
	m := f.members[name]
	f.mu.Unlock()
	if m == nil {
		return fmt.Errorf("cluster %s is not engaged", name)
	}
	began := time.Now()
	if m.reach.fresh(began, f.opts.ProbeInterval) {
		return nil
	}
	err := probe(ctx, name, m.cfg, timeout)
	if ctx.Err() == nil {
		m.reach.probed(began, err)
	}
	return err
}

// probe asks a cluster's API server for its version, within timeout.
func probe(ctx context.Context, name string, cfg *rest.Config, timeout time.Duration) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a discovery client for cluster %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return fmt.Errorf("cluster %s does not answer: %w", name, err)
	}
	return nil
}

// Refusal returns why the kubeconfig Secret named secret engages no
// cluster (a *KubeconfigError), nil when it does, or when it is no
// kubeconfig Secret.
func (f *Fleet) Refusal(secret string) error {
	if f.gate == nil {
		return nil
	}
	return f.gate.Refusal(secret)
}

// WorkersRunning is how many of the shared workers run now, all clusters
// and queues together.
func (f *Fleet) WorkersRunning() int { return f.workers.Running() }

// ListsAtOnce is the most lists the engines' monitors ran at once so far,
// and the bound (Options.ConcurrentLists).
func (f *Fleet) ListsAtOnce() (most, bound int) { return f.lists.Most(), f.lists.Size() }

// Clusters returns the names of the engaged clusters, sorted.
func (f *Fleet) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.members))
	for name := range f.members {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Engine returns the running engine of a cluster, nil when the cluster is
// not engaged or its engine is not running.
func (f *Fleet) Engine(name string) *engine.Engine {
	f.mu.Lock()
	m := f.members[name]
	f.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.state().Engine
}

// State returns the state of a cluster's engine; ok is false when the
// cluster is not engaged.
func (f *Fleet) State(name string) (st MemberState, ok bool) {
	f.mu.Lock()
	m := f.members[name]
	f.mu.Unlock()
	if m == nil {
		return MemberState{}, false
	}
	return m.state(), true
}

// MemberState is the state of an engaged cluster's engine.
type MemberState struct {
	// Engaged is when the cluster was engaged.
	Engaged time.Time
	// Engine is the running engine, nil while none runs.
	Engine *engine.Engine
	// Starts counts the engines built for the cluster since it was
	// engaged.
	Starts int
	// LastError is why the last engine stopped or failed to build.
	LastError error
}

// member is an engaged cluster.
type member struct {
	name    string
	engaged time.Time
	done    chan struct{}
	cfg     *rest.Config
	// reach tells whether the cluster's API server answers.
	reach reachability

	mu      sync.Mutex
	eng     *engine.Engine
	starts  int
	lastErr error
}

func (m *member) started(eng *engine.Engine) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eng, m.starts = eng, m.starts+1
}

func (m *member) stopped(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eng = nil
	if err != nil {
		m.lastErr = err
	}
}

func (m *member) state() MemberState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemberState{Engaged: m.engaged, Engine: m.eng, Starts: m.starts, LastError: m.lastErr}
}
