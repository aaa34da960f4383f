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
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// member is one member's lane in shared workers, for their tests: it
// records the items it processed, in order, and counts those in process.
type member struct {
	name string
	l    *typedLane[int]
	// items is how many items it has: 0 to items-1.
	items int
	// gate, when set, holds each item in process until it is closed.
	gate chan struct{}
	// fail makes the first process of each item ask to be looked at
	// again later (with backoff).
	fail bool

	mu        sync.Mutex
	processed []string
	tried     map[int]bool
	inFlight  atomic.Int32
	most      atomic.Int32
}

func newMember(s *Shared, name string, items int) *member {
	return &member{name: name, l: newLane(s, workqueue.TypedRateLimitingQueueConfig[int]{}), items: items, tried: map[int]bool{}}
}

func (m *member) handle(_ context.Context, item int) {
	in := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for most := m.most.Load(); in > most && !m.most.CompareAndSwap(most, in); most = m.most.Load() {
	}
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate != nil {
		<-gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail && !m.tried[item] {
		m.tried[item] = true
		m.l.q.AddRateLimited(item)
		return
	}
	m.l.q.Forget(item)
	m.processed = append(m.processed, fmt.Sprintf("%s-%d", m.name, item))
}

func (m *member) queueAll() {
	for i := range m.items {
		m.l.q.Add(i)
	}
}

func (m *member) done() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.processed...)
}

// start attaches the members' lanes with their sizes at once (under the
// pool's lock), so that no lane gets a head start.
func start(s *Shared, ctx context.Context, size int, ms ...*member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range ms {
		m.l.ctx, m.l.handle, m.l.attached, m.l.limit = ctx, m.handle, true, size
	}
	for _, m := range ms {
		s.queueLocked(&m.l.lane)
	}
}

// The shared workers take the members' items in turn: with one worker, a
// member with five items queued first and one with two queued after
// alternate, item by item, and every item is processed once.
func TestSharedWorkersTakeTheMembersItemsInTurn(t *testing.T) {
	p := NewShared(1)
	var order []string
	var mu sync.Mutex
	big, small := newMember(p, "big", 5), newMember(p, "small", 2)
	big.queueAll()
	small.queueAll()
	record := func(m *member) Handler[int] {
		return func(ctx context.Context, item int) {
			m.handle(ctx, item)
			mu.Lock()
			order = append(order, m.name)
			mu.Unlock()
		}
	}
	p.mu.Lock()
	for _, m := range []*member{big, small} {
		m.l.ctx, m.l.handle, m.l.attached, m.l.limit = context.Background(), record(m), true, 1
	}
	p.queueLocked(&big.l.lane)
	p.queueLocked(&small.l.lane)
	p.mu.Unlock()
	waitUntil(t, "every item processed", func() bool { return len(big.done()) == 5 && len(small.done()) == 2 })
	mu.Lock()
	got := strings.Join(order, ",")
	mu.Unlock()
	if want := "big,small,big,small,big,big,big"; got != want {
		t.Fatalf("the workers took the members' items in the order %s, want %s", got, want)
	}
	waitUntil(t, "the workers leave once no member has work", func() bool { return p.Running() == 0 })
}

// A member holds no more of the shared workers than its pool size, even
// when its items wait (for its rate limit): another member's items are
// processed meanwhile, all of them, while the first has not finished one.
func TestAMemberHoldsNoMoreSharedWorkersThanItsPoolSize(t *testing.T) {
	p := NewShared(4)
	big, small := newMember(p, "big", 100), newMember(p, "small", 10)
	big.gate = make(chan struct{})
	big.queueAll()
	start(p, context.Background(), 3, big, small)
	waitUntil(t, "the big member's items fill its share", func() bool { return big.inFlight.Load() == 3 })
	small.queueAll()
	waitUntil(t, "the small member's items processed while the big one's wait", func() bool { return len(small.done()) == 10 })
	if n := len(big.done()); n != 0 {
		t.Fatalf("the big member finished %d items, want none (its items are held)", n)
	}
	if most := big.most.Load(); most != 3 {
		t.Fatalf("the big member held %d workers at once, want its pool size, 3", most)
	}
	if w := p.Running(); w > 4 {
		t.Fatalf("%d workers run, more than the pool's 4", w)
	}
	close(big.gate)
	waitUntil(t, "the big member's items processed", func() bool { return len(big.done()) == 100 })
	waitUntil(t, "the workers leave once no member has work", func() bool { return p.Running() == 0 })
	if most := big.most.Load(); most != 3 {
		t.Fatalf("the big member held %d workers at once, want its pool size, 3", most)
	}
}

// A member whose collector stops takes no more workers: stop returns once
// its items in process are done, what it had queued stays queued (its
// engine's queues are shut down next) and is never processed, and another
// member's items are all processed.
func TestAStoppedMembersLaneTakesNoMoreWorkers(t *testing.T) {
	p := NewShared(4)
	stopped, other := newMember(p, "stopped", 20), newMember(p, "other", 20)
	stopped.gate = make(chan struct{})
	stopped.queueAll()
	start(p, context.Background(), 2, stopped, other)
	waitUntil(t, "the member's items in process", func() bool { return stopped.inFlight.Load() == 2 })
	returned := make(chan struct{})
	go func() {
		stopped.l.Stop()
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("stop returned with the member's items in process")
	case <-time.After(50 * time.Millisecond):
	}
	close(stopped.gate)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return within 10s of its items finishing")
	}
	if n, left := len(stopped.done()), stopped.l.q.Len(); n != 2 || left != 18 {
		t.Fatalf("the stopped member processed %d items and has %d queued, want the 2 in process done and 18 left queued", n, left)
	}
	other.queueAll()
	stopped.l.q.Add(100) // offered to no worker
	waitUntil(t, "the other member's items processed", func() bool { return len(other.done()) == 20 })
	waitUntil(t, "the workers leave", func() bool { return p.Running() == 0 })
	if n := len(stopped.done()); n != 2 {
		t.Fatalf("the stopped member processed %d items, want 2", n)
	}
}

// An item that asks to be looked at again later (its backoff), or that is
// queued again while in process, is offered to the workers again when it is
// due: none is left behind in a member's queue.
func TestSharedWorkersTakeItemsAgainAfterTheirBackoff(t *testing.T) {
	p := NewShared(2)
	m := newMember(p, "m", 5)
	m.fail = true
	m.queueAll()
	start(p, context.Background(), 2, m)
	waitUntil(t, "every item processed after its backoff", func() bool { return len(m.done()) == 5 })

	again := newMember(p, "again", 1)
	again.gate = make(chan struct{})
	start(p, context.Background(), 1, again)
	again.queueAll()
	waitUntil(t, "the item in process", func() bool { return again.inFlight.Load() == 1 })
	again.l.q.Add(0) // changed while in process
	close(again.gate)
	waitUntil(t, "the item processed again", func() bool { return len(again.done()) == 2 })
	waitUntil(t, "the workers leave", func() bool { return p.Running() == 0 })
}

// Growing a member's share takes more workers for its queued items at once;
// shrinking it lets the items in process finish, and from then on the
// member holds no more workers than the new size.
func TestResizingAMembersShare(t *testing.T) {
	p := NewShared(10)
	m := newMember(p, "m", 20)
	m.gate = make(chan struct{})
	m.queueAll()
	start(p, context.Background(), 0, m)
	if w := p.Running(); w != 0 {
		t.Fatalf("%d workers for a member whose share is 0", w)
	}
	m.l.Resize(4)
	waitUntil(t, "the grown share taken", func() bool { return m.inFlight.Load() == 4 })
	m.l.Resize(1)
	if m.l.Size() != 1 {
		t.Fatalf("size %d, want 1", m.l.Size())
	}
	first, next := m.gate, make(chan struct{})
	m.mu.Lock()
	m.gate = next // the items taken from now on wait on a gate of their own
	m.mu.Unlock()
	close(first)
	waitUntil(t, "the items in process done and one more taken", func() bool { return len(m.done()) == 4 && m.inFlight.Load() == 1 })
	if w := p.Running(); w != 1 {
		t.Fatalf("%d workers run for a member whose share shrank to 1", w)
	}
	close(next)
	waitUntil(t, "every item processed", func() bool { return len(m.done()) == 20 })
	waitUntil(t, "the workers leave", func() bool { return p.Running() == 0 })
	if most := m.most.Load(); most != 4 {
		t.Fatalf("at most %d items in process at once, want the grown share, 4", most)
	}
}

// Lanes of queues whose items are of different types take the same shared
// workers (a member's collector's nodes, its API-level collectors' keys):
// with one worker, every item of both is processed, each lane's in order.
func TestLanesOfDifferentItemTypesShareTheWorkers(t *testing.T) {
	p := NewShared(1)
	ints := newMember(p, "ints", 3)
	strs := newLane(p, workqueue.TypedRateLimitingQueueConfig[string]{})
	var mu sync.Mutex
	var order []string
	ints.queueAll()
	for _, s := range []string{"a", "b", "c"} {
		strs.q.Add(s)
	}
	strs.Resize(1)
	strs.attach(context.Background(), func(_ context.Context, item string) {
		mu.Lock()
		order = append(order, item)
		mu.Unlock()
		strs.q.Forget(item)
	})
	start(p, context.Background(), 1, ints)
	waitUntil(t, "every item processed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ints.done()) == 3 && len(order) == 3
	})
	mu.Lock()
	got := strings.Join(order, ",")
	mu.Unlock()
	if got != "a,b,c" {
		t.Fatalf("the string lane's items were processed as %s, want a,b,c", got)
	}
	waitUntil(t, "the workers leave", func() bool { return p.Running() == 0 })
}
