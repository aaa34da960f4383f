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

package workers

import (
	"context"
	"math"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Shared is workers that many queues take their workers from, each queue
// through a lane of its own (NewQueue): a fleet's, for every queue of every
// member's engine, in place of pools of their own.
//
// The workers take the lanes' items in turn, one item each, and run only
// while some lane has items ready: idle, they are none, where each queue's
// pool kept one waiting. A lane holds at most its size of them at once, as
// its queue's own pool would have.
//
// A fleet puts no bound of its own on them (NewShared(0)): a worker holds
// its place while it waits for its member's rate limit or API server, so a
// fleet-wide bound would let a few members that are slow, unreachable or in
// large cascades hold every worker and stall the others; each lane's size
// keeps what it holds to what its own pool would have.
//
// Concurrency: mu guards the workers' counts, ready and the lanes' fields
// it names; a lane's queue is safe for concurrent use, and its items are
// taken (Get) only by the workers, under mu, and only when it has one
// ready (Len > 0), so that Get never blocks.
type Shared struct {
	mu    sync.Mutex
	limit int
	// running counts the workers, processing those of them working on an
	// item; the others are looking for one under mu, or about to.
	running, processing int
	// ready holds the lanes that have items ready and room for another
	// worker, in turn.
	ready []*lane
}

// NewShared returns shared workers, at most workers of them at once, or,
// when workers is not positive, no bound but each lane's size.
func NewShared(workers int) *Shared {
	if workers <= 0 {
		workers = math.MaxInt
	}
	return &Shared{limit: workers}
}

// Running is how many workers run now.
func (s *Shared) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// typedLane is one queue's share of the shared workers. It is made with its
// queue (newLane), and offers the queue's items to the workers from attach
// to Stop.
type typedLane[T comparable] struct {
	lane
	q workqueue.TypedRateLimitingInterface[T]
	// Guarded by s.mu.
	ctx    context.Context
	handle Handler[T]
}

// lane is what the shared workers see of a typedLane, whatever its items'
// type.
type lane struct {
	s *Shared
	// len is its queue's length; take gets its next item (there is one)
	// and returns what processes it, false when the queue shut down. Both
	// are called under s.mu.
	len  func() int
	take func() (func(), bool)

	// Guarded by s.mu. limit is the lane's size, busy how many of its
	// items are in process; attached: it offers its items; queued: it is
	// in s.ready.
	limit, busy      int
	attached, queued bool
	// drained, once stopped, is closed when busy reaches 0.
	drained chan struct{}
}

var _ Workers = (*typedLane[int])(nil)

// newLane returns a lane of s for a new queue configured by cfg (its
// rate limiter client-go's default controller one): every item added to it
// (at once, after its delay, or again once done, when it was added while
// in process) is offered to the workers once the lane is attached.
func newLane[T comparable](s *Shared, cfg workqueue.TypedRateLimitingQueueConfig[T]) *typedLane[T] {
	l := &typedLane[T]{lane: lane{s: s}}
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock})
	cfg.DelayingQueue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, Queue: offering[T]{base, &l.lane}})
	l.q = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[T](), cfg)
	l.len = l.q.Len
	l.take = func() (func(), bool) {
		item, quit := l.q.Get() // the lane has an item ready: it does not block
		if quit {
			return nil, false
		}
		ctx, handle := l.ctx, l.handle
		return func() { process(ctx, l.q, item, handle) }, true
	}
	return l
}

// attach lets the lane's items be taken by the workers and handed to handle
// under ctx, at most its size (Resize) at once.
func (l *typedLane[T]) attach(ctx context.Context, handle Handler[T]) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l.ctx, l.handle, l.attached = ctx, handle, true
	s.queueLocked(&l.lane)
}

// offering is a lane's queue underneath its delays and rate limits: every
// item added, or done, offers the lane its workers.
type offering[T comparable] struct {
	workqueue.TypedInterface[T]
	l *lane
}

func (o offering[T]) Add(item T) {
	o.TypedInterface.Add(item)
	o.l.offer()
}

func (o offering[T]) Done(item T) {
	o.TypedInterface.Done(item)
	o.l.offer()
}

// offer puts the lane in turn if it has an item ready and room for another
// worker.
func (l *lane) offer() {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queueLocked(l)
}

// Size implements Workers.
func (l *lane) Size() int {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.limit
}

// Resize implements Workers: at most n of the lane's items in process at
// once. Shrinking lets the items in process finish.
func (l *lane) Resize(n int) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l.limit = n
	s.queueLocked(l)
}

// Stop implements Workers: no item of the lane is taken any more, and it
// returns once those in process are done. What is queued stays queued.
func (l *lane) Stop() {
	s := l.s
	s.mu.Lock()
	l.attached = false
	if l.queued {
		for i, r := range s.ready {
			if r == l {
				s.ready = append(s.ready[:i], s.ready[i+1:]...)
				break
			}
		}
		l.queued = false
	}
	l.drained = make(chan struct{})
	if l.busy == 0 {
		close(l.drained)
	}
	drained := l.drained
	s.mu.Unlock()
	<-drained
}

// queueLocked puts l in turn if it may give a worker an item now, and
// starts the workers the lanes in turn need; the caller holds mu.
func (s *Shared) queueLocked(l *lane) {
	if l.attached && !l.queued && l.busy < l.limit && l.len() > 0 {
		l.queued = true
		s.ready = append(s.ready, l)
	}
	// Every worker not processing an item takes the next lane in turn
	// before it leaves: start one for each lane beyond them.
	for s.running < s.limit && s.running-s.processing < len(s.ready) {
		s.running++
		go s.work()
	}
}

// work takes an item of the next lane in turn, puts that lane back at the
// end of the turn if it has more, processes the item, and goes on until no
// lane is in turn.
func (s *Shared) work() {
	s.mu.Lock()
	for len(s.ready) > 0 {
		l := s.ready[0]
		s.ready = s.ready[1:]
		l.queued = false
		run, ok := l.take()
		if !ok {
			continue // shut down: the queue's owner is stopping
		}
		l.busy++
		s.processing++
		s.queueLocked(l)
		s.mu.Unlock()

		run()

		s.mu.Lock()
		l.busy--
		s.processing--
		if !l.attached && l.busy == 0 && l.drained != nil {
			close(l.drained)
			l.drained = nil
		}
		s.queueLocked(l)
	}
	s.running--
	s.mu.Unlock()
}
