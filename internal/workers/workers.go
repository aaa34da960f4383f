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

// Package workers runs the workers of a workqueue (Queue): a pool of the
// queue's own, or its lane in workers that many queues share (Shared), as a
// fleet's members do for every queue of their engines — the collector's
// attempt-to-delete and attempt-to-orphan queues, the API-level
// collectors', expiry's and the shadow agreement's.
//
// Either way the queue is the caller's, and with it what belongs to one
// queue: its items' deduplication, backoff and failure tracking, its
// metrics, and the client whose rate limit its items wait for; and a
// queue's size (Size, Resize) bounds how many of its items are in process
// at once. Workers run only while they have items to take: an idle pool is
// one worker waiting, idle shared workers are none.
//
// The package imports nothing from the module.
package workers

import (
	"context"

	"k8s.io/client-go/util/workqueue"
)

// Handler processes an item its workers took from the queue and hands it
// back as the outcome says (Forget, AddRateLimited, AddAfter); the workers
// mark it Done after.
type Handler[T comparable] func(ctx context.Context, item T)

// Workers runs the workers of one queue.
type Workers interface {
	// Size is how many of its items may be in process at once; Resize
	// changes it (shrinking lets the items in process finish).
	Size() int
	Resize(n int)
	// Stop takes no more items, and returns once those in process are
	// done; what is queued stays queued.
	Stop()
}

// process runs handle on item and marks it done in q.
func process[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], item T, handle Handler[T]) {
	defer q.Done(item)
	handle(ctx, item)
}

// Queue is a rate-limited workqueue (client-go's default controller rate
// limiter) that knows where its workers come from: its lane in shared
// workers, or a pool of its own.
type Queue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	// lane is the queue's lane in the shared workers; nil, it gets a pool.
	lane *typedLane[T]
}

// NewQueue returns a queue configured by cfg, whose workers are taken from
// shared when it is set, a pool of its own otherwise.
func NewQueue[T comparable](shared *Shared, cfg workqueue.TypedRateLimitingQueueConfig[T]) *Queue[T] {
	if shared != nil {
		l := newLane(shared, cfg)
		return &Queue[T]{TypedRateLimitingInterface: l.q, lane: l}
	}
	return &Queue[T]{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[T](), cfg)}
}

// Workers returns the workers that hand the queue's items to handle under
// ctx, of size 0 (Resize): its lane attached, or a new pool. Call it once.
func (q *Queue[T]) Workers(ctx context.Context, handle Handler[T]) Workers {
	if q.lane != nil {
		q.lane.attach(ctx, handle)
		return q.lane
	}
	return newPool(ctx, q.TypedRateLimitingInterface, handle)
}
