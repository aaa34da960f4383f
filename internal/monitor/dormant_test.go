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
	"io"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ownergc/ownergc/internal/discovery"
)

// dormantSet is a Set with dormancy whose ConfigMap monitor runs the
// loop over src until it returns (a scripted source's end stops it).
func dormantSet(t *testing.T, src eventSource) (*Set, *monitor, chan struct{}) {
	t.Helper()
	s, st := testStore()
	s.opts.DormantCheck = time.Hour
	s.opts.ListWatches = NewListWatches(func() {})
	s.sweeps.kick = make(chan struct{}, 1)
	st.m.src = src
	l := newLister(src, st, func(error) {})
	l.goDormant = st.goDormant
	l.sleep = func(ctx context.Context, _ time.Duration) bool { return ctx.Err() == nil }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if ss, ok := src.(*scriptedSource); ok {
		ss.stop = cancel
	}
	done := make(chan struct{})
	go func() { defer close(done); l.run(ctx, "configmaps"); st.endListing() }()
	return s, st.m, done
}

func waitClosed(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s within 10 s", what)
	}
}

// A kind whose list is empty is not watched: its monitor's loop ends after
// the list, and the kind is dormant (the graph does not answer for it: not
// watched, nothing cached); a kind with objects is watched.
func TestAnEmptyKindGoesDormantAfterItsList(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		src := &scriptedSource{t: t, steps: []step{
			{want: "stream", check: streamingListAt(""), events: []watch.Event{{Type: watch.Bookmark, Object: initialEventsEndAt("10")}}},
		}}
		s, m, done := dormantSet(t, src)
		waitClosed(t, done, "the monitor of an empty kind did not go dormant after its list")
		gk := m.res.GroupKind()
		if st := s.Kind(gk); !st.Dormant || st.Watched {
			t.Fatalf("kind state %+v: want dormant, not watched", st)
		}
		if _, ok := s.Cached(gk, "ns", "a"); ok {
			t.Fatal("a dormant kind answered from the graph")
		}
		if src.calls != 1 {
			t.Fatalf("%d calls: a dormant kind is not watched after its list", src.calls)
		}
	})
	t.Run("with objects", func(t *testing.T) {
		src := &scriptedSource{t: t, steps: []step{
			{want: "stream", check: streamingListAt(""), events: []watch.Event{
				{Type: watch.Added, Object: cm("a", "3")}, {Type: watch.Bookmark, Object: initialEventsEndAt("10")},
			}},
			{want: "stream", check: watchFrom("10")},
		}}
		s, m, done := dormantSet(t, src)
		waitClosed(t, done, "the monitor of a kind with an object did not watch it")
		if st := s.Kind(m.res.GroupKind()); st.Dormant || !st.Watched {
			t.Fatalf("kind state %+v: want watched", st)
		}
	})
}

// A watch that ends as watches do, once the kind's last object was deleted,
// is not opened again: the kind goes dormant.
func TestAKindWhoseLastObjectWasDeletedGoesDormantWhenItsWatchEnds(t *testing.T) {
	src := &scriptedSource{t: t, steps: []step{
		{want: "stream", check: streamingListAt(""), events: []watch.Event{
			{Type: watch.Added, Object: cm("a", "3")}, {Type: watch.Bookmark, Object: initialEventsEndAt("10")},
		}},
		{want: "stream", check: watchFrom("10"), events: []watch.Event{{Type: watch.Deleted, Object: cm("a", "11")}}},
		// Not taken: the watch is not opened again.
		{want: "stream"},
	}}
	s, m, done := dormantSet(t, src)
	waitClosed(t, done, "the monitor did not go dormant when the watch of its empty kind ended")
	if st := s.Kind(m.res.GroupKind()); !st.Dormant || src.calls != 2 {
		t.Fatalf("kind state %+v after %d calls: want dormant after the list and one watch", st, src.calls)
	}
}

// wokenSource serves a woken monitor: a streaming list of one object, then
// a watch that lasts until the monitor stops.
type wokenSource struct{}

func (wokenSource) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return nil, errors.New("not listed by LIST")
}

func (wokenSource) Stream(ctx context.Context, o metav1.ListOptions) (eventStream, error) {
	if o.SendInitialEvents != nil {
		return &sliceStream{events: []watch.Event{{Type: watch.Added, Object: cm("x", "21")}, {Type: watch.Bookmark, Object: initialEventsEndAt("22")}}}, nil
	}
	return &sliceStream{ctx: ctx}, nil
}

// sliceStream sends its events, then waits for ctx (if any) and ends.
type sliceStream struct {
	ctx    context.Context
	events []watch.Event
}

func (s *sliceStream) Next() (watch.EventType, runtime.Object, error) {
	if len(s.events) == 0 {
		if s.ctx != nil {
			<-s.ctx.Done()
		}
		return "", nil, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev.Type, ev.Object, nil
}

func (s *sliceStream) Close() {}

// ConfirmDormantEmpty lists every dormant kind again: one that has an
// object now is woken (a new monitor lists it from scratch) and the
// confirmation waits until it is listed; then it confirms.
func TestConfirmingDormantKindsWakesOneThatHasAnObject(t *testing.T) {
	src := &scriptedSource{t: t, steps: []step{
		{want: "stream", events: []watch.Event{{Type: watch.Bookmark, Object: initialEventsEndAt("10")}}},
		// The confirmation's check: an object was created.
		{want: "list", check: func(o metav1.ListOptions) error {
			if o.Limit != 1 || o.ResourceVersion != "" {
				return errors.New("a dormant kind is checked by a consistent LIST of one item")
			}
			return nil
		}, list: &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{*cm("x", "21")}}},
	}}
	s, m, done := dormantSet(t, src)
	waitClosed(t, done, "the monitor of an empty kind did not go dormant")
	s.source = func(discovery.Resource) (eventSource, error) { return wokenSource{}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.sweepLoop(ctx)

	if err := s.ConfirmDormantEmpty(ctx); !errors.Is(err, ErrDormantWaking) {
		t.Fatalf("confirmed %v: a dormant kind with an object must be woken, and the confirmation refused", err)
	}
	gk := m.res.GroupKind()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.ConfirmDormantEmpty(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrDormantWaking) || time.Now().After(deadline) {
			t.Fatalf("after the woken kind's list: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.Kind(gk); !st.Watched || !st.Synced || st.Dormant {
		t.Fatalf("kind state %+v: want watched and synced once woken", st)
	}
	if _, ok := s.Cached(gk, "ns", "x"); !ok {
		t.Fatal("the object that woke the kind is not in the graph")
	}
	if src.calls != 2 {
		t.Fatalf("the dormant kind was checked %d times, want once", src.calls-1)
	}
}

// failingSource cannot list or watch (RBAC revoked, say).
type failingSource struct{}

func (failingSource) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("revoked"))
}

func (failingSource) Stream(context.Context, metav1.ListOptions) (eventStream, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("revoked"))
}

// A dormant kind whose check fails is never taken for empty: it is woken
// (a monitor runs for it again, and reports the kind as any failing kind
// is reported), and the confirmation refuses while that monitor has not
// listed it.
func TestADormantKindWhoseCheckFailsIsWokenNotTakenForEmpty(t *testing.T) {
	src := &scriptedSource{t: t, steps: []step{
		{want: "stream", events: []watch.Event{{Type: watch.Bookmark, Object: initialEventsEndAt("10")}}},
		{want: "list", err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("revoked"))},
	}}
	s, m, done := dormantSet(t, src)
	waitClosed(t, done, "the monitor of an empty kind did not go dormant")
	gk := m.res.GroupKind()
	if st := s.Kind(gk); !st.Dormant {
		t.Fatalf("kind state %+v: want dormant after an empty list", st)
	}
	s.source = func(discovery.Resource) (eventSource, error) { return failingSource{}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.sweepLoop(ctx)

	for i := 0; i < 3; i++ {
		if err := s.ConfirmDormantEmpty(ctx); !errors.Is(err, ErrDormantWaking) {
			t.Fatalf("confirmation %d: %v, want ErrDormantWaking: a kind whose check failed may have objects", i+1, err)
		}
	}
	if st := s.Kind(gk); st.Dormant || !st.Watched || st.Synced {
		t.Fatalf("kind state %+v: want woken (watched, not dormant) and not synced while it cannot be listed", st)
	}
}
