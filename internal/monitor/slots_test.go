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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

// The Sets that share list slots return their initial lists' memory once,
// when no list has run for ListsQuiet since one asked: not while lists
// run, not once per Set, and again only when asked again.
func TestSharedListSlotsReturnTheListsMemoryOnceTheyAreQuiet(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	freed := make(chan struct{}, 10)
	slots := newListSlots(2, fake, func() { freed <- struct{}{} }, Burst{})
	ctx := context.Background()
	waiting := func(want bool, what string) {
		t.Helper()
		if fake.HasWaiters() != want {
			t.Fatalf("%s: the quiet period running is %v, want %v", what, !want, want)
		}
	}
	returned := func(want int, what string) {
		t.Helper()
		if want > 0 {
			select {
			case <-freed:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the memory was not returned within 5 s", what)
			}
		}
		if n := len(freed); n > 0 {
			t.Fatalf("%s: the memory was returned %d more times", what, n)
		}
	}

	// Lists end without anyone asking: nothing waits to be returned.
	slots.acquire(ctx)
	slots.release()
	waiting(false, "lists ended, nobody asked")

	// A Set asks while two lists run (another engine's among them): the
	// memory waits for both to end, then for the quiet period.
	slots.acquire(ctx)
	slots.acquire(ctx)
	slots.releaseMemory()
	slots.releaseMemory() // a second Set's monitors synced too
	waiting(false, "asked while lists run")
	slots.release()
	waiting(false, "one list still runs")
	slots.release()
	waiting(true, "the last list ended")

	// A list that starts within the quiet period holds the memory when
	// the period ends, and its end starts another.
	slots.acquire(ctx)
	slots.quietEnded()
	returned(0, "the quiet period ended while a list ran")
	slots.release()
	waiting(true, "that list ended")
	fake.Step(ListsQuiet - time.Millisecond)
	waiting(true, "just short of the quiet period after that list")
	fake.Step(time.Millisecond)
	returned(1, "the quiet period after the last list")
	waiting(false, "returned: asked by two Sets, once")

	// Asked again with no list running: once more, after the quiet period.
	slots.releaseMemory()
	waiting(true, "asked again with no list running")
	fake.Step(ListsQuiet)
	returned(1, "asked again")
	waiting(false, "returned again")
}

// A Set whose monitors share list slots (a fleet's engine) asks them to
// return its initial lists' memory once its monitors synced, rather than
// returning it at once: the slots return it once the lists are quiet.
func TestASetSharingListSlotsReturnsItsMemoryThroughThem(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	freed := make(chan struct{}, 10)
	slots := newListSlots(1, fake, func() { freed <- struct{}{} }, Burst{})
	_, s, st, _ := runScriptWith(t, func(l *lister) {
		l.slots = slots
		l.st.s.opts.Lists = slots
		l.st.s.applied = true
	},
		step{want: "stream", events: []watch.Event{{Type: watch.Added, Object: cm("a", "1")}, {Type: watch.Bookmark, Object: initialEventsEndAt("2")}}},
		step{want: "stream"},
	)
	if !st.m.synced.Load() || !s.released.Load() {
		t.Fatalf("synced %v, released %v after the list: want both", st.m.synced.Load(), s.released.Load())
	}
	if !fake.HasWaiters() {
		t.Fatal("the Set's monitors synced and the list ended, but the slots are not waiting for the lists to be quiet")
	}
	if len(freed) != 0 {
		t.Fatal("the memory was returned before the quiet period")
	}
	fake.Step(ListsQuiet)
	select {
	case <-freed:
	case <-time.After(5 * time.Second):
		t.Fatal("the memory was not returned within 5 s of the quiet period's end")
	}
}

// A burst of lists runs from a list that starts when none ran for
// ListsQuiet until ListsQuiet after the last one ended: lists that overlap,
// or follow one another within the quiet period, are one burst; it ends
// before the memory a Set asked for is returned.
func TestABurstOfListsLastsUntilTheListsAreQuiet(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	events := make(chan string, 10)
	slots := newListSlots(2, fake, func() { events <- "free" }, Burst{
		Start: func() { events <- "start" },
		End:   func() { events <- "end" },
	})
	ctx := context.Background()
	want := func(what string, want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case got := <-events:
				if got != w {
					t.Fatalf("%s: %s, want %s", what, got, w)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: no %s within 5 s", what, w)
			}
		}
		if len(events) > 0 {
			t.Fatalf("%s: then %s, want nothing more", what, <-events)
		}
	}

	slots.acquire(ctx)
	want("the first list", "start")
	slots.acquire(ctx)
	slots.release()
	want("a second list while the first runs, and its end")
	if fake.HasWaiters() {
		t.Fatal("the burst's quiet period started while a list runs")
	}
	slots.release()
	fake.Step(ListsQuiet - time.Millisecond)
	slots.acquire(ctx)
	want("a list started within the quiet period")
	fake.Step(time.Millisecond)
	want("the quiet period after the earlier lists ended, while a list runs")
	slots.release()
	fake.Step(ListsQuiet - time.Millisecond)
	want("just short of the quiet period after the last list")
	fake.Step(time.Millisecond)
	want("the quiet period after the last list", "end")

	// The next list starts another burst; a Set asks for its memory to be
	// returned: the burst ends first.
	slots.acquire(ctx)
	want("a list after the burst ended", "start")
	slots.releaseMemory()
	slots.release()
	fake.Step(ListsQuiet)
	want("asked during a burst", "end", "free")
	if fake.HasWaiters() {
		t.Fatal("the quiet period runs again with no burst and nothing to return")
	}
}
