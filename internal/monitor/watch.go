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
// (nothing after the bookmark is read from the first watch). If the plain
// watch cannot be opened, the first watch goes on.
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
		if initial && ev.Type == watch.Bookmark && initialEventsEnd(ev.Object) {
			initial = false
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				if plain, err := next(m.GetResourceVersion()); err == nil {
					current.Stop()
					current = plain
				}
			}
		}
		select {
		case w.result <- ev:
		case <-w.stop:
			return
		}
	}
}
