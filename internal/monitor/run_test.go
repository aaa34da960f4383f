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
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The monitor's loop against a scripted source: each call of List or
// Stream takes the next step of the script, and once the script is done
// the loop is stopped. What the API server decides is left to the
// integration tests; here, what the loop does with each answer.

// step is the answer to one List or Stream call.
type step struct {
	// want is "list" or "stream": the call the loop must make.
	want string
	// check, when set, checks the call's options.
	check func(metav1.ListOptions) error
	err   error
	list  *metav1.PartialObjectMetadataList
	// events are a stream's, then end (io.EOF when nil) from Next.
	events []watch.Event
	end    error
}

type scriptedSource struct {
	t      *testing.T
	steps  []step
	stop   context.CancelFunc
	calls  int
	closed int
	sleeps int
}

func (s *scriptedSource) take(kind string, opts metav1.ListOptions) (step, bool) {
	s.t.Helper()
	if s.calls == len(s.steps) {
		s.stop()
		return step{}, false
	}
	st := s.steps[s.calls]
	s.calls++
	if st.want != kind {
		s.t.Errorf("call %d: the loop called %s (%+v), want %s", s.calls, kind, opts, st.want)
	}
	if st.check != nil {
		if err := st.check(opts); err != nil {
			s.t.Errorf("call %d (%s): %v", s.calls, kind, err)
		}
	}
	return st, true
}

func (s *scriptedSource) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	st, ok := s.take("list", opts)
	if !ok {
		return nil, context.Canceled
	}
	return st.list, st.err
}

func (s *scriptedSource) Stream(_ context.Context, opts metav1.ListOptions) (eventStream, error) {
	st, ok := s.take("stream", opts)
	if !ok {
		return nil, context.Canceled
	}
	if st.err != nil {
		return nil, st.err
	}
	return &scriptedStream{s: s, step: st, last: s.calls == len(s.steps)}, nil
}

type scriptedStream struct {
	s    *scriptedSource
	step step
	next int
	last bool
}

func (e *scriptedStream) Next() (watch.EventType, runtime.Object, error) {
	if e.next == len(e.step.events) {
		if e.last {
			// The script is done: stop the loop as the stream ends.
			e.s.stop()
		}
		if e.step.end != nil {
			return "", nil, e.step.end
		}
		return "", nil, io.EOF
	}
	ev := e.step.events[e.next]
	e.next++
	return ev.Type, ev.Object, nil
}

func (e *scriptedStream) Close() { e.s.closed++ }

// runScript runs a monitor's loop of a ConfigMap store over steps until
// they are done; it returns the source (calls, closes, backoffs) and the
// store.
func runScript(t *testing.T, steps ...step) (*scriptedSource, *Set, *store, []error) {
	t.Helper()
	return runScriptWith(t, func(*lister) {}, steps...)
}

// runScriptWith is runScript with the lister set up by setup first.
func runScriptWith(t *testing.T, setup func(*lister), steps ...step) (*scriptedSource, *Set, *store, []error) {
	t.Helper()
	s, st := testStore()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &scriptedSource{t: t, steps: steps, stop: cancel}
	var recorded []error
	l := newLister(src, st, func(err error) {
		if ctx.Err() == nil {
			recorded = append(recorded, err)
		}
	})
	l.sleep = func(ctx context.Context, _ time.Duration) bool { src.sleeps++; return ctx.Err() == nil }
	setup(l)
	done := make(chan struct{})
	go func() { defer close(done); l.run(ctx, "configmaps"); st.endListing() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the loop did not return within 10 s of its script's end (%d of %d steps taken)", src.calls, len(steps))
	}
	if src.calls < len(steps) {
		t.Fatalf("the loop took %d of %d steps", src.calls, len(steps))
	}
	return src, s, st, recorded
}

func cm(name, rv string) *metav1.PartialObjectMetadata {
	o := configMapMeta(name, name+"-uid")
	o.ResourceVersion = rv
	return o
}

func initialEventsEndAt(rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv,
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
}

func streamingListAt(rv string) func(metav1.ListOptions) error {
	return func(o metav1.ListOptions) error {
		if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan ||
			o.ResourceVersion != rv || !o.AllowWatchBookmarks || o.TimeoutSeconds == nil {
			return fmt.Errorf("options %+v, want a streaming list from resourceVersion %q with bookmarks and a timeout", o, rv)
		}
		return nil
	}
}

func watchFrom(rv string) func(metav1.ListOptions) error {
	return func(o metav1.ListOptions) error {
		if o.SendInitialEvents != nil || o.ResourceVersion != rv || !o.AllowWatchBookmarks || o.TimeoutSeconds == nil ||
			*o.TimeoutSeconds < int64(minWatchTimeout.Seconds()) || *o.TimeoutSeconds > int64(2*minWatchTimeout.Seconds()) {
			return fmt.Errorf("options %+v, want a plain watch from resourceVersion %s with bookmarks and a 5 to 10 minute timeout", o, rv)
		}
		return nil
	}
}

func requireNodes(t *testing.T, s *Set, present []string, absent ...string) {
	t.Helper()
	for _, n := range present {
		if s.opts.Graph.Node(types.UID(n+"-uid")) == nil {
			t.Errorf("%s is not in the graph", n)
		}
	}
	for _, n := range absent {
		if s.opts.Graph.Node(types.UID(n+"-uid")) != nil {
			t.Errorf("%s is in the graph", n)
		}
	}
}

// A streaming list is observed, its stream closed at the bookmark that
// ends its initial events, and a plain watch opened from that bookmark's
// resourceVersion; a watch the API server ends is opened again at once
// from the last resourceVersion observed (a bookmark's too).
func TestAStreamingListContinuesWithPlainWatchesFromTheLastResourceVersion(t *testing.T) {
	src, s, st, recorded := runScript(t,
		step{want: "stream", check: streamingListAt(""), events: []watch.Event{
			{Type: watch.Added, Object: cm("a", "3")}, {Type: watch.Added, Object: cm("b", "4")},
			{Type: watch.Bookmark, Object: initialEventsEndAt("10")},
			// Never read: the stream is closed at the bookmark.
			{Type: watch.Deleted, Object: cm("a", "11")},
		}},
		step{want: "stream", check: watchFrom("10"), events: []watch.Event{
			{Type: watch.Added, Object: cm("c", "12")}, {Type: watch.Deleted, Object: cm("b", "13")},
			{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "20"}}},
		}},
		step{want: "stream", check: watchFrom("20")},
	)
	requireNodes(t, s, []string{"a", "c"}, "b")
	if !st.m.synced.Load() {
		t.Error("the monitor is not synced after its streaming list")
	}
	if src.closed != 3 || src.sleeps != 0 {
		t.Errorf("%d streams closed and %d backoffs, want all 3 closed and no backoff", src.closed, src.sleeps)
	}
	for _, err := range recorded {
		if err != nil {
			t.Errorf("recorded %v, want only successes", err)
		}
	}
}

// A streaming list whose answers are not compressed (a fleet member's) is
// read on after the bookmark that ends its initial events, as the kind's
// watch: what follows the bookmark is observed, and only once that watch
// ends is another opened, from the last resourceVersion observed.
func TestAnUncompressedStreamingListIsReadOnAsTheKindsWatch(t *testing.T) {
	src, s, _, recorded := runScriptWith(t, func(l *lister) { l.readOn = true },
		step{want: "stream", check: streamingListAt(""), events: []watch.Event{
			{Type: watch.Added, Object: cm("a", "3")}, {Type: watch.Added, Object: cm("b", "4")},
			{Type: watch.Bookmark, Object: initialEventsEndAt("10")},
			{Type: watch.Deleted, Object: cm("a", "11")}, {Type: watch.Added, Object: cm("c", "12")},
		}},
		step{want: "stream", check: watchFrom("12")},
	)
	requireNodes(t, s, []string{"b", "c"}, "a")
	if src.closed != 2 || src.sleeps != 0 {
		t.Errorf("%d streams closed and %d backoffs, want both closed and no backoff", src.closed, src.sleeps)
	}
	for _, err := range recorded {
		if err != nil {
			t.Errorf("recorded %v, want only successes", err)
		}
	}
}

// A kind with no object goes dormant after its streaming list: the watch
// kept for it is closed, not read.
func TestAStreamingListKeptForADormantKindIsClosed(t *testing.T) {
	src, _, _, _ := runScriptWith(t, func(l *lister) { l.readOn, l.goDormant = true, func() bool { return true } },
		step{want: "stream", check: streamingListAt(""), events: []watch.Event{
			{Type: watch.Bookmark, Object: initialEventsEndAt("10")},
			{Type: watch.Added, Object: cm("a", "11")},
		}},
	)
	if src.calls != 1 || src.closed != 1 {
		t.Errorf("%d calls and %d streams closed, want the streaming list alone, closed", src.calls, src.closed)
	}
}

// An API server that does not serve streaming lists (it refuses
// sendInitialEvents as a bad request) is listed by LIST in pages, and
// watched from the last page's resourceVersion; the streaming list is not
// tried again by that monitor.
func TestAnAPIServerWithoutStreamingListsIsListedInPages(t *testing.T) {
	forbidden := apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
	page := func(o metav1.ListOptions, cont string) error {
		if o.Limit != listPageSize || o.Continue != cont || o.ResourceVersion != "" {
			return fmt.Errorf("list options %+v, want a page of %d from continue %q", o, listPageSize, cont)
		}
		return nil
	}
	src, s, st, _ := runScript(t,
		step{want: "stream", err: forbidden},
		step{want: "list", check: func(o metav1.ListOptions) error { return page(o, "") },
			list: &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{Continue: "next"}, Items: []metav1.PartialObjectMetadata{*cm("a", "1")}}},
		step{want: "list", check: func(o metav1.ListOptions) error { return page(o, "next") },
			list: &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "30"}, Items: []metav1.PartialObjectMetadata{*cm("b", "2")}}},
		step{want: "stream", check: watchFrom("30"), err: apierrors.NewResourceExpired("too old resource version: 30 (40)")},
		// Listed again: by LIST, at once.
		step{want: "list", check: func(o metav1.ListOptions) error { return page(o, "") },
			list: &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "41"}, Items: []metav1.PartialObjectMetadata{*cm("b", "2")}}},
		step{want: "stream", check: watchFrom("41")},
	)
	requireNodes(t, s, []string{"b"}, "a")
	if !st.m.synced.Load() || src.sleeps != 0 {
		t.Errorf("synced %v after %d backoffs: want synced, and no backoff (an expired resourceVersion lists again at once)", st.m.synced.Load(), src.sleeps)
	}
}

// What ends a watch decides what comes next: an expired resourceVersion,
// reported when the watch opens or inside it, lists again at once; a watch
// refused for now (429) or that could not reach the API server is opened
// again from the same resourceVersion after a backoff, as is one that ends
// at once having read nothing; any other error lists again after a backoff.
func TestWhatEndsAWatchDecidesWhatComesNext(t *testing.T) {
	list := func(rv string, objs ...*metav1.PartialObjectMetadata) step {
		evs := make([]watch.Event, 0, len(objs)+1)
		for _, o := range objs {
			evs = append(evs, watch.Event{Type: watch.Added, Object: o})
		}
		return step{want: "stream", check: streamingListAt(""), events: append(evs, watch.Event{Type: watch.Bookmark, Object: initialEventsEndAt(rv)})}
	}
	expired := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	tests := []struct {
		name      string
		then      []step
		wantSleep int
	}{
		{"an expired resourceVersion when the watch opens", []step{
			{want: "stream", check: watchFrom("5"), err: apierrors.NewResourceExpired("too old")}, list("9")}, 0},
		{"an expired resourceVersion inside the watch", []step{
			{want: "stream", check: watchFrom("5"), events: []watch.Event{{Type: watch.Error, Object: expired}}}, list("9")}, 0},
		{"a resourceVersion the API server has not reached", []step{
			{want: "stream", check: watchFrom("5"), err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 504, Reason: metav1.StatusReasonTimeout,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}}}, list("9")}, 0},
		{"too many requests", []step{
			{want: "stream", check: watchFrom("5"), err: apierrors.NewTooManyRequests("later", 1)}, {want: "stream", check: watchFrom("5")}}, 1},
		{"unreachable", []step{
			{want: "stream", check: watchFrom("5"), err: io.ErrUnexpectedEOF}, {want: "stream", check: watchFrom("5")}}, 1},
		{"ended at once with nothing read", []step{
			{want: "stream", check: watchFrom("5")}, {want: "stream", check: watchFrom("5")}}, 1},
		{"cut after an event", []step{
			{want: "stream", check: watchFrom("5"), events: []watch.Event{{Type: watch.Modified, Object: cm("a", "6")}}, end: io.ErrUnexpectedEOF},
			{want: "stream", check: watchFrom("6")}}, 0},
		{"an error inside the watch", []step{
			{want: "stream", check: watchFrom("5"), events: []watch.Event{{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "conversion webhook failed"}}}},
			list("9")}, 1},
		{"an object that cannot be decoded", []step{
			{want: "stream", check: watchFrom("5"), end: errors.New("proto: cannot parse invalid wire-format data")}, list("9")}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := append([]step{list("5", cm("a", "4"))}, tt.then...)
			src, _, _, _ := runScript(t, steps...)
			if src.sleeps != tt.wantSleep {
				t.Errorf("%d backoffs, want %d", src.sleeps, tt.wantSleep)
			}
		})
	}
}

// A streaming list reports its failure inside the stream: its error event
// counts, and only the end of its initial events clears it; after that,
// any event of the plain watch proves the kind can be watched. A failed
// LIST counts, a successful one clears the failure.
func TestWhatTheLoopReadsIsRecordedAsTheKindsListAndWatchState(t *testing.T) {
	failed := &metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "corrupt object"}
	_, _, _, recorded := runScript(t,
		step{want: "stream", events: []watch.Event{{Type: watch.Added, Object: cm("a", "1")}, {Type: watch.Error, Object: failed}}},
		step{want: "stream", events: []watch.Event{
			{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2"}}},
			{Type: watch.Bookmark, Object: initialEventsEndAt("3")}}},
		step{want: "stream", events: []watch.Event{{Type: watch.Modified, Object: cm("a", "4")},
			{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}}}},
		step{want: "stream", err: apierrors.NewBadRequest("sendInitialEvents is forbidden")},
		step{want: "list", list: &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}},
		step{want: "stream"},
	)
	var got []string
	for _, err := range recorded {
		switch {
		case err == nil:
			got = append(got, "ok")
		case strings.Contains(err.Error(), "corrupt object"):
			got = append(got, "corrupt")
		default:
			got = append(got, err.Error())
		}
	}
	// The streaming list's error, the end of the second's initial events,
	// the plain watch's event, its expiry (not a failure of the kind), the
	// refused streaming list, the LIST that follows.
	if want := []string{"corrupt", "ok", "ok", "ok", "sendInitialEvents is forbidden", "ok"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("recorded %v, want %v", got, want)
	}
}

// A list that failed part way leaves what it delivered observed; the next
// complete list removes what it lacks, and the monitor is synced by that
// one only.
func TestAListThatBreaksIsCompletedByTheNext(t *testing.T) {
	src, s, st, _ := runScript(t,
		step{want: "stream", events: []watch.Event{{Type: watch.Added, Object: cm("a", "1")}, {Type: watch.Added, Object: cm("b", "2")}}, end: io.ErrUnexpectedEOF},
		step{want: "stream", check: streamingListAt(""), events: []watch.Event{{Type: watch.Added, Object: cm("b", "2")}, {Type: watch.Bookmark, Object: initialEventsEndAt("5")}}},
	)
	requireNodes(t, s, []string{"b"}, "a")
	if !st.m.synced.Load() || src.sleeps != 1 {
		t.Errorf("synced %v, %d backoffs: want synced by the second list, after one backoff", st.m.synced.Load(), src.sleeps)
	}
}

// A list holds one of the shared list slots from its request until it is
// complete; a monitor waits for a free slot before it lists, and gives up
// waiting when it is stopped.
func TestAListHoldsAListSlotUntilItIsComplete(t *testing.T) {
	slots := NewListSlots(1, Burst{})
	inUse := func() int { return len(slots.slots) }
	_, st := testStore()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var during []int
	src := &scriptedSource{t: t, stop: cancel, steps: []step{
		{want: "stream", check: func(metav1.ListOptions) error { during = append(during, inUse()); return nil },
			events: []watch.Event{{Type: watch.Added, Object: cm("a", "1")}, {Type: watch.Bookmark, Object: initialEventsEndAt("2")}}},
		{want: "stream", check: func(metav1.ListOptions) error { during = append(during, inUse()); return nil }},
	}}
	l := newLister(src, st, func(error) {})
	l.slots = slots
	l.run(ctx, "configmaps")
	if want := []int{1, 0}; fmt.Sprint(during) != fmt.Sprint(want) {
		t.Errorf("slots in use during the list and during the watch: %v, want %v", during, want)
	}
	if slots.Most() != 1 || inUse() != 0 {
		t.Errorf("most %d, in use %d after the loop: want 1 and 0", slots.Most(), inUse())
	}

	// Every slot taken: a monitor waits, and returns when stopped.
	if !slots.acquire(context.Background()) {
		t.Fatal("a free slot was not given")
	}
	waiting, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	waited := &lister{src: &scriptedSource{t: t, stop: stop}, st: st, record: func(error) {}, slots: slots}
	if err := waited.list(waiting); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("listing with every slot taken: %v, want to wait until stopped", err)
	}
	slots.release()
}

// readerStream is a sliceStream that records, for each Next, whether a
// goroutine other than the reader's called it.
type readerStream struct {
	sliceStream
	reader      string // the reading goroutine's ID
	byReadAhead []bool
}

// goroutineID is the calling goroutine's ID, from its stack trace's first
// line ("goroutine 7 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	return strings.Fields(string(buf[:goruntime.Stack(buf, false)]))[1]
}

func (s *readerStream) Next() (watch.EventType, runtime.Object, error) {
	s.byReadAhead = append(s.byReadAhead, goroutineID() != s.reader)
	return s.sliceStream.Next()
}

// A streaming list of a kind with no object (its bookmark first) is read by
// the monitor's goroutine alone; one with objects is read ahead by a
// goroutine of its own from its second event on, to the bookmark.
func TestOnlyAListWithObjectsIsReadAhead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []watch.Event
		want   []bool // per Next: read by another goroutine than the reader
	}{
		{name: "no object", events: []watch.Event{{Type: watch.Bookmark, Object: initialEventsEndAt("5")}},
			want: []bool{false}},
		{name: "two objects", events: []watch.Event{{Type: watch.Added, Object: cm("a", "3")}, {Type: watch.Added, Object: cm("b", "4")}, {Type: watch.Bookmark, Object: initialEventsEndAt("5")}},
			want: []bool{false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &readerStream{sliceStream: sliceStream{events: tc.events}, reader: goroutineID()}
			next, stop := readAhead(s)
			defer stop()
			var got []watch.EventType
			for {
				typ, _, err := next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("next: %v", err)
					}
					break
				}
				got = append(got, typ)
			}
			if len(got) != len(tc.events) || got[len(got)-1] != watch.Bookmark {
				t.Errorf("read %v, want the %d events to the bookmark", got, len(tc.events))
			}
			if !slices.Equal(s.byReadAhead, tc.want) {
				t.Errorf("Next called by a goroutine other than the reader's: %v, want %v", s.byReadAhead, tc.want)
			}
		})
	}
}
