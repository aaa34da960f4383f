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

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
)

// recorders write the engine's Events (events.k8s.io/v1) through one
// broadcaster that runs only while there are Events to write: it starts
// with the first Event and shuts down once none was recorded for
// recorderIdle. A controller-runtime manager starts two broadcasters (the
// core/v1 one and the events.k8s.io/v1 one) with the first Event, each
// with a watcher that logs, and keeps them for as long as it runs: nine
// goroutines and about 165 KiB for every member of a fleet, where each
// engine writes a few Events when it starts and then, idle, none.
//
// In the single-cluster mode the broadcaster, once started, runs for good
// (idle 0), as controller-runtime's does: one engine, whose Events come
// and go with the collector's work.
//
// Events are logged at V(1), as controller-runtime logs them.
//
// Concurrency: mu guards the broadcaster and its recorders; it is held
// while an Event is handed to a recorder (read-locked, or write-locked when
// the recorder is made; a recorder never blocks: the broadcaster drops what
// it cannot queue), so that a broadcaster is never shut down under an
// Event being recorded.
type recorders struct {
	sink   events.EventSink
	scheme *runtime.Scheme
	log    logr.Logger
	idle   time.Duration

	mu          sync.RWMutex
	broadcaster events.EventBroadcaster
	stop        context.CancelFunc
	byName      map[string]events.EventRecorder
	// timer shuts the broadcaster down once the last Event is idle old.
	timer *time.Timer
	// last is when an Event was last recorded (Unix nanoseconds).
	last atomic.Int64
}

// recorderIdle is how long the broadcaster runs after the last Event: long
// enough to write it and the Events that usually follow it (an engine's
// start writes a few within seconds). An Event whose writes keep failing
// (the broadcaster tries for up to two minutes) may be dropped when it shuts
// down: Events are best-effort, as they are for every client.
const recorderIdle = time.Minute

// newRecorders returns the recorders of an engine, whose broadcaster shuts
// down after idle without an Event (0: never).
func newRecorders(client eventsv1client.EventsV1Interface, scheme *runtime.Scheme, log logr.Logger, idle time.Duration) *recorders {
	return &recorders{sink: &events.EventSinkImpl{Interface: client}, scheme: scheme, log: log, idle: idle}
}

// For returns the recorder of the named component.
func (r *recorders) For(name string) events.EventRecorder { return &namedRecorder{r: r, name: name} }

// record hands an Event to the named component's recorder (through f),
// starting the broadcaster if it does not run. The Event is handed over
// under r.mu — read-locked when the recorder exists, write-locked when it
// is made — so that the broadcaster is never shut down under it.
func (r *recorders) record(name string, f func(events.EventRecorder)) {
	r.mu.RLock()
	if rec, ok := r.byName[name]; ok {
		f(rec)
		r.last.Store(time.Now().UnixNano())
		r.mu.RUnlock()
		return
	}
	r.mu.RUnlock()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broadcaster == nil {
		b := events.NewBroadcaster(r.sink)
		ctx, cancel := context.WithCancel(context.Background())
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			r.log.Error(err, "Cannot start writing Events")
		}
		if _, err := b.StartLogging(r.log.V(1)); err != nil {
			r.log.Error(err, "Cannot start logging Events")
		}
		r.broadcaster, r.stop, r.byName = b, cancel, map[string]events.EventRecorder{}
		if r.idle > 0 {
			r.timer = time.AfterFunc(r.idle, r.shutdownIfIdle)
		}
	}
	rec, ok := r.byName[name]
	if !ok {
		rec = r.broadcaster.NewRecorder(r.scheme, name)
		r.byName[name] = rec
	}
	f(rec)
	r.last.Store(time.Now().UnixNano())
}

// shutdownIfIdle shuts the broadcaster down if no Event was recorded for
// r.idle, or looks again when that is due.
func (r *recorders) shutdownIfIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broadcaster == nil {
		return
	}
	if wait := r.idle - time.Since(time.Unix(0, r.last.Load())); wait > 0 {
		r.timer.Reset(wait)
		return
	}
	r.shutdown()
}

// shutdown shuts the running broadcaster down; the caller holds r.mu.
func (r *recorders) shutdown() {
	if r.timer != nil {
		r.timer.Stop()
	}
	r.stop()
	r.broadcaster.Shutdown()
	r.broadcaster, r.stop, r.byName, r.timer = nil, nil, nil, nil
}

// Stop shuts the broadcaster down, if it runs.
func (r *recorders) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broadcaster != nil {
		r.shutdown()
	}
}

// running reports whether the broadcaster runs.
func (r *recorders) running() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.broadcaster != nil
}

// namedRecorder is one component's recorder.
type namedRecorder struct {
	r    *recorders
	name string
}

func (n *namedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	n.r.record(n.name, func(rec events.EventRecorder) {
		rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
	})
}
