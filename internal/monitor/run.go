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
	"io"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/logging"
)

// A monitor lists and watches its kind from one goroutine (run): it reads
// each watch response itself, decoding one event at a time, and hands each
// to the store. That is what client-go's reflector does with a resync timer,
// a stream decoder and, here, a filter beside it, each a goroutine of its
// own for every watched kind; in a fleet, where a member serves some sixty
// kinds, those were three quarters of a member's goroutines. The loop keeps
// the reflector's rules:
//
//   - It lists first, by a streaming list (a watch that sends the objects as
//     initial events and a bookmark at their end) where the API server
//     serves them, else by a LIST in pages, and then watches from the
//     list's resourceVersion. A streaming list's watch whose answers are
//     not compressed (Options.ReadOnStreamingLists) is read on after its
//     bookmark as that watch; a compressed one is not, since the API
//     server compresses it for as long as it lasts: a plain watch is
//     opened from the bookmark's resourceVersion.
//   - A watch that ends (the API server's timeout, 5 to 10 minutes, asked
//     for as the reflector does; a dropped connection) is opened again from
//     the last resourceVersion observed; one that ends at once with nothing
//     read, or cannot be opened, is opened again after a backoff.
//   - When the resourceVersion is too old (410 Gone, "Expired"), or too
//     large, or the watch reports any other error, the kind is listed again
//     (after a backoff, but for an expired resourceVersion).
//   - The backoff is the reflector's: 800 ms doubling to 30 s, with jitter,
//     reset after two minutes without a failure.
//
// While a streaming list streams in, a goroutine of the list's own decodes
// its events a few ahead of the loop (readAhead), so that decoding overlaps
// with handing objects to the graph, as it did with client-go's watch; it
// ends with the list.
//
// What the loop reads proves, as before, that the kind can be listed and
// watched (ListWatches.record): a list that completes, the end of a
// streaming list's initial events, any event of a plain watch; a failed
// request or an error event records the failure.
//
// eventSource is the monitor's client: metadataClient, or a unit test's.
type eventSource interface {
	List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	Stream(ctx context.Context, opts metav1.ListOptions) (eventStream, error)
}

// eventStream is one watch response, read by the goroutine that calls
// Next.
type eventStream interface {
	// Next returns the next event, or an error: io.EOF when the API server
	// ended the watch.
	Next() (watch.EventType, runtime.Object, error)
	Close()
}

// Watch timing, as the reflector's: a watch asks the API server to end it
// after a random time between minWatchTimeout and twice that.
const (
	minWatchTimeout = 5 * time.Minute
	// shortWatch: a watch that ends this soon having read nothing is
	// opened again after a backoff (the reflector's "very short watch").
	shortWatch = time.Second
	// listPageSize is the page of a LIST when the API server does not
	// serve streaming lists.
	listPageSize = 500
)

// backoff is the reflector's backoff between failed lists and watches.
var backoff = wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Jitter: 1, Cap: 30 * time.Second}

// lister is a monitor's list and watch state; it belongs to the monitor's
// goroutine.
type lister struct {
	src eventSource
	st  *store
	// slots, when not nil, bounds the lists that run at once (shared by
	// the engines of a fleet).
	slots *ListSlots
	// record records the kind's list and watch errors (nil: it works).
	record func(error)
	// rv is the resourceVersion of the last list or event observed.
	rv string
	// goDormant, when not nil, is called where the loop would open a
	// watch after a list, or after a watch ended as watches do: true when
	// the monitor went dormant (its kind had no object, dormant.go) and
	// the loop is to end.
	goDormant func() bool
	// noStreaming: the API server refused a streaming list as a bad
	// request (it does not serve them); the kind is listed by LIST.
	noStreaming bool
	// readOn: a streaming list's watch is read on after its bookmark, as
	// the kind's watch (its answers are not compressed: see
	// Options.ReadOnStreamingLists); kept is that watch, from the list
	// that kept it to the watch that reads it.
	readOn bool
	kept   eventStream
	delay  wait.DelayFunc
	// sleep waits d or until ctx ends (false).
	sleep func(ctx context.Context, d time.Duration) bool
}

func newLister(src eventSource, st *store, record func(error)) *lister {
	return &lister{src: src, st: st, record: record, delay: backoff.DelayWithReset(clock.RealClock{}, 2*time.Minute), sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// run lists and watches until ctx ends.
func (l *lister) run(ctx context.Context, gvr string) {
	log := logging.WithValues(ctrl.LoggerFrom(ctx), "gvr", gvr)
	needList := true
	for ctx.Err() == nil {
		if needList {
			if err := l.list(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				log.V(4).Info("Listing failed; trying again after a backoff", "err", err)
				if !l.sleep(ctx, l.delay()) {
					return
				}
				continue
			}
			needList = false
			if l.goDormant != nil && l.goDormant() {
				l.dropKept()
				return
			}
		}
		lasted, err := l.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && lasted:
			// The watch ended as watches do: open it again at once, unless
			// the kind has no object left.
			if l.goDormant != nil && l.goDormant() {
				return
			}
		case err == nil || isRetriable(err):
			// Nothing read, or the API server could not take the watch now:
			// open it again from where it was, after a backoff.
			log.V(4).Info("Watch ended early; opening it again after a backoff", "err", err)
			if !l.sleep(ctx, l.delay()) {
				return
			}
		case isStale(err):
			// The resourceVersion is gone: list again, at once.
			log.V(4).Info("Watch expired; listing again", "err", err)
			needList = true
		default:
			log.V(2).Info("Watch failed; listing again after a backoff", "err", err)
			needList = true
			if !l.sleep(ctx, l.delay()) {
				return
			}
		}
	}
}

// dropKept closes the streaming list's watch kept for the watch, if any.
func (l *lister) dropKept() {
	if l.kept != nil {
		l.kept.Close()
		l.kept = nil
	}
}

// isRetriable: the watch was not accepted, and may be next time from the
// same resourceVersion (the reflector's isWatchErrorRetriable).
func isRetriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || isUnreachable(err)
}

// isStale: the resourceVersion the watch started from is not served.
func isStale(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// list lists the kind, by a streaming list unless the API server refused
// one, into the store; the list's resourceVersion is where the watch
// starts.
func (l *lister) list(ctx context.Context) error {
	if !l.slots.acquire(ctx) {
		return ctx.Err()
	}
	defer l.slots.release()
	if !l.noStreaming {
		err := l.streamingList(ctx)
		if err == nil || !refusesStreaming(err) {
			return err
		}
		ctrl.LoggerFrom(ctx).V(1).Info("The API server does not serve streaming lists of the resource; listing it in pages", "err", err)
		l.noStreaming = true
	}
	return l.pagedList(ctx)
}

// refusesStreaming: the API server answered a streaming list as a request
// it does not serve (sendInitialEvents forbidden, an unknown parameter).
func refusesStreaming(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err)
}

// streamingList lists the kind through a watch that sends every object as
// an initial event, then a bookmark that marks their end.
func (l *lister) streamingList(ctx context.Context) error {
	s, err := l.src.Stream(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       watchTimeout(),
	})
	if err != nil {
		l.record(err)
		return err
	}
	keep := false
	defer func() {
		if !keep {
			s.Close()
		}
	}()
	events, stop := readAhead(s)
	defer stop()
	listing := graph.NewListing(0)
	for {
		typ, obj, err := events()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the streaming list ended before its initial events did")
			}
			return err
		}
		switch typ {
		case watch.Added, watch.Modified:
			o, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return fmt.Errorf("a streaming list sent %T", obj)
			}
			listing.Add(o.Namespace, o.Name)
			l.st.list(o)
		case watch.Bookmark:
			if !initialEventsEnd(obj) {
				continue
			}
			rv, err := resourceVersionOf(obj)
			if err != nil {
				return err
			}
			l.st.replace(listing)
			l.rv = rv
			l.record(nil)
			if l.readOn {
				// readAhead has returned with the bookmark: the watch is
				// the monitor goroutine's alone from here.
				keep, l.kept = true, s
			}
			return nil
		case watch.Error:
			err := apiStatusError(obj)
			l.record(err)
			if err == nil {
				return apierrors.FromObject(obj)
			}
			return err
		default:
			// A deletion before the initial events ended: not what a
			// streaming list sends; list again.
			return fmt.Errorf("a streaming list sent a %s event before its initial events ended", typ)
		}
	}
}

// pagedList lists the kind by LIST requests, a page at a time, each object
// observed as it arrives.
func (l *lister) pagedList(ctx context.Context) error {
	listing := graph.NewListing(0)
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		page, err := l.src.List(ctx, opts)
		l.record(err)
		if err != nil {
			return err
		}
		for i := range page.Items {
			o := &page.Items[i]
			listing.Add(o.Namespace, o.Name)
			l.st.list(o)
		}
		if page.Continue == "" {
			l.st.replace(listing)
			l.rv = page.ResourceVersion
			return nil
		}
		opts.Continue = page.Continue
	}
}

// watch watches the kind from l.rv, observing each event, until the watch
// ends: without an error when the API server ended it or its connection
// was lost, lasted false when that was at once with nothing read.
func (l *lister) watch(ctx context.Context) (lasted bool, _ error) {
	read := false
	start := time.Now()
	s := l.kept
	l.kept = nil
	if s == nil {
		var err error
		s, err = l.src.Stream(ctx, metav1.ListOptions{ResourceVersion: l.rv, AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout()})
		if err != nil {
			l.record(err)
			return true, err
		}
	}
	defer s.Close()
	for {
		typ, obj, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil || isUnreachable(err) {
				// The watch ended, or its connection did: open it again.
				return read || time.Since(start) >= shortWatch, nil
			}
			return true, err
		}
		if typ == watch.Error {
			err := apiStatusError(obj)
			l.record(err)
			if err == nil {
				return true, apierrors.FromObject(obj)
			}
			return true, err
		}
		o, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return true, fmt.Errorf("a watch sent %T", obj)
		}
		read = true
		l.record(nil)
		switch typ {
		case watch.Added, watch.Modified:
			l.st.observe(o, false)
		case watch.Deleted:
			l.st.observe(o, true)
		case watch.Bookmark:
		default:
			return true, fmt.Errorf("a watch sent an event of type %q", typ)
		}
		if o.ResourceVersion != "" {
			l.rv = o.ResourceVersion
		}
	}
}

// watchTimeout is a watch's timeout: random in [minWatchTimeout,
// 2*minWatchTimeout], so that the watches of all kinds do not end together.
func watchTimeout() *int64 {
	s := int64(minWatchTimeout.Seconds() * (1 + rand.Float64()))
	return &s
}

// resourceVersionOf is obj's resourceVersion.
func resourceVersionOf(obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	if m.GetResourceVersion() == "" {
		return "", errors.New("the bookmark ending the initial events has no resourceVersion")
	}
	return m.GetResourceVersion(), nil
}

// readAhead reads a streaming list's events in a goroutine of its own, a
// few ahead of the monitor's goroutine, until the bookmark that ends the
// initial events or an error: while a large list streams in, decoding the
// next objects overlaps with handing the previous ones to the graph (as a
// client-go watch's decoder goroutine does). The goroutine ends with the
// list; the watch that follows is read by the monitor's goroutine alone.
// The first event is read by the caller, and the goroutine starts only
// once it is an object: a kind with none (most of a fleet member's, all
// listed at once when it is engaged) sends nothing but the bookmark, and
// needs no goroutine.
//
// next and stop are called by one goroutine. stop, called before the
// stream is closed, lets the goroutine end however far ahead it is.
func readAhead(s eventStream) (next func() (watch.EventType, runtime.Object, error), stop func()) {
	type event struct {
		typ watch.EventType
		obj runtime.Object
		err error
	}
	last := func(typ watch.EventType, obj runtime.Object, err error) bool {
		return err != nil || typ == watch.Error || (typ == watch.Bookmark && initialEventsEnd(obj))
	}
	var ahead chan event
	done := make(chan struct{})
	ended := false
	next = func() (watch.EventType, runtime.Object, error) {
		if ahead == nil {
			if ended {
				return "", nil, io.EOF
			}
			typ, obj, err := s.Next()
			switch {
			case last(typ, obj, err):
				ended = true
			case typ == watch.Added || typ == watch.Modified:
				ahead = make(chan event, readAheadEvents)
				go func() {
					defer close(ahead)
					for {
						typ, obj, err := s.Next()
						select {
						case ahead <- event{typ, obj, err}:
						case <-done:
							return
						}
						if last(typ, obj, err) {
							return
						}
					}
				}()
			}
			return typ, obj, err
		}
		ev, ok := <-ahead
		if !ok {
			return "", nil, io.EOF
		}
		return ev.typ, ev.obj, ev.err
	}
	return next, func() { close(done) }
}

// readAheadEvents is how many events readAhead decodes ahead of the
// monitor's goroutine.
const readAheadEvents = 64
