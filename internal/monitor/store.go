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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ownergc/ownergc/internal/graph"
)

// store is a monitor's reflector store: the graph. The reflector hands it
// each watch event and each complete list (Replace), from its one
// goroutine; each object becomes an observation at once, so there is no
// informer store, no queue of changes and no handler between the API
// server and the graph, and each object is held once, as its node.
//
// A list arrives in the reflector's temporary store first (with streaming
// lists, one object at a time while the initial events arrive); the store's
// transformer (Transformer) hands each object to the list's observer as it
// arrives and leaves only its name there, so a list, the first one or a
// relist after a watch expired, never holds a second copy of the objects,
// and once the last object has arrived only the objects the list lacks
// remain to be removed.
//
// The list's observer is a goroutine of its own, fed through a short
// buffer: the reflector goroutine takes the next object off the stream
// while the previous ones are observed (the API server sends the list only
// as fast as its reader reads it). It observes in the order the objects
// arrived, and every other call of the store waits until it has observed
// all it was given, so observations stay in the order the API server sent
// them.
//
// Concurrency: listing and drained belong to the reflector goroutine (the
// reflector calls the store, and its transformer, from that goroutine only;
// the monitor's goroutine ends a list left open once the reflector has
// returned).
type store struct {
	m *monitor
	s *Set
	// listing carries the objects of the list in progress to its observer;
	// nil when no list is in progress.
	listing chan *metav1.PartialObjectMetadata
	// drained is closed once the observer has observed every object sent
	// on listing and listing is closed.
	drained chan struct{}
}

// listingBuffer is how many listed objects may wait for the list's
// observer: enough to keep both goroutines busy, small beside any list
// (about a megabyte of decoded metadata).
const listingBuffer = 512

var (
	_ toolscache.ReflectorStore    = (*store)(nil)
	_ toolscache.TransformingStore = (*store)(nil)
)

// Add observes an object the watch reports added.
func (st *store) Add(obj any) error { st.endListing(); st.observe(obj, false); return nil }

// Update observes an object the watch reports modified.
func (st *store) Update(obj any) error { st.endListing(); st.observe(obj, false); return nil }

// Delete observes an object the watch reports deleted.
func (st *store) Delete(obj any) error { st.endListing(); st.observe(obj, true); return nil }

// Resync does nothing: the reflector runs without a resync period.
func (st *store) Resync() error { return nil }

func (st *store) observe(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	o, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	st.m.mu.Lock()
	defer st.m.mu.Unlock()
	if st.m.stopped {
		return
	}
	st.m.observe(st.s, o, deleted)
}

// listed is what the reflector's temporary store holds of a listed object
// the graph has observed: its namespace and name.
type listed struct{ namespace, name string }

// Transformer is the transform of the reflector's temporary store: it
// hands the listed object to the list's observer and gives back only its
// name (a listed). An object listed and then changed before the list ends is
// observed in each state, as a watch would report it; one a failed list
// contained and the next one lacks is removed when that list completes.
func (st *store) Transformer() toolscache.TransformFunc {
	return func(in any) (any, error) {
		o, ok := in.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, nil
		}
		if st.listing == nil {
			st.startListing()
		}
		st.listing <- o
		return &listed{namespace: o.Namespace, name: o.Name}, nil
	}
}

// startListing starts the observer of a list.
func (st *store) startListing() {
	listing, drained := make(chan *metav1.PartialObjectMetadata, listingBuffer), make(chan struct{})
	st.listing, st.drained = listing, drained
	go func() {
		defer close(drained)
		for o := range listing {
			st.observe(o, false)
		}
	}()
}

// endListing waits until the list's observer, if one runs, has observed
// every object it was given, and ends it. A list that failed part way is
// ended by what comes next (the next list's Replace, or the monitor's
// end): its objects are observed all the same, as a watch would have
// reported them, and the next complete list removes those it lacks.
func (st *store) endListing() {
	if st.listing == nil {
		return
	}
	close(st.listing)
	<-st.drained
	st.listing, st.drained = nil, nil
}

// Replace completes a list: it observes every object in it not observed
// yet (a list that did not stream: the reflector hands it over whole), then
// the deletion of every observed object of the kind that it does not
// contain (deleted while the watch was down, or while no monitor watched
// the kind). The first list makes the monitor synced.
func (st *store) Replace(list []any, _ string) error {
	st.endListing()
	m, s := st.m, st.s
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	listing := graph.NewListing(len(list))
	for _, item := range list {
		switch o := item.(type) {
		case *listed:
			listing.Add(o.namespace, o.name)
		case *metav1.PartialObjectMetadata:
			listing.Add(o.Namespace, o.Name)
			m.observe(s, o, false)
		}
	}
	var gone []*graph.Object
	s.opts.Graph.Unlisted(m.res.GroupKind(), listing, func(ns, name string, uid types.UID) {
		gone = append(gone, m.object(ns, name, uid))
	})
	for _, obj := range gone {
		s.opts.Graph.ObserveDeleted(obj, s.opts.Sink)
		s.observed(m, obj, true)
	}
	m.mu.Unlock()
	m.listed(s)
	return nil
}
