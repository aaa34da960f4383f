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

// Package monitor runs one monitor per watched kind, started and stopped at
// runtime as discovery and the policy change. A monitor is a reflector (the
// list-and-watch loop of client-go's informers, streaming lists included)
// over the kind's metadata, whose store is the graph: each object it lists
// or watches is observed into the graph on the reflector's goroutine, a few
// map operations, and held nowhere else. There is no informer store beside
// the graph, no queue of changes and no event handler; once the first list
// is observed, the monitor is synced.
//
// Monitors are not controller-runtime controllers and do not use the
// manager's cache: a cache keeps its own copy of every object, a source.Kind
// waits for the whole cache to sync (one stuck informer would hold every
// monitor), and no source reports when its initial events have been
// processed.
//
// When a kind stops being watched, what happens to its nodes depends on why
// (graph.Removal): its CRD was observed deleted (its objects are gone), it is
// no longer served (its objects may exist: kept, unverified), or the policy
// ignores it.
package monitor

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/policy"
)

// Options configure a Set. Every field but Changed is required.
type Options struct {
	// Config and HTTPClient are what the monitors' metadata client is
	// built from (one REST client and rate limiter for all, as the
	// informers of a client-go informer factory share their clientset's:
	// watches and streaming lists are not rate-limited, pages of a LIST
	// and the dormant kinds' checks are); the config's transport should be
	// wrapped by ListWatches.Transport.
	Config      *rest.Config
	HTTPClient  *http.Client
	ListWatches *ListWatches
	Graph       *graph.Graph
	// Sink receives the work observations create.
	Sink      graph.Sink
	Policy    *policy.Store
	Discovery *discovery.Discoverer
	// Changed is called, without locks held, when Status may have changed.
	Changed func()
	// Observer, when set, is told of each observation once the graph has
	// it: the expiry collector's schedule follows the graph.
	Observer Observer
	// Lists, when set, bounds how many monitors list at once, with those
	// of the other Sets that share it (a fleet's engines).
	Lists *ListSlots
	// DormantCheck, when positive, lets the monitors of kinds with no
	// object go dormant: such a kind is not watched but checked for a
	// first object every DormantCheck (dormant.go). Zero watches every
	// kind.
	DormantCheck time.Duration
	// ReadOnStreamingLists says that HTTPClient asks for uncompressed
	// answers: a streaming list's watch is then read on after its initial
	// events as the kind's watch, one request where a compressed one takes
	// two (its watch would stay compressed for as long as it lasts, holding
	// a decompressor per kind).
	ReadOnStreamingLists bool
}

// Observer is told of the monitors' observations.
type Observer interface {
	// Observed is called once the graph has observed obj, an object of
	// resource res, or its deletion (then obj has only its identity). It
	// is called from the monitors' goroutines, with the graph's lock
	// released and the monitor's held: it must be quick, must not block
	// and must not call into the monitors.
	Observed(res discovery.Resource, obj *graph.Object, deleted bool)
}

// observed tells the Observer, if any, of an observation of m.
func (s *Set) observed(m *monitor, obj *graph.Object, deleted bool) {
	if s.opts.Observer != nil {
		s.opts.Observer.Observed(m.res, obj, deleted)
	}
}

// Set runs the monitors.
//
// Concurrency: mu guards monitors, startFailures and applied; it is held
// while monitors start and stop (starting a reflector is quick and never
// waits for its list; stopping waits for the monitor's observation in
// flight)
// and read-locked by Cached, Kind and Status.
type Set struct {
	opts Options
	// source returns a monitor's client (a metadata client; a unit
	// test's); called with mu held.
	source func(discovery.Resource) (eventSource, error)
	// clients is the metadata client the monitors' clients share, made by
	// the first monitor; guarded by mu.
	clients *metadataClient
	// released is set once the start-up's memory was given back.
	released atomic.Bool

	mu       sync.RWMutex
	monitors map[schema.GroupKind]*monitor
	// startFailures are resources whose monitor could not be started.
	startFailures map[schema.GroupKind]Failure
	applied       bool
	// dormantSeq counts the monitors that went dormant (dormant.go).
	dormantSeq uint64
	// ctx is Start's, which woken monitors run in.
	ctx context.Context

	sweeps sweeps
}

// NewSet returns a Set; run it with the manager (it needs no leadership:
// every replica keeps the graph, so that a standby takes over at once).
func NewSet(opts Options) *Set {
	if opts.Changed == nil {
		opts.Changed = func() {}
	}
	config := rest.CopyConfig(opts.Config)
	// The monitors' clients set their own serializer (client.go).
	config.NegotiatedSerializer = nil
	s := &Set{
		opts:          opts,
		monitors:      make(map[schema.GroupKind]*monitor),
		startFailures: make(map[schema.GroupKind]Failure),
		sweeps:        sweeps{kick: make(chan struct{}, 1)},
	}
	s.source = func(r discovery.Resource) (eventSource, error) {
		if s.clients == nil {
			c, err := newMetadataClient(config, opts.HTTPClient)
			if err != nil {
				return nil, err
			}
			s.clients = c
		}
		return s.clients.For(r.GroupVersionResource), nil
	}
	return s
}

// NeedLeaderElection: the graph runs on every replica.
func (s *Set) NeedLeaderElection() bool { return false }

func (s *Set) changed() { s.opts.Changed() }

// Start runs the monitors until ctx ends.
func (s *Set) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("monitors")
	ctx = ctrl.LoggerInto(ctx, log)

	changes := make(chan []discovery.Removed, 16)
	s.opts.Discovery.Subscribe(func(c discovery.Change) { changes <- c.Removed })
	policyChanged := make(chan struct{}, 1)
	s.opts.Policy.Subscribe(func(old, new *policy.Policy) {
		if !old.SameIgnored(new) {
			select {
			case policyChanged <- struct{}{}:
			default:
			}
		}
	})
	retry := time.NewTicker(10 * time.Second)
	defer retry.Stop()
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	if s.opts.DormantCheck > 0 {
		go s.sweepLoop(ctx)
	}
	if s.opts.Discovery.Snapshot() != nil {
		s.apply(ctx, nil)
	}
	for {
		select {
		case <-ctx.Done():
			s.stopAll(ctx)
			return nil
		case removed := <-changes:
			s.apply(ctx, removed)
		case <-policyChanged:
			s.apply(ctx, nil)
		case <-retry.C:
			s.mu.RLock()
			failing := len(s.startFailures) > 0
			s.mu.RUnlock()
			if failing {
				s.apply(ctx, nil)
			}
		}
	}
}

// apply starts and stops monitors to match the latest discovery snapshot and
// the policy in force. removed lists the resources discovery reports no
// longer served, and whether their objects are known deleted.
func (s *Set) apply(ctx context.Context, removed []discovery.Removed) {
	snap := s.opts.Discovery.Snapshot()
	if snap == nil {
		return
	}
	pol := s.opts.Policy.Get()
	log := ctrl.LoggerFrom(ctx)

	desired := Desired(snap, pol)
	deleted := make(map[schema.GroupKind]bool)
	for _, r := range removed {
		if r.Deleted {
			deleted[r.Resource.GroupKind()] = true
		}
	}

	s.mu.Lock()
	for gk, m := range s.monitors {
		r, ok := desired[gk]
		if ok && r == m.res {
			continue
		}
		s.stopMonitor(ctx, m)
		delete(s.monitors, gk)
		if ok {
			// Same kind at another version: the new monitor observes every
			// object again and, once synced, checks the nodes it did not
			// list.
			log.Info("Watching resource at another version", "gvr", discovery.FormatGVR(r.GroupVersionResource), "previous", m.res.Version)
			continue
		}
		how := graph.KindUnserved
		switch {
		case deleted[gk]:
			how = graph.KindDeleted
		case pol.Ignores(m.res.GroupResource()):
			how = graph.KindIgnored
		}
		delete(deleted, gk)
		n := s.opts.Graph.RemoveKind(gk, how, s.opts.Sink)
		log.Info("Stopped watching resource", "gvr", m.gvr, "reason", how.String(), "nodes", n)
	}
	// Kinds deleted while no monitor ran for them (they had left discovery,
	// or were ignored): their unverified and virtual nodes are known gone.
	for gk := range deleted {
		if _, watched := s.monitors[gk]; !watched {
			if n := s.opts.Graph.RemoveKind(gk, graph.KindDeleted, s.opts.Sink); n > 0 {
				log.Info("Resource deleted", "group", gk.Group, "kind", gk.Kind, "nodes", n)
			}
		}
	}
	for gk := range s.startFailures {
		if _, ok := desired[gk]; !ok {
			delete(s.startFailures, gk)
		}
	}
	for gk, r := range desired {
		if _, ok := s.monitors[gk]; ok {
			continue
		}
		m, err := s.startMonitor(ctx, r)
		if err != nil {
			s.startFailures[gk] = Failure{Group: r.Group, Version: r.Version, Resource: r.Resource, Message: err.Error()}
			log.Error(err, "Cannot watch resource, will retry", "gvr", discovery.FormatGVR(r.GroupVersionResource))
			continue
		}
		delete(s.startFailures, gk)
		s.monitors[gk] = m
	}
	s.applied = true
	s.mu.Unlock()
	s.changed()
}

// releaseStartupMemory gives the memory of the initial lists back to the
// operating system once, when the first monitors have all synced. Decoding
// every object of every kind at start-up is a burst: the heap grows to
// twice what it held at its peak (the decoded lists, the graph being
// built), and a process that then sits idle would keep those pages until
// the runtime's scavenger returns them, slowly. From then on the process
// holds the graph and what its garbage collector's goal allows (with the
// default GOGC, up to twice the live heap while objects change). Sets that
// share ListSlots (a fleet's engines) return it together, once their lists
// have been quiet for a while (ListSlots): returning it forces a
// collection of the whole process's heap.
func (s *Set) releaseStartupMemory(log logr.Logger) {
	if s.released.Load() {
		return
	}
	s.mu.RLock()
	all := s.applied && len(s.startFailures) == 0
	for _, m := range s.monitors {
		all = all && m.synced.Load()
	}
	s.mu.RUnlock()
	if !all || !s.released.CompareAndSwap(false, true) {
		return
	}
	if s.opts.Lists != nil {
		s.opts.Lists.releaseMemory()
		return
	}
	go func() {
		start := time.Now()
		debug.FreeOSMemory()
		log.V(1).Info("Graph built: returned the initial lists' memory to the operating system", "took", time.Since(start).Round(time.Millisecond))
	}()
}

// stopAll stops every monitor and waits (a bounded time) for their
// reflectors to return, so that a stopped Set leaves no goroutine behind (a
// fleet builds and stops engines for as long as it runs).
func (s *Set) stopAll(ctx context.Context) {
	s.mu.Lock()
	stopped := make([]*monitor, 0, len(s.monitors))
	for gk, m := range s.monitors {
		s.stopMonitor(ctx, m)
		delete(s.monitors, gk)
		stopped = append(stopped, m)
	}
	// Unlocked: a reflector may be reading the Set as it finishes a list.
	s.mu.Unlock()
	deadline := time.After(reflectorStopTimeout)
	for _, m := range stopped {
		select {
		case <-m.done:
		case <-deadline:
			ctrl.LoggerFrom(ctx).Info("Reflector still running after the monitors stopped", "gvr", m.gvr)
			return
		}
	}
}

// reflectorStopTimeout bounds how long stopping the Set waits for its
// reflectors, which return as soon as their request in flight does.
const reflectorStopTimeout = 10 * time.Second

// Cached returns the metadata of an object of a watched kind as its monitor
// last observed it (the graph is the monitors' store): a new
// PartialObjectMetadata, the caller's.
func (s *Set) Cached(gk schema.GroupKind, namespace, name string) (*metav1.PartialObjectMetadata, bool) {
	s.mu.RLock()
	m, ok := s.monitors[gk]
	ok = ok && !m.dormant
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	obj, ok := s.opts.Graph.Lookup(gk, namespace, name)
	if !ok {
		return nil, false
	}
	return metadataOf(obj), true
}

// metadataOf returns obj as a PartialObjectMetadata, with the protected
// annotation of a protected object (a map shared by all: never modify it).
func metadataOf(obj *graph.Object) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
		DeletionTimestamp: obj.DeletionTimestamp, Finalizers: obj.Finalizers, OwnerReferences: obj.OwnerReferences,
	}}
	if obj.Protected {
		o.Annotations = protected
	}
	o.SetGroupVersionKind(schema.GroupVersionKind{Group: obj.Group, Version: obj.Version, Kind: obj.Kind})
	return o
}

// KindState is the state of a kind's monitor.
type KindState struct {
	// Watched: a monitor runs for the kind.
	Watched bool
	// Dormant: the kind had no object and is not watched, but checked for
	// one periodically (dormant.go); the graph cannot answer for it.
	Dormant bool
	// Synced: the monitor's initial list is in the graph.
	Synced bool
	// Failing: its monitor has failed to list or watch for a while.
	Failing bool
	// Since is when the monitor started.
	Since time.Time
}

// Kind returns the state of a kind's monitor.
func (s *Set) Kind(gk schema.GroupKind) KindState {
	s.mu.RLock()
	m, ok := s.monitors[gk]
	dormant := ok && m.dormant
	s.mu.RUnlock()
	if !ok {
		return KindState{}
	}
	if dormant {
		return KindState{Dormant: true, Since: m.started}
	}
	_, failing := s.opts.ListWatches.Failing(m.res.GVK(), time.Now())
	return KindState{Watched: true, Synced: m.synced.Load(), Failing: failing, Since: m.started}
}

// Failure is a resource that cannot be watched.
type Failure struct {
	Group, Version, Resource string
	Message                  string
}

// Status is the state of the monitors.
type Status struct {
	// Monitored is the number of resources watched, or dormant.
	Monitored int
	// Dormant is the number of monitored resources not watched, since
	// they had no object (Options.DormantCheck).
	Dormant int
	// Syncing lists the resources whose initial list is not observed yet
	// (failing ones excluded).
	Syncing []string
	// Failed lists the resources and group-versions that cannot be
	// discovered or watched.
	Failed []Failure
	// Synced: discovery ran, the monitors match it, and every monitor that
	// can sync has.
	Synced bool
}

// Status returns the state of the monitors.
func (s *Set) Status() Status {
	now := time.Now()
	snap := s.opts.Discovery.Snapshot()
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Status{Monitored: len(s.monitors)}
	if snap != nil {
		for _, f := range snap.Failed {
			st.Failed = append(st.Failed, Failure{Group: f.GroupVersion.Group, Version: f.GroupVersion.Version,
				Message: fmt.Sprintf("discovery failed: %v", f.Err)})
		}
	}
	for _, f := range s.startFailures {
		st.Failed = append(st.Failed, f)
	}
	for _, m := range s.monitors {
		if m.dormant {
			st.Dormant++
			continue
		}
		if err, failing := s.opts.ListWatches.Failing(m.res.GVK(), now); failing {
			st.Failed = append(st.Failed, Failure{Group: m.res.Group, Version: m.res.Version, Resource: m.res.Resource,
				Message: fmt.Sprintf("cannot list or watch: %v", err)})
			continue
		}
		if !m.synced.Load() {
			st.Syncing = append(st.Syncing, m.gvr)
		}
	}
	sort.Slice(st.Failed, func(i, j int) bool {
		a, b := st.Failed[i], st.Failed[j]
		return a.Group+"/"+a.Version+"/"+a.Resource < b.Group+"/"+b.Version+"/"+b.Resource
	})
	sort.Strings(st.Syncing)
	st.Synced = snap != nil && s.applied && len(st.Syncing) == 0
	return st
}

// Desired returns the resources the monitors watch, by kind, for what
// discovery found and the policy in force: every watchable resource the
// policy does not ignore, one per kind (the first of the kind's resources
// in the snapshot's order).
func Desired(snap *discovery.Snapshot, pol *policy.Policy) map[schema.GroupKind]discovery.Resource {
	desired := make(map[schema.GroupKind]discovery.Resource)
	for _, r := range snap.Watchable {
		if pol.Ignores(r.GroupResource()) {
			continue
		}
		if _, dup := desired[r.GroupKind()]; !dup {
			desired[r.GroupKind()] = r
		}
	}
	return desired
}
