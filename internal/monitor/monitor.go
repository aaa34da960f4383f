package monitor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
)

// monitor observes one kind: its informer's event handler brings the graph
// in line with every object the informer stores or deletes.
//
// Concurrency: the informer calls the handler for one notification at a
// time. mu is held by the handler while it observes and by stop, so that
// once stop returns no observation of this monitor is in flight or will
// start; the graph also ignores observations of a monitor generation other
// than the kind's current one. synced and since are set once.
type monitor struct {
	res      discovery.Resource
	obj      *metav1.PartialObjectMetadata
	informer toolscache.SharedIndexInformer
	reg      toolscache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
	// gen is the monitor's generation in the graph.
	gen uint64
	// again: the kind was observed before (an earlier monitor, another
	// version): once synced, nodes the list did not contain are checked.
	again bool
	// started is when the monitor started.
	started time.Time
	synced  atomic.Bool

	mu      sync.Mutex
	stopped bool
	// refs is the buffer the handler passes owner references to the graph
	// in; guarded by mu.
	refs []metav1.OwnerReference
}

// startMonitor registers a monitor's handler on the shared cache's informer
// for r. It never waits for the informer to sync.
func (s *Set) startMonitor(ctx context.Context, r discovery.Resource) (*monitor, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.GVK())
	s.opts.Informers.Watch(r.GroupVersionResource, r.GVK())
	inf, err := s.opts.Cache.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("getting informer for %s: %w", r.GroupVersionResource, err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer for %s is a %T, not a SharedIndexInformer", r.GroupVersionResource, inf)
	}
	m := &monitor{res: r, obj: obj, informer: sii, started: time.Now()}
	m.gen, m.again = s.opts.Graph.StartMonitor(r.GroupKind())
	// The informer hands its handlers the object it just stored, which is
	// the cache's current version of that key: observing it is reading the
	// cache, without building the key and looking it up again.
	m.reg, err = sii.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { m.handle(s, o, false) },
		UpdateFunc: func(_, o any) { m.handle(s, o, false) },
		DeleteFunc: func(o any) { m.handle(s, o, true) },
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

// stopMonitor stops the monitor and removes its informer from the cache.
func (s *Set) stopMonitor(ctx context.Context, m *monitor) {
	m.halt()
	m.cancel()
	_ = m.informer.RemoveEventHandler(m.reg)
	if err := s.opts.Cache.RemoveInformer(ctx, m.obj); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Removing informer", "gvr", discovery.FormatGVR(m.res.GroupVersionResource))
	}
	s.opts.Informers.Forget(m.res.GroupVersionResource, m.res.GVK())
}

// halt waits for an observation in flight to finish; the monitor observes
// nothing after it returns.
func (m *monitor) halt() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
}

// handle observes one notification of the informer.
func (m *monitor) handle(s *Set, o any, deleted bool) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, deleted = tomb.Obj, true
	}
	var c *Compact
	switch obj := o.(type) {
	case *Compact:
		c = obj
	case *metav1.PartialObjectMetadata:
		// Not transformed (a cache built without Transform).
		c = compact(obj)
	default:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	if deleted {
		s.opts.Graph.ObserveDeleted(m.object(c.GetNamespace(), c.name, c.uid), s.opts.Sink)
		return
	}
	obj := m.object(c.GetNamespace(), c.name, c.uid)
	// The graph copies what it keeps of the references (sharing their
	// strings), so one buffer serves every observation of the monitor.
	m.refs = c.appendOwnerReferences(m.refs[:0], false)
	obj.OwnerReferences = m.refs
	obj.BeingDeleted = c.deleting()
	obj.OrphanFinalizer = c.hasFinalizer(metav1.FinalizerOrphanDependents)
	obj.ForegroundFinalizer = c.hasFinalizer(metav1.FinalizerDeleteDependents)
	s.opts.Graph.Observe(obj, s.opts.Sink)
	clear(m.refs)
}

func (m *monitor) object(namespace, name string, uid types.UID) *graph.Object {
	return &graph.Object{
		Group: m.res.Group, Version: m.res.Version, Kind: m.res.Kind,
		Namespace: namespace, Name: name, UID: uid, Monitor: m.gen,
	}
}

// waitForInitialList marks the monitor synced once its handler has observed
// the informer's initial list. A kind observed before then has the nodes
// the list did not contain checked: observed ones are objects deleted while
// nobody watched, and unobserved ones are verified at once.
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
	if m.again {
		m.removeUnlisted(s)
		s.opts.Graph.ResyncKind(m.res.GroupKind(), s.opts.Sink)
	}
	m.synced.Store(true)
	ctrl.LoggerFrom(ctx).V(1).Info("Resource synced", "gvr", discovery.FormatGVR(m.res.GroupVersionResource), "after", time.Since(m.started).Round(time.Millisecond))
	s.changed()
}

// removeUnlisted removes from the graph the observed nodes of the monitor's
// kind that are not in the cache: objects deleted while nobody watched. Each
// is removed by UID, so that an object re-created under the same name in
// the meantime keeps its node.
func (m *monitor) removeUnlisted(s *Set) {
	indexer := m.informer.GetIndexer()
	var gone []*graph.Object
	s.opts.Graph.Names(m.res.GroupKind(), func(ns, name string, uid types.UID) {
		if _, exists, _ := indexer.GetByKey(cacheKey(ns, name)); !exists {
			gone = append(gone, m.object(ns, name, uid))
		}
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	for _, o := range gone {
		s.opts.Graph.ObserveDeleted(o, s.opts.Sink)
	}
}

// cached returns the cached object at namespace/name.
func (m *monitor) cached(namespace, name string) (*Compact, bool) {
	item, exists, err := m.informer.GetIndexer().GetByKey(cacheKey(namespace, name))
	if err != nil || !exists {
		return nil, false
	}
	switch o := item.(type) {
	case *Compact:
		return o, true
	case *metav1.PartialObjectMetadata:
		return compact(o), true
	}
	return nil, false
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
