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

package collector

import (
	"context"
	"math"
	"sync"

	"k8s.io/client-go/util/workqueue"

	"github.com/ownergc/ownergc/internal/graph"
)

// Shared is the attempt-to-delete and attempt-to-orphan workers that every
// collector of a fleet takes its workers from (Options.Shared), in place of
// pools of its own.
//
// Each member keeps its queues (an item is a node of its graph: the member
// it belongs to is the queue's), and with them what is the member's own: the
// items' deduplication, their backoff and failure tracking, the queues'
// metrics, and the client whose rate limit its workers wait for. Its pool
// size (spec.workers of its GCPolicy) bounds how many of the shared workers
// its items hold at once, as its own pools did. The workers take the
// members' items in turn, one item each, and run only while some member has
// items queued: an idle fleet runs none, where each member's pools kept one
// waiting.
//
// The fleet puts no bound of its own on them (NewShared(0)): a worker holds
// its place while it waits for its member's rate limit or API server, so a
// fleet-wide bound would let a few members that are slow, unreachable or in
// large cascades hold every worker and stall the others; each member's
// bound keeps what it holds to what its own pools would have.
type Shared struct {
	deletes, orphans *sharedPool
}

// NewShared returns shared workers of at most workers of each kind at once,
// all members together, or, when workers is not positive, no bound but
// each member's pool size.
func NewShared(workers int) *Shared {
	if workers <= 0 {
		workers = math.MaxInt
	}
	return &Shared{deletes: &sharedPool{limit: workers}, orphans: &sharedPool{limit: workers}}
}

// Running returns how many workers run now, attempt-to-delete and
// attempt-to-orphan.
func (s *Shared) Running() (attemptToDelete, attemptToOrphan int) {
	return s.deletes.workers(), s.orphans.workers()
}

// sharedPool runs the workers of one kind for the lanes of every member:
// up to limit at once (tests bound it; a fleet does not), started when a
// lane offers an item and no worker is free to take it, leaving when no
// lane has one to offer.
//
// Concurrency: mu guards the pool and its lanes' fields; a lane's queue is
// safe for concurrent use, and its items are taken (Get) only by the
// pool's workers, under mu, and only when it has one ready (Len > 0), so
// that Get never blocks.
type sharedPool struct {
	mu    sync.Mutex
	limit int
	// running counts the workers, processing those of them working on an
	// item; the others are looking for one under mu, or about to.
	running, processing int
	// ready holds the lanes that have items ready and room for another
	// worker, in turn.
	ready []*lane
}

// lane is one member's queue of one kind, as the shared pool sees it. It is
// made with its queue (newLane), and takes workers from the start of the
// member's collector (attach) to its end (stop).
type lane struct {
	pool *sharedPool
	q    workqueue.TypedRateLimitingInterface[*graph.Node]

	// Guarded by pool.mu.
	ctx     context.Context
	process func(context.Context, *graph.Node) error
	// limit is the member's pool size, busy how many of its items are in
	// process.
	limit, busy int
	// attached: the member's collector runs; queued: the lane is in
	// pool.ready.
	attached, queued bool
	// drained, once stopped, is closed when busy reaches 0.
	drained chan struct{}
}

var _ workerPool = (*lane)(nil)

// newLane returns a lane of p for a member's queue, and the queue itself,
// named and measured as the collector's queues are: its items are offered
// to the shared workers once the lane is attached.
func (p *sharedPool) newLane(cfg workqueue.TypedRateLimitingQueueConfig[*graph.Node]) *lane {
	l := &lane{pool: p}
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[*graph.Node]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock})
	cfg.DelayingQueue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[*graph.Node]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, Queue: offering{base, l}})
	l.q = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*graph.Node](), cfg)
	return l
}

// offering is a lane's queue underneath its delays and rate limits: every
// item added (at once, after its delay, or again once done, when it was
// added while in process) is offered to the shared workers.
type offering struct {
	workqueue.TypedInterface[*graph.Node]
	l *lane
}

func (o offering) Add(n *graph.Node) {
	o.TypedInterface.Add(n)
	o.l.offer()
}

func (o offering) Done(n *graph.Node) {
	o.TypedInterface.Done(n)
	o.l.offer()
}

// attach lets the lane's items be taken by the shared workers, processed
// with process under ctx, at most limit at once (resize).
func (l *lane) attach(ctx context.Context, process func(context.Context, *graph.Node) error) {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	l.ctx, l.process, l.attached = ctx, process, true
	p.queueLocked(l)
}

// offer puts the lane in turn if it has an item ready and room for another
// worker.
func (l *lane) offer() {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queueLocked(l)
}

// size implements workerPool.
func (l *lane) size() int {
	l.pool.mu.Lock()
	defer l.pool.mu.Unlock()
	return l.limit
}

// resize implements workerPool: at most n of the lane's items in process
// at once. Shrinking lets the items in process finish.
func (l *lane) resize(n int) {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	l.limit = n
	p.queueLocked(l)
}

// stop implements workerPool: no item of the lane is taken any more, and it
// returns once those in process are done. What is queued stays queued.
func (l *lane) stop() {
	p := l.pool
	p.mu.Lock()
	l.attached = false
	if l.queued {
		for i, r := range p.ready {
			if r == l {
				p.ready = append(p.ready[:i], p.ready[i+1:]...)
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
	p.mu.Unlock()
	<-drained
}

// queueLocked puts l in turn if it may give a worker an item now, and
// starts the workers the lanes in turn need; the caller holds mu.
func (p *sharedPool) queueLocked(l *lane) {
	if l.attached && !l.queued && l.busy < l.limit && l.q.Len() > 0 {
		l.queued = true
		p.ready = append(p.ready, l)
	}
	// Every worker not processing an item takes the next lane in turn
	// before it leaves: start one for each lane beyond them.
	for p.running < p.limit && p.running-p.processing < len(p.ready) {
		p.running++
		go p.work()
	}
}

// workers is how many workers run now.
func (p *sharedPool) workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// work takes an item of the next lane in turn, puts that lane back at the
// end of the turn if it has more, processes the item, and goes on until no
// lane is in turn.
func (p *sharedPool) work() {
	p.mu.Lock()
	for len(p.ready) > 0 {
		l := p.ready[0]
		p.ready = p.ready[1:]
		l.queued = false
		n, quit := l.q.Get() // the lane has an item ready: it does not block
		if quit {
			continue // shut down: the member's collector is stopping
		}
		l.busy++
		p.processing++
		p.queueLocked(l)
		ctx, process := l.ctx, l.process
		p.mu.Unlock()

		processItem(ctx, l.q, n, process)

		p.mu.Lock()
		l.busy--
		p.processing--
		if !l.attached && l.busy == 0 && l.drained != nil {
			close(l.drained)
			l.drained = nil
		}
		p.queueLocked(l)
	}
	p.running--
	p.mu.Unlock()
}
