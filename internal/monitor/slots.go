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
	"sync"
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
// Concurrency: slots is a semaphore (its length is the lists in progress);
// mu guards most.
type ListSlots struct {
	slots chan struct{}

	mu   sync.Mutex
	most int
}

// NewListSlots returns slots for n lists at once (n ≥ 1).
func NewListSlots(n int) *ListSlots {
	return &ListSlots{slots: make(chan struct{}, max(n, 1))}
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
}
