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
// Concurrency: slots is a semaphore (its length is the lists in progress);
// mu guards most, releasing and quiet; the quiet timer's function runs in
// a goroutine of its own.
type ListSlots struct {
	slots chan struct{}
	clock clock.WithDelayedExecution
	// free returns the heap's free memory to the operating system
	// (debug.FreeOSMemory).
	free func()

	mu   sync.Mutex
	most int
	// releasing says a Set asked for its initial lists' memory to be
	// returned; quiet, when set, fires ListsQuiet after the last list
	// ended.
	releasing bool
	quiet     clock.Timer
}

// ListsQuiet is how long no list runs before the initial lists' memory of
// the Sets sharing ListSlots is returned to the operating system.
const ListsQuiet = time.Second

// NewListSlots returns slots for n lists at once (n ≥ 1).
func NewListSlots(n int) *ListSlots {
	return newListSlots(n, clock.RealClock{}, debug.FreeOSMemory)
}

func newListSlots(n int, c clock.WithDelayedExecution, free func()) *ListSlots {
	return &ListSlots{slots: make(chan struct{}, max(n, 1)), clock: c, free: free}
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
	l.most = max(l.most, len(l.slots))
	l.mu.Unlock()
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

// waitQuiet starts the quiet period again when memory is to be returned and
// no list runs. mu is held.
func (l *ListSlots) waitQuiet() {
	if !l.releasing || len(l.slots) > 0 {
		return
	}
	if l.quiet != nil {
		l.quiet.Stop()
	}
	l.quiet = l.clock.AfterFunc(ListsQuiet, l.quietEnded)
}

// quietEnded returns the memory, unless a list started since (its end
// starts the quiet period again).
func (l *ListSlots) quietEnded() {
	l.mu.Lock()
	if !l.releasing || len(l.slots) > 0 {
		l.mu.Unlock()
		return
	}
	l.releasing = false
	l.mu.Unlock()
	l.free()
}
