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

package monitor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
)

// monitor observes one kind: its goroutine lists and watches it (run.go)
// and hands every object to the monitor's store (store.go), which observes
// it into the graph. The graph is the store: nothing else keeps the
// objects.
//
// Concurrency: the monitor's goroutine calls the store. mu is held
// while the store observes and by halt, so that once halt returns no
// observation of this monitor is in flight or will start; the graph also
// ignores observations of a monitor generation other than the kind's
// current one. synced is set once, after the first list is observed.
type monitor struct {
	res discovery.Resource
	// gvr is res's group/version/resource as Status and the logs name it,
	// formatted once: Status is computed at every change of every monitor.
	gvr    string
	cancel context.CancelFunc
	// gen is the monitor's generation in the graph.
	gen uint64
	// again: the kind was observed before (an earlier monitor, another
	// version): once listed, its virtual nodes are verified at once.
	again bool
	// src is the monitor's client; a dormant monitor's checks use it.
	src eventSource
	// dormant: the kind had no object, and the monitor's goroutine
	// returned (dormant.go); woken: the monitor was started in place of a
	// dormant one. Both are guarded by the Set's mu.
	dormant, woken bool
	// started is when the monitor started.
	started time.Time
	synced  atomic.Bool
	// done is closed when the monitor's goroutine has returned.
	done chan struct{}
	log  logr.Logger

	mu      sync.Mutex
	stopped bool
}

// startMonitor starts a monitor of r: its goroutine runs until the monitor
// is stopped. It never waits for the first list.
func (s *Set) startMonitor(ctx context.Context, r discovery.Resource) (*monitor, error) {
	client, err := s.source(r)
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client for %s: %w", discovery.FormatGVR(r.GroupVersionResource), err)
	}
	m := &monitor{res: r, gvr: discovery.FormatGVR(r.GroupVersionResource), src: client, started: time.Now(), done: make(chan struct{}), log: ctrl.LoggerFrom(ctx)}
	m.gen, m.again = s.opts.Graph.StartMonitor(r.GroupKind())
	st := &store{m: m, s: s}
	l := newLister(client, st, s.opts.ListWatches.Recorder(r))
	l.slots, l.readOn = s.opts.Lists, s.opts.ReadOnStreamingLists
	if s.opts.DormantCheck > 0 {
		l.goDormant = st.goDormant
	}
	mctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go func() {
		defer close(m.done)
		l.run(mctx, discovery.FormatGVR(r.GroupVersionResource))
		st.endListing()
	}()
	ctrl.LoggerFrom(ctx).V(1).Info("Watching resource", "gvr", discovery.FormatGVR(r.GroupVersionResource))
	return m, nil
}

// stopMonitor stops the monitor; it observes nothing after this returns.
func (s *Set) stopMonitor(_ context.Context, m *monitor) {
	m.halt()
	m.cancel()
	s.opts.ListWatches.Forget(m.res.GroupVersionResource, m.res.GVK())
}

// halt waits for an observation in flight to finish; the monitor observes
// nothing after it returns.
func (m *monitor) halt() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
}

// observe brings the graph in line with one object the reflector listed or
// watched, or with its deletion; the caller holds m.mu. The graph keeps
// what it needs of o (sharing its name string) and nothing else of it.
func (m *monitor) observe(s *Set, o *metav1.PartialObjectMetadata, deleted bool) {
	if deleted {
		obj := m.object(o.Namespace, o.Name, o.UID)
		s.opts.Graph.ObserveDeleted(obj, s.opts.Sink)
		s.observed(m, obj, true)
		return
	}
	obj := m.observation(o)
	s.opts.Graph.Observe(obj, s.opts.Sink)
	s.observed(m, obj, false)
}

// observation is what the graph keeps of o: all that is read of an object
// the monitors decoded (the expiry collector reads it from the graph),
// besides its resourceVersion and the annotation that ends a streaming
// list's initial events, which the reflector reads. The
// decoder keeps exactly that much (decode.go's field table), so every field
// read here must be kept there: decode_test.go checks that the observation
// of a decoded object is that of the whole object.
func (m *monitor) observation(o *metav1.PartialObjectMetadata) *graph.Object {
	obj := m.object(o.Namespace, o.Name, o.UID)
	obj.ResourceVersion = o.ResourceVersion
	obj.DeletionTimestamp = o.DeletionTimestamp
	obj.Finalizers = o.Finalizers
	obj.OwnerReferences = o.OwnerReferences
	obj.Protected = o.Annotations[ownergcv1alpha1.ProtectedAnnotation] == trueValue
	obj.Created = o.CreationTimestamp.Time
	obj.Expiry.TTL, obj.Expiry.HasTTL = o.Annotations[ownergcv1alpha1.TTLAnnotation]
	obj.Expiry.Expires, obj.Expiry.HasExpires = o.Annotations[ownergcv1alpha1.ExpiresAnnotation]
	return obj
}

func (m *monitor) object(namespace, name string, uid types.UID) *graph.Object {
	return &graph.Object{
		Group: m.res.Group, Version: m.res.Version, Kind: m.res.Kind,
		Namespace: namespace, Name: name, UID: uid, Monitor: m.gen,
	}
}

// listed marks the monitor synced once its first list is in the graph. A
// kind observed before then has its virtual nodes verified at once: objects
// that went away while it was not watched (the list removed the observed
// ones it did not contain).
func (m *monitor) listed(s *Set) {
	if m.synced.Load() {
		return
	}
	if m.again {
		s.opts.Graph.ResyncKind(m.res.GroupKind(), s.opts.Sink)
	}
	m.synced.Store(true)
	m.log.V(1).Info("Resource synced", "gvr", m.gvr, "after", time.Since(m.started).Round(time.Millisecond))
	s.releaseStartupMemory(m.log)
	s.changed()
}
