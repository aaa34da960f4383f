// Package monitor runs one reconciler per watched kind ("monitor"), started
// and stopped at runtime as discovery and the policy change. All monitors
// watch through the manager's one shared metadata-only cache. Each is
// level-based: for every key its informer reports, it reads the object from
// the cache and brings the graph in line with it; a key that is no longer in
// the cache removes the node of that kind, namespace and name.
//
// A monitor reconciles in its informer's event handler, which the informer
// calls for one notification at a time: a reconcile is a cache read and a few
// map operations on the graph, cheaper than handing the key to a queue and
// another goroutine. So once the handler registration reports synced, every
// object of the initial list has been reconciled, and the monitor is synced:
// it then removes from the graph the nodes the initial list did not contain.
// This is why monitors are not controller-runtime controllers: a source.Kind
// waits for the whole cache to sync (one stuck informer would hold every
// monitor), and no source reports when its initial events have been
// processed.
package monitor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/policy"
)

// failureGrace is how long list or watch errors must persist before a
// resource is reported as failed, so that one dropped connection does not
// flap the status.
const failureGrace = 5 * time.Second

// Failure is a resource that cannot be watched.
type Failure struct {
	Group, Version, Resource string
	Message                  string
}

// Set runs the monitors.
//
// Concurrency: mu guards monitors, startFailures and applied; it is held
// while monitors start and stop (informer registration is quick and never
// waits for a sync) and read-locked by Cached, Watching and Status. Each monitor's synced flag is atomic; errors recorded by
// informers (from their own goroutines) live in listErrs, a sync.Map.
type Set struct {
	cache  crcache.Cache
	graph  *graph.Graph
	sink   graph.Sink
	policy *policy.Store
	disc   *discovery.Discoverer

	mu       sync.RWMutex
	monitors map[schema.GroupKind]*monitor
	// startFailures are resources whose informer could not be created.
	startFailures map[schema.GroupKind]Failure
	applied       bool

	listErrs sync.Map // schema.GroupVersionKind -> *errState
}

type errState struct {
	mu    sync.Mutex
	err   error
	since time.Time
}

// NewSet returns a Set; Start it with the manager.
func NewSet(c crcache.Cache, g *graph.Graph, sink graph.Sink, p *policy.Store, d *discovery.Discoverer) *Set {
	return &Set{
		cache:         c,
		graph:         g,
		sink:          sink,
		policy:        p,
		disc:          d,
		monitors:      make(map[schema.GroupKind]*monitor),
		startFailures: make(map[schema.GroupKind]Failure),
	}
}

// SetCache sets the cache, for a Set created before the manager (its
// NewInformer hook goes into the cache options). Call it before Start.
func (s *Set) SetCache(c crcache.Cache) { s.cache = c }

// SetSink sets where the graph reports work. Call it before Start.
func (s *Set) SetSink(sink graph.Sink) { s.sink = sink }

// NeedLeaderElection: the graph runs on every replica, so that a standby takes
// over without re-listing the cluster.
func (s *Set) NeedLeaderElection() bool { return false }

// Start runs the monitors until ctx ends.
func (s *Set) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("monitors")
	ctx = ctrl.LoggerInto(ctx, log)

	changes := make(chan []discovery.Removed, 16)
	s.disc.Subscribe(func(c discovery.Change) { changes <- c.Removed })
	policyChanged := make(chan struct{}, 1)
	s.policy.Subscribe(func(old, new *policy.Policy) {
		if !old.SameIgnored(new) {
			select {
			case policyChanged <- struct{}{}:
			default:
			}
		}
	})
	retry := time.NewTicker(10 * time.Second)
	defer retry.Stop()
	if s.disc.Snapshot() != nil {
		s.apply(ctx, nil)
	}
	for {
		select {
		case <-ctx.Done():
			s.stopAll()
			return nil
		case removed := <-changes:
			s.apply(ctx, removed)
		case <-policyChanged:
			s.apply(ctx, nil)
		case <-retry.C:
			s.mu.Lock()
			failing := len(s.startFailures) > 0
			s.mu.Unlock()
			if failing {
				s.apply(ctx, nil)
			}
		}
	}
}

// apply starts and stops monitors to match the latest discovery snapshot and
// the policy in force.
func (s *Set) apply(ctx context.Context, removed []discovery.Removed) {
	snap := s.disc.Snapshot()
	if snap == nil {
		return
	}
	pol := s.policy.Get()
	log := ctrl.LoggerFrom(ctx)

	desired := make(map[schema.GroupKind]discovery.Resource)
	for _, r := range snap.Watchable {
		if pol.Ignores(r.GroupResource()) {
			continue
		}
		if _, dup := desired[r.GroupKind()]; !dup {
			desired[r.GroupKind()] = r
		}
	}
	deleted := make(map[schema.GroupKind]bool)
	for _, r := range removed {
		if r.Deleted {
			deleted[r.Resource.GroupKind()] = true
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for gk, m := range s.monitors {
		r, ok := desired[gk]
		if ok && r == m.res {
			continue
		}
		s.stop(ctx, m)
		delete(s.monitors, gk)
		if ok {
			// Same kind at another version: the new monitor re-observes
			// every object; its first sync drops what it does not find.
			continue
		}
		ignored := pol.Ignores(m.res.GroupResource())
		n := s.graph.RemoveKind(gk, deleted[gk] && !ignored, s.sink)
		log.Info("Stopped watching resource", "gvr", discovery.FormatGVR(m.res.GroupVersionResource), "ignored", ignored, "deleted", deleted[gk], "nodes", n)
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
		m, err := s.start(ctx, r)
		if err != nil {
			s.startFailures[gk] = Failure{Group: r.Group, Version: r.Version, Resource: r.Resource, Message: err.Error()}
			log.Error(err, "Cannot watch resource, will retry", "gvr", discovery.FormatGVR(r.GroupVersionResource))
			continue
		}
		delete(s.startFailures, gk)
		s.monitors[gk] = m
	}
	s.applied = true
	metrics.MonitoredResources.Set(float64(len(s.monitors)))
}

func (s *Set) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gk, m := range s.monitors {
		m.cancel()
		delete(s.monitors, gk)
	}
}

// monitor reconciles one kind.
type monitor struct {
	res      discovery.Resource
	obj      *metav1.PartialObjectMetadata
	informer toolscache.SharedIndexInformer
	reg      toolscache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
	synced   atomic.Bool
	// sweep: remove, once synced, the graph's nodes of this kind that the
	// initial list did not contain.
	sweep bool
}

func (s *Set) start(ctx context.Context, r discovery.Resource) (*monitor, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.GVK())
	inf, err := s.cache.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("getting informer for %s: %w", r.GroupVersionResource, err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer for %s is a %T, not a SharedIndexInformer", r.GroupVersionResource, inf)
	}
	// Nodes of this kind already in the graph (a monitor for it ran before)
	// may be gone from the cluster: check them once the list is in.
	m := &monitor{res: r, obj: obj, informer: sii, sweep: s.graph.KindLen(r.GroupKind()) > 0}
	// The informer hands its handlers the object it just stored, which is
	// the cache's current version of that key: observing it is reading the
	// cache, without building the key and looking it up again.
	observe := func(o any) {
		if pom, ok := o.(*metav1.PartialObjectMetadata); ok {
			m.observe(pom, s)
		}
	}
	m.reg, err = sii.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, o any) { observe(o) },
		DeleteFunc: func(o any) {
			if key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
				m.reconcile(key, s)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", r.GroupVersionResource, err)
	}
	mctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go m.waitForInitialList(mctx, s)
	ctrl.LoggerFrom(ctx).V(1).Info("Watching resource", "gvr", discovery.FormatGVR(r.GroupVersionResource))
	return m, nil
}

func (s *Set) stop(ctx context.Context, m *monitor) {
	m.cancel()
	_ = m.informer.RemoveEventHandler(m.reg)
	if err := s.cache.RemoveInformer(ctx, m.obj); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Removing informer", "gvr", discovery.FormatGVR(m.res.GroupVersionResource))
	}
	s.listErrs.Delete(m.res.GVK())
}

// waitForInitialList marks the monitor synced once its handler has
// reconciled the informer's initial list.
func (m *monitor) waitForInitialList(ctx context.Context, s *Set) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !m.reg.HasSynced() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	if m.sweep {
		m.removeUnlisted(s)
	}
	m.synced.Store(true)
}

// reconcile brings the graph in line with the cached object at key.
func (m *monitor) reconcile(key string, s *Set) {
	item, exists, err := m.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return
	}
	if !exists {
		ns, name, _ := toolscache.SplitMetaNamespaceKey(key)
		s.graph.ObserveAbsent(m.res.GroupKind(), ns, name, s.sink)
		return
	}
	if o, ok := item.(*metav1.PartialObjectMetadata); ok {
		m.observe(o, s)
	}
}

// observe brings the graph in line with a cached object.
func (m *monitor) observe(o *metav1.PartialObjectMetadata, s *Set) {
	obj := graph.Object{
		Group:           m.res.Group,
		Version:         m.res.Version,
		Kind:            m.res.Kind,
		Namespace:       o.Namespace,
		Name:            o.Name,
		UID:             o.UID,
		OwnerReferences: o.OwnerReferences,
		BeingDeleted:    o.DeletionTimestamp != nil,
	}
	for _, f := range o.Finalizers {
		switch f {
		case metav1.FinalizerOrphanDependents:
			obj.OrphanFinalizer = true
		case metav1.FinalizerDeleteDependents:
			obj.ForegroundFinalizer = true
		}
	}
	s.graph.Observe(&obj, s.sink)
}

// removeUnlisted removes from the graph the observed nodes of the monitor's
// kind that are not in the cache: objects deleted while nobody watched.
func (m *monitor) removeUnlisted(s *Set) {
	gk := m.res.GroupKind()
	indexer := m.informer.GetIndexer()
	var gone []string
	s.graph.Names(gk, func(ns, name string) {
		key := name
		if ns != "" {
			key = ns + "/" + name
		}
		if _, exists, _ := indexer.GetByKey(key); !exists {
			gone = append(gone, key)
		}
	})
	for _, key := range gone {
		ns, name, _ := toolscache.SplitMetaNamespaceKey(key)
		s.graph.ObserveAbsent(gk, ns, name, s.sink)
	}
}

// Cached returns the cached metadata of an object of a watched kind.
func (s *Set) Cached(gk schema.GroupKind, namespace, name string) (*metav1.PartialObjectMetadata, bool) {
	s.mu.RLock()
	m, ok := s.monitors[gk]
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := m.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	o, ok := item.(*metav1.PartialObjectMetadata)
	return o, ok
}

// Watching reports whether a kind is watched and its monitor has synced.
func (s *Set) Watching(gk schema.GroupKind) (watched, synced bool) {
	s.mu.RLock()
	m, ok := s.monitors[gk]
	s.mu.RUnlock()
	if !ok {
		return false, false
	}
	return true, m.synced.Load()
}

// Status is the state of the monitors.
type Status struct {
	// Monitored is the number of resources watched.
	Monitored int
	// Syncing lists the resources whose initial list is not reconciled yet
	// (failed ones excluded).
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
	snap := s.disc.Snapshot()
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
		if err, failing := s.failing(m.res.GVK(), now); failing {
			st.Failed = append(st.Failed, Failure{Group: m.res.Group, Version: m.res.Version, Resource: m.res.Resource,
				Message: fmt.Sprintf("cannot list or watch: %v", err)})
			continue
		}
		if !m.synced.Load() {
			st.Syncing = append(st.Syncing, discovery.FormatGVR(m.res.GroupVersionResource))
		}
	}
	sort.Slice(st.Failed, func(i, j int) bool {
		a, b := st.Failed[i], st.Failed[j]
		return a.Group+"/"+a.Version+"/"+a.Resource < b.Group+"/"+b.Version+"/"+b.Resource
	})
	sort.Strings(st.Syncing)
	st.Synced = snap != nil && s.applied && len(st.Syncing) == 0
	metrics.FailedResources.Set(float64(len(st.Failed)))
	return st
}

// Synced reports whether the graph has synced every resource that can be.
func (s *Set) Synced() bool { return s.Status().Synced }

func (s *Set) failing(gvk schema.GroupVersionKind, now time.Time) (error, bool) {
	v, ok := s.listErrs.Load(gvk)
	if !ok {
		return nil, false
	}
	st := v.(*errState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil || now.Sub(st.since) < failureGrace {
		return nil, false
	}
	return st.err, true
}

func (s *Set) record(gvk schema.GroupVersionKind, err error) {
	v, _ := s.listErrs.LoadOrStore(gvk, &errState{})
	st := v.(*errState)
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case err == nil:
		st.err = nil
	case st.err == nil:
		st.err, st.since = err, time.Now()
	default:
		st.err = err
	}
}

// NewInformer is the cache's informer constructor (cache.Options.NewInformer).
// For metadata informers it records list and watch errors per kind (how
// failing resources are found) and keeps no namespace index (the collector
// never lists by namespace, and the index costs memory per object).
func (s *Set) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if pom, ok := obj.(*metav1.PartialObjectMetadata); ok {
		gvk := pom.GroupVersionKind()
		if l, ok := lw.(*toolscache.ListWatch); ok {
			lw = s.tracking(gvk, l)
		}
		indexers = nil
	}
	return toolscache.NewSharedIndexInformerWithOptions(lw, obj, toolscache.SharedIndexInformerOptions{
		ResyncPeriod: resync,
		Indexers:     indexers,
	})
}

func (s *Set) tracking(gvk schema.GroupVersionKind, l *toolscache.ListWatch) *toolscache.ListWatch {
	list, watchFn := l.ListWithContextFunc, l.WatchFuncWithContext
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out, err := list(ctx, opts)
			s.record(gvk, err)
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, opts)
			if err != nil {
				s.record(gvk, err)
			}
			return w, err
		},
	}
}

// Transform is the cache's transform (cache.Options.DefaultTransform): the
// collector reads only names, UIDs, resourceVersions, deletion timestamps,
// finalizers and owner references, so a metadata object keeps only those, with
// its repeated strings (apiVersions, kinds, namespaces) interned. Other
// objects lose their managedFields.
func Transform(in any) (any, error) {
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = metav1.ObjectMeta{
			Name:              o.Name,
			Namespace:         intern(o.Namespace),
			UID:               o.UID,
			ResourceVersion:   o.ResourceVersion,
			DeletionTimestamp: o.DeletionTimestamp,
			Finalizers:        o.Finalizers,
			OwnerReferences:   o.OwnerReferences,
		}
		o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
		for i := range o.OwnerReferences {
			r := &o.OwnerReferences[i]
			r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
		}
		return o, nil
	case toolscache.DeletedFinalStateUnknown:
		return o, nil
	case metav1.Object:
		o.SetManagedFields(nil)
		return in, nil
	}
	return in, nil
}

func intern(s string) string {
	if s == "" || len(s) > 128 || strings.ContainsRune(s, 0) {
		return s
	}
	return unique.Make(s).Value()
}
