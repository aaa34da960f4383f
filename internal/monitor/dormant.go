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
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Dormant monitors (Options.DormantCheck): a kind with no object is not
// watched. Most kinds a control plane serves have no object at all (a
// member of a fleet serves some sixty kinds, an idle one has objects of a
// dozen), and each open watch costs two goroutines (the monitor's and the
// HTTP/2 stream's) and its buffers. So when a monitor's list finds its kind
// empty, or a watch ends as watches do while the kind has no object, the
// monitor goes dormant: its goroutine returns and the kind is checked for a
// first object by a LIST of one item, every DormantCheck, all dormant kinds
// of the Set in one sweep. A sweep that finds an object, or cannot list the
// kind, wakes it: a new monitor lists and watches it, from scratch.
//
// What the graph misses while a kind is dormant is an object created since
// its last check. For the collector that is the lag of a watch made longer:
// its dependents are collected once the kind is woken (their owners are
// verified by live reads, as always), owners of such a kind are virtual
// nodes verified by live reads (a dormant kind is not watched: Kind and
// Cached say so, and the collector reads the API server instead of the
// graph). Two decisions cannot wait for it: removing the orphan finalizer
// (an object created with a reference to the owner would keep it, and be
// collected once the owner is gone) and removing the foregroundDeletion
// finalizer (the owner would go before a blocking dependent). Before either,
// the collector calls ConfirmDormantEmpty, which sweeps every dormant kind
// again, by requests sent after the call.
//
// Concurrency: a monitor's dormant and woken fields and the Set's
// dormantSeq are guarded by the Set's mu. sweeps.mu guards the sweep that
// waiters wait for; one goroutine (sweepLoop) runs the sweeps.
type sweeps struct {
	mu sync.Mutex
	// next is the sweep the callers of ConfirmDormantEmpty since the last
	// sweep started wait for; nil when none waits.
	next *sweep
	kick chan struct{}
}

// sweep is one check of every dormant kind.
type sweep struct {
	done chan struct{}
	err  error
}

// ErrDormantWaking is what ConfirmDormantEmpty returns when it cannot
// confirm yet that no object of a kind not watched was missed: a dormant
// kind has objects now (or cannot be listed) and is being listed, or a kind
// went dormant while the sweep ran. Look again shortly.
var ErrDormantWaking = errors.New("a kind that had no object is being listed again")

// sweepParallelism is how many dormant kinds a sweep lists at once.
const sweepParallelism = 4

// goDormant makes the monitor dormant if its kind has no observed object:
// true when the monitor's loop is to end. It is called by the monitor's
// goroutine where the loop would open a watch.
func (st *store) goDormant() bool {
	st.endListing()
	m, s := st.m, st.s
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return true
	}
	if s.opts.Graph.ObservedCount(m.res.GroupKind()) > 0 {
		m.mu.Unlock()
		return false
	}
	m.stopped = true
	m.mu.Unlock()

	s.mu.Lock()
	if s.monitors[m.res.GroupKind()] == m {
		m.dormant = true
		s.dormantSeq++
	}
	s.mu.Unlock()
	m.log.V(1).Info("Resource has no object: checking it for one periodically instead of watching it",
		"gvr", m.gvr, "every", s.opts.DormantCheck)
	s.changed()
	return true
}

// ConfirmDormantEmpty returns nil once it is known that no object of a
// kind not watched was missed: every dormant kind was found empty by a LIST
// sent after the call, no kind went dormant meanwhile, and every kind woken
// from dormancy has been listed (or its monitor failed). Otherwise it
// returns ErrDormantWaking (look again shortly), or ctx's error. Without
// dormancy it returns nil at once.
func (s *Set) ConfirmDormantEmpty(ctx context.Context) error {
	if s.opts.DormantCheck <= 0 {
		return nil
	}
	if err := s.wakingErr(); err != nil {
		return err
	}
	s.sweeps.mu.Lock()
	if s.sweeps.next == nil {
		s.sweeps.next = &sweep{done: make(chan struct{})}
	}
	w := s.sweeps.next
	s.sweeps.mu.Unlock()
	select {
	case s.sweeps.kick <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
	}
	if w.err != nil {
		return w.err
	}
	return s.wakingErr()
}

// wakingErr is ErrDormantWaking while a kind woken from dormancy is listed
// for the first time (and its monitor is not failing).
func (s *Set) wakingErr() error {
	now := time.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.monitors {
		if !m.woken || m.synced.Load() {
			continue
		}
		if _, failing := s.opts.ListWatches.Failing(m.res.GVK(), now); !failing {
			return fmt.Errorf("%w: %s", ErrDormantWaking, m.gvr)
		}
	}
	return nil
}

// sweepLoop sweeps the dormant kinds every DormantCheck (with jitter), and
// whenever ConfirmDormantEmpty asks, until ctx ends.
func (s *Set) sweepLoop(ctx context.Context) {
	interval := func() time.Duration {
		return s.opts.DormantCheck + time.Duration(rand.Int64N(int64(s.opts.DormantCheck)/5+1))
	}
	t := time.NewTimer(interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.sweeps.mu.Lock()
			if w := s.sweeps.next; w != nil {
				w.err = ctx.Err()
				close(w.done)
				s.sweeps.next = nil
			}
			s.sweeps.mu.Unlock()
			return
		case <-t.C:
		case <-s.sweeps.kick:
		}
		s.sweeps.mu.Lock()
		w := s.sweeps.next
		s.sweeps.next = nil
		s.sweeps.mu.Unlock()
		err := s.sweep(ctx)
		if w != nil {
			w.err = err
			close(w.done)
		}
		t.Reset(interval())
	}
}

// sweep lists every dormant kind for one object and wakes those that have
// one or cannot be listed. It returns ErrDormantWaking if it woke any, or
// if a kind went dormant while it ran (the sweep did not check it).
func (s *Set) sweep(ctx context.Context) error {
	s.mu.RLock()
	var dormant []*monitor
	for _, m := range s.monitors {
		if m.dormant {
			dormant = append(dormant, m)
		}
	}
	seq := s.dormantSeq
	s.mu.RUnlock()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		woke []string
		sem  = make(chan struct{}, sweepParallelism)
	)
	for _, m := range dormant {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			list, err := m.src.List(ctx, metav1.ListOptions{Limit: 1})
			if ctx.Err() != nil {
				return
			}
			if err == nil && len(list.Items) == 0 {
				return
			}
			why := "it has an object"
			if err != nil {
				why = err.Error()
			}
			if s.wake(ctx, m, why) {
				mu.Lock()
				woke = append(woke, m.gvr)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(woke) > 0 {
		s.changed()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(woke) > 0 {
		return fmt.Errorf("%w: %v", ErrDormantWaking, woke)
	}
	s.mu.RLock()
	changed := s.dormantSeq != seq
	s.mu.RUnlock()
	if changed {
		return fmt.Errorf("%w: a kind went dormant during the check", ErrDormantWaking)
	}
	return nil
}

// WakeKind starts watching the kind again if it is dormant: an object of
// it was found (a live read of an owner the graph has not observed), so it
// has objects again, and its changes, the deletion of that owner first,
// should be observed as they happen rather than at the next check.
func (s *Set) WakeKind(gk schema.GroupKind) {
	s.mu.RLock()
	m, ok := s.monitors[gk]
	ctx := s.ctx
	dormant := ok && m.dormant
	s.mu.RUnlock()
	if dormant && ctx != nil && s.wake(ctx, m, "an object of it was read") {
		s.changed()
	}
}

// wake starts a monitor in place of dormant m, which lists and watches the
// kind from scratch; false when m is no longer the kind's dormant monitor.
func (s *Set) wake(ctx context.Context, m *monitor, why string) bool {
	gk := m.res.GroupKind()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.monitors[gk] != m || !m.dormant {
		return false
	}
	log := ctrl.LoggerFrom(ctx)
	n, err := s.startMonitor(ctx, m.res)
	if err != nil {
		// Apply starts it again (Start's retry).
		delete(s.monitors, gk)
		s.startFailures[gk] = Failure{Group: m.res.Group, Version: m.res.Version, Resource: m.res.Resource, Message: err.Error()}
		log.Error(err, "Cannot watch resource, will retry", "gvr", m.gvr)
		return true
	}
	n.woken = true
	s.monitors[gk] = n
	log.V(1).Info("Watching a resource that had no object again", "gvr", m.gvr, "why", why)
	return true
}
