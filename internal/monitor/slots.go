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
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ListSlots bounds how many monitors list at once, across every Set that
// shares it: the engines of a fleet. A list, from its request to its
// completion, holds a slot; a monitor waits for one before it lists (its
// first list, or a relist after its watch expired). When many clusters are
// engaged at once (a replica started with hundreds of kubeconfig Secrets,
// or one that takes over another's clusters) their lists then stream a few
// at a time rather than all together, so the process's memory at the peak
// of the storm stays near its memory at rest. Monitors wait in the order
// they asked (a channel's waiting senders are served first in, first out).
// A single cluster's monitors share none.
//
// The Sets that share it also share the return of their initial lists'
// memory to the operating system (Set.releaseStartupMemory): once, when no
// list has run for ListsQuiet since a Set's monitors all synced, where
// each Set would force a whole collection of the process's heap as its own
// lists ended — twenty in a storm of twenty engagements, marking every
// engine's graph each time, a third of the process's CPU in it (`go run
// ./test/bench -only storm`).
//
// They also tell a burst of lists (Burst): from a list that starts when
// none has run for ListsQuiet until ListsQuiet after the last one ends.
//
// Concurrency: slots is a semaphore (its length is the lists in progress);
// mu guards most, releasing, bursting and quiet, and is held while the
// Burst functions run (so that a burst's Start and End are called in
// order); the quiet timer's function runs in a goroutine of its own.
type ListSlots struct {
	slots chan struct{}
	clock clock.WithDelayedExecution
	// free returns the heap's free memory to the operating system
	// (debug.FreeOSMemory).
	free  func()
	burst Burst

	mu   sync.Mutex
	most int
	// releasing says a Set asked for its initial lists' memory to be
	// returned; bursting that a burst of lists has started and not ended;
	// quiet, when set, fires ListsQuiet after the last list ended.
	releasing, bursting bool
	quiet               clock.Timer
}

// Burst is what is done while the lists of the Sets sharing ListSlots
// stream: Start is called when a list starts after none ran for
// ListsQuiet, End once none has run for ListsQuiet again. A fleet runs the
// Go garbage collector less often meanwhile (internal/run): the lists'
// objects are decoded and dropped in a burst, most of the engines' graphs
// are still being built, and every collection marks the whole heap and
// every goroutine's stack. Either may be nil; they must not use the
// ListSlots.
type Burst struct {
	Start, End func()
}

// ListsQuiet is how long no list runs before the initial lists' memory of
// the Sets sharing ListSlots is returned to the operating system.
const ListsQuiet = time.Second

// NewListSlots returns slots for n lists at once (n ≥ 1), calling burst's
// functions as bursts of lists start and end.
func NewListSlots(n int, burst Burst) *ListSlots {
	return newListSlots(n, clock.RealClock{}, debug.FreeOSMemory, burst)
}

func newListSlots(n int, c clock.WithDelayedExecution, free func(), burst Burst) *ListSlots {
	return &ListSlots{slots: make(chan struct{}, max(n, 1)), clock: c, free: free, burst: burst}
}

// Size is how many lists may run at once.
func (l *ListSlots) Size() int { return cap(l.slots) }

// Most is the most lists that ran at once so far.
func (l *ListSlots) Most() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most
}

// acquire waits for a slot; false when ctx ended first. A nil ListSlots
// bounds nothing.
func (l *ListSlots) acquire(ctx context.Context) bool {
	if l == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.most = max(l.most, len(l.slots))
	if !l.bursting && (l.burst.Start != nil || l.burst.End != nil) {
		l.bursting = true
		if l.burst.Start != nil {
			l.burst.Start()
		}
	}
	return true
}

// release gives back a slot acquire took.
func (l *ListSlots) release() {
	if l == nil {
		return
	}
	<-l.slots
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitQuiet()
}

// releaseMemory asks for the initial lists' memory to be returned to the
// operating system once no list has run for ListsQuiet.
func (l *ListSlots) releaseMemory() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releasing = true
	l.waitQuiet()
}

// waitQuiet starts the quiet period again when memory is to be returned or
// a burst to be ended, and no list runs. mu is held.
func (l *ListSlots) waitQuiet() {
	if (!l.releasing && !l.bursting) || len(l.slots) > 0 {
		return
	}
	if l.quiet != nil {
		l.quiet.Stop()
	}
	l.quiet = l.clock.AfterFunc(ListsQuiet, l.quietEnded)
}

// quietEnded ends the burst and returns the memory, unless a list started
// since (its end starts the quiet period again). The burst ends first: the
// collection that returning the memory forces sets the heap's next goal by
// the garbage collector's setting at rest.
func (l *ListSlots) quietEnded() {
	l.mu.Lock()
	if len(l.slots) > 0 {
		l.mu.Unlock()
		return
	}
	if l.bursting {
		l.bursting = false
		if l.burst.End != nil {
			l.burst.End()
		}
	}
	free := l.releasing
	l.releasing = false
	l.mu.Unlock()
	if free {
		l.free()
	}
}
