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

package expiry

import (
	"container/heap"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// key names an object of the schedule and of the queue: its UID, and
// where the graph holds it.
type key struct {
	uid             types.UID
	gk              schema.GroupKind
	namespace, name string
}

// entry is one object of the schedule: when the collector looks at it
// next (its expiry time, or the time to warn before it).
type entry struct {
	key   key
	at    time.Time
	index int
}

// schedule is the time-ordered schedule of the objects to look at: a heap
// by time, indexed by UID. It holds only objects that expire (or are to be
// reported), never one per object of the graph.
//
// Concurrency: none; the Engine's mu guards it.
type schedule struct {
	heap  entries
	byUID map[types.UID]*entry
}

func newSchedule() *schedule { return &schedule{byUID: make(map[types.UID]*entry)} }

// set schedules k at at, replacing its earlier time; it reports whether
// the earliest time of the schedule moved earlier.
func (s *schedule) set(k key, at time.Time) bool {
	first, hadFirst := s.next()
	if e, ok := s.byUID[k.uid]; ok {
		e.key, e.at = k, at
		heap.Fix(&s.heap, e.index)
	} else {
		e := &entry{key: k, at: at}
		s.byUID[k.uid] = e
		heap.Push(&s.heap, e)
	}
	return !hadFirst || at.Before(first)
}

// remove takes uid out of the schedule.
func (s *schedule) remove(uid types.UID) {
	if e, ok := s.byUID[uid]; ok {
		heap.Remove(&s.heap, e.index)
		delete(s.byUID, uid)
	}
}

// next returns the earliest time of the schedule; false when it is empty.
func (s *schedule) next() (time.Time, bool) {
	if len(s.heap) == 0 {
		return time.Time{}, false
	}
	return s.heap[0].at, true
}

// due takes out of the schedule and returns the objects whose time is not
// after now, earliest first.
func (s *schedule) due(now time.Time) []key {
	var out []key
	for len(s.heap) > 0 && !s.heap[0].at.After(now) {
		e := heap.Pop(&s.heap).(*entry)
		delete(s.byUID, e.key.uid)
		out = append(out, e.key)
	}
	return out
}

func (s *schedule) len() int { return len(s.byUID) }

// entries is a container/heap of entries, earliest first.
type entries []*entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h entries) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *entries) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
