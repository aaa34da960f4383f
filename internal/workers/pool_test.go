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
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// waitUntil fails the test unless cond holds within 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func newQueue() workqueue.TypedRateLimitingInterface[int] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
}

// getting is a queue that tells when a worker first waits for an item.
type getting struct {
	workqueue.TypedRateLimitingInterface[int]
	once    sync.Once
	waiting chan struct{}
}

func (q *getting) Get() (int, bool) {
	q.once.Do(func() { close(q.waiting) })
	return q.TypedRateLimitingInterface.Get()
}

// A pool shrink never loses an item: a worker beyond the pool's size that
// takes an item hands it back.
func TestStoppedWorkerHandsItsItemBack(t *testing.T) {
	q := &getting{TypedRateLimitingInterface: newQueue(), waiting: make(chan struct{})}
	defer q.ShutDown()
	var processed atomic.Int32
	p := newPool[int](context.Background(), q, func(context.Context, int) { processed.Add(1) })
	p.Resize(1)
	<-q.waiting
	p.Resize(0)
	q.Add(1)
	waitUntil(t, "the worker of a pool shrunk to 0 leaves", func() bool { return p.Running() == 0 })
	if processed.Load() != 0 || q.Len() != 1 {
		t.Fatalf("processed %d items, queue holds %d; want 0 processed and the item back in the queue", processed.Load(), q.Len())
	}
}

// An idle pool is one worker; queued work starts workers up to the pool's
// size, never more, and they leave once the queue is empty.
func TestAPoolRunsAsManyWorkersAsItHasWorkFor(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	p := newPool(context.Background(), q, func(context.Context, int) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		inFlight.Add(-1)
	})
	p.Resize(4)
	waitUntil(t, "an idle pool runs one worker", func() bool { return p.Running() == 1 })
	for i := range 10 {
		q.Add(i)
	}
	waitUntil(t, "ten queued items keep the pool's four workers busy", func() bool { return inFlight.Load() == 4 })
	if w := p.Running(); w != 4 {
		t.Fatalf("%d workers run with work queued, want the pool's size, 4", w)
	}
	close(release)
	waitUntil(t, "the queue drained and the pool back to one worker", func() bool {
		return q.Len() == 0 && inFlight.Load() == 0 && p.Running() == 1
	})
	if m := most.Load(); m != 4 {
		t.Fatalf("at most %d items were processed at once, want the pool's size, 4", m)
	}
}

// Stop returns once the items in process are done, not before, and without
// waiting for the queue to shut down; what is still queued stays queued,
// and the worker left waiting leaves when the queue shuts down.
func TestStoppingAPoolWaitsForTheItemsInProcess(t *testing.T) {
	q := newQueue()
	gate := make(chan struct{})
	var processed atomic.Int32
	p := newPool(context.Background(), q, func(context.Context, int) {
		<-gate
		processed.Add(1)
	})
	p.Resize(2)
	for i := range 5 {
		q.Add(i)
	}
	waitUntil(t, "two items in process", func() bool { return p.Running() == 2 && q.Len() == 3 })
	stopped := make(chan struct{})
	go func() {
		p.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned with items in process")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return within 10 s of its items finishing")
	}
	if n, left := processed.Load(), q.Len(); n != 2 || left != 3 {
		t.Fatalf("processed %d items with %d left queued, want the 2 in process done and 3 left", n, left)
	}
	q.ShutDown()
	waitUntil(t, "the workers leave once the queue shuts down", func() bool { return p.Running() == 0 })
	if n := processed.Load(); n != 2 {
		t.Fatalf("processed %d items after Stop, want none more than the 2", n)
	}
}
