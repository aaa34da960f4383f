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

	"github.com/ownergc/ownergc/internal/graph"
)

// store is a monitor's store: the graph. The monitor's goroutine (run.go)
// hands it each listed object, the end of each complete list, and each
// watch event; each object becomes an observation at once, so there is no
// informer store, no queue of changes and no handler between the API
// server and the graph, and each object is held once, as its node.
//
// A list's objects are handed to the list's observer as they arrive; only
// their names are kept (a graph.Listing, the monitor's), so a list, the
// first one or a relist after a watch expired, never holds a second copy of
// the objects, and once the last object has arrived only the objects the
// list lacks remain to be removed.
//
// The list's observer is a goroutine of its own, fed through a short
// buffer: the monitor's goroutine takes the next object off the stream
// while the previous ones are observed (the API server sends the list only
// as fast as its reader reads it). It observes in the order the objects
// arrived, and every other call of the store waits until it has observed
// all it was given, so observations stay in the order the API server sent
// them.
//
// Concurrency: listing and drained belong to the monitor's goroutine (it
// alone calls the store, and ends a list left open once it has returned).
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

// observe observes an object a watch reported added or modified, or
// deleted.
func (st *store) observe(o *metav1.PartialObjectMetadata, deleted bool) {
	st.endListing()
	st.observeNow(o, deleted)
}

func (st *store) observeNow(o *metav1.PartialObjectMetadata, deleted bool) {
	st.m.mu.Lock()
	defer st.m.mu.Unlock()
	if st.m.stopped {
		return
	}
	st.m.observe(st.s, o, deleted)
}

// list hands a listed object to the list's observer. An object listed and
// then changed before the list ends is observed in each state, as a watch
// would report it; one a failed list contained and the next one lacks is
// removed when that list completes.
func (st *store) list(o *metav1.PartialObjectMetadata) {
	if st.listing == nil {
		st.startListing()
	}
	st.listing <- o
}

// startListing starts the observer of a list.
func (st *store) startListing() {
	listing, drained := make(chan *metav1.PartialObjectMetadata, listingBuffer), make(chan struct{})
	st.listing, st.drained = listing, drained
	go func() {
		defer close(drained)
		for o := range listing {
			st.observeNow(o, false)
		}
	}()
}

// endListing waits until the list's observer, if one runs, has observed
// every object it was given, and ends it. A list that failed part way is
// ended by what comes next (the next list's replace, or the monitor's
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

// replace completes a list that contained the names in listing, every
// object of which has been handed to list: once they are observed, it
// observes the deletion of every observed object of the kind that the list
// does not contain (deleted while the watch was down, or while no monitor
// watched the kind). The first list makes the monitor synced.
func (st *store) replace(listing *graph.Listing) {
	st.endListing()
	m, s := st.m, st.s
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
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
}
