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
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// pool runs the workers of one queue of its own: up to its size at once, as
// many as the queue has work for. An idle pool is one worker waiting for an
// item (upstream's collector keeps its whole pools waiting, 20
// attempt-to-delete and 20 attempt-to-orphan workers by default: in a
// fleet, forty goroutines per member doing nothing). The rule is that,
// below the pool's size, one worker always waits for the next item: a
// worker that takes the item the last waiting one was waiting for starts
// another, so a burst is taken by the whole pool at once, and a worker that
// finishes its item leaves when other workers already wait for every item
// queued (a worker joins the waiting ones only for an item no other waits
// for, or as the one waiting: idle, the pool is exactly one).
// Shrinking stops the workers beyond the size after the item they are
// working on, and one beyond the size that takes an item hands it back
// unprocessed: no queued work is lost.
//
// Concurrency: mu guards limit, running, waiting and drained; workers take
// it before and after each item.
type pool[T comparable] struct {
	ctx    context.Context
	q      workqueue.TypedRateLimitingInterface[T]
	handle Handler[T]

	mu sync.Mutex
	// limit is the pool's size; running counts its workers, waiting those
	// of them waiting for an item.
	limit, running, waiting int
	// drained, once stopped, is closed when no worker has an item in
	// process.
	drained chan struct{}
}

var _ Workers = (*pool[int])(nil)

// newPool returns a pool of size 0 for q, whose workers hand the items
// they take to handle under ctx: Resize starts it.
func newPool[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], handle Handler[T]) *pool[T] {
	return &pool[T]{ctx: ctx, q: q, handle: handle}
}

// Size implements Workers.
func (p *pool[T]) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limit
}

// Stop implements Workers: the workers leave after the item they are
// working on, and a worker waiting for an item leaves once it gets one
// (which it hands back) or the queue shuts down.
func (p *pool[T]) Stop() {
	p.mu.Lock()
	p.limit = 0
	p.drained = make(chan struct{})
	drained := p.drained
	p.drainedLocked()
	p.mu.Unlock()
	<-drained
}

// drainedLocked closes drained once the stopped pool has no item in
// process; the caller holds mu.
func (p *pool[T]) drainedLocked() {
	if p.drained != nil && p.running == p.waiting {
		close(p.drained)
		p.drained = nil
	}
}

// Running is how many workers run now.
func (p *pool[T]) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// Resize implements Workers.
func (p *pool[T]) Resize(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = n
	if p.waiting == 0 && p.running < n {
		p.start()
	}
}

// start starts a worker; the caller holds mu.
func (p *pool[T]) start() {
	p.running++
	p.waiting++
	go p.work()
}

// work processes items of the queue until the queue shuts down or the
// worker is not needed. It is counted waiting when it starts.
func (p *pool[T]) work() {
	for {
		item, quit := p.q.Get()
		if !p.take(quit) {
			if !quit {
				p.q.Add(item) // processed by another worker once this one is done
				p.q.Done(item)
			}
			return
		}
		process(p.ctx, p.q, item, p.handle)
		if p.done() {
			return
		}
	}
}

// take is called by a worker that took an item, or found the queue shut
// down (quit): false when it leaves (the queue shut down, or the worker is
// beyond the pool's size and hands the item back). Otherwise, when it was
// the last worker waiting and the pool may grow, it starts another.
func (p *pool[T]) take(quit bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting--
	if quit || p.running > p.limit {
		p.running--
		p.drainedLocked()
		return false
	}
	if p.waiting == 0 && p.running < p.limit {
		p.start()
	}
	return true
}

// done is called by a worker after its item: true when it leaves, being
// beyond the pool's size, or with other workers already waiting for every
// item queued. Otherwise it waits for the next item.
func (p *pool[T]) done() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running > p.limit || (p.waiting > 0 && p.q.Len() <= p.waiting) {
		p.running--
		p.drainedLocked()
		return true
	}
	p.waiting++
	return false
}
