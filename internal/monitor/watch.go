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
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
)

// afterInitialEvents carries a streaming list's watch on, once its initial
// events have ended, with a plain watch from the end's resourceVersion.
//
// The API server compresses a streaming list's watch for a client that
// accepts it (kube-apiserver 1.37's WatchListCompression) for as long as the
// watch lasts, 5 to 10 minutes, and the client keeps a decompressor for it
// all along: about 50 KiB per watched kind for a stream that, after its
// initial events, carries a few changes. It does not compress plain
// watches. So on the bookmark that ends the initial events the watch opens
// a plain watch from that bookmark's resourceVersion (with next) and stops
// the compressed one before it hands the bookmark on (so that its
// decompressor is garbage, once the stopped watch's reader has returned,
// when the start-up's memory is given back after the last list). The reflector
// sees one watch, the changes after the list in order and none twice
// (nothing after the bookmark is read from the first watch).
//
// The first watch goes on, and the plain one is let go, whenever the plain
// watch cannot be opened or is already closed or failing when it is: its
// result channel closed, or an error the first event it sent. client-go's
// Request.Watch answers a connection error it has retried in vain with
// watch.NewEmptyWatch() and no error (a watch closed at once), and an API
// server that accepts the watch may send an error at once (a
// resourceVersion too old): taking either for the plain watch would stop
// the healthy compressed watch and make the reflector list the kind again.
// Any event the plain watch has already sent is handed on after the
// bookmark.
//
// Concurrency: one goroutine reads the watches and sends their events;
// Stop may be called from any goroutine, any number of times.
type afterInitialEvents struct {
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

// continueAfterInitialEvents returns first, carried on by next(the
// resourceVersion of the initial events' end) after its initial events.
func continueAfterInitialEvents(first watch.Interface, next func(resourceVersion string) (watch.Interface, error)) watch.Interface {
	w := &afterInitialEvents{result: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(first, next)
	return w
}

// Stop stops the watch: the watch being read is stopped and ResultChan
// closed.
func (w *afterInitialEvents) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan returns the events of both watches.
func (w *afterInitialEvents) ResultChan() <-chan watch.Event { return w.result }

func (w *afterInitialEvents) run(current watch.Interface, next func(string) (watch.Interface, error)) {
	defer close(w.result)
	defer func() { current.Stop() }()
	initial := true
	for {
		var ev watch.Event
		select {
		case <-w.stop:
			return
		case e, ok := <-current.ResultChan():
			if !ok {
				return
			}
			ev = e
		}
		// pending is the first event of a plain watch that takes over.
		var pending *watch.Event
		if initial && ev.Type == watch.Bookmark && initialEventsEnd(ev.Object) {
			initial = false
			if plain, first, ok := openPlain(ev, next); ok {
				current.Stop()
				current, pending = plain, first
			}
		}
		if !w.send(ev) || (pending != nil && !w.send(*pending)) {
			return
		}
	}
}

// send hands ev on; false when the watch was stopped first.
func (w *afterInitialEvents) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.stop:
		return false
	}
}

// openPlain opens the plain watch from the resourceVersion of end, the
// bookmark that ends the initial events, and returns it with the event it
// has already sent, if any. ok is false, and the plain watch stopped, when
// it cannot be opened or is already closed or failing: the first watch
// goes on.
func openPlain(end watch.Event, next func(string) (watch.Interface, error)) (_ watch.Interface, first *watch.Event, ok bool) {
	m, err := meta.Accessor(end.Object)
	if err != nil || m.GetResourceVersion() == "" {
		return nil, nil, false
	}
	plain, err := next(m.GetResourceVersion())
	if err != nil || plain == nil {
		return nil, nil, false
	}
	select {
	case ev, open := <-plain.ResultChan():
		if !open || ev.Type == watch.Error {
			plain.Stop()
			return nil, nil, false
		}
		return plain, &ev, true
	default:
		return plain, nil, true
	}
}
