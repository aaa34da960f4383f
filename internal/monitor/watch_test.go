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
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func objectAt(name, resourceVersion string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: resourceVersion}}
}

// initialEventsEndAt is the bookmark that ends a streaming list's initial
// events at resourceVersion.
func initialEventsEndAt(resourceVersion string) *metav1.PartialObjectMetadata {
	o := objectAt("", resourceVersion)
	o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: trueValue}
	return o
}

// receive returns the next n events of w, failing if they do not arrive
// within 10 seconds.
func receive(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var got []string
	for range n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %v", got)
			}
			got = append(got, string(ev.Type)+" "+ev.Object.(*metav1.PartialObjectMetadata).Name+"@"+ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion)
		case <-time.After(10 * time.Second):
			t.Fatalf("no event within 10s after %v", got)
		}
	}
	return got
}

// After the initial events the changes come from a plain watch from the
// end's resourceVersion: the compressed watch is stopped, and nothing it
// sent after the end reaches the reflector (the plain watch sends it).
func TestAStreamingListContinuesWithAPlainWatchFromTheEndOfItsInitialEvents(t *testing.T) {
	first, plain := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(4, false)
	first.Add(objectAt("a", "3"))
	first.Action(watch.Bookmark, initialEventsEndAt("5"))
	first.Modify(objectAt("sent-again-by-the-plain-watch", "6"))
	var from []string
	w := continueAfterInitialEvents(first, func(resourceVersion string) (watch.Interface, error) {
		from = append(from, resourceVersion)
		return plain, nil
	})
	defer w.Stop()
	if got, want := receive(t, w, 2), []string{"ADDED a@3", "BOOKMARK @5"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	plain.Modify(objectAt("a", "6"))
	plain.Action(watch.Bookmark, objectAt("", "9"))
	if got, want := receive(t, w, 2), []string{"MODIFIED a@6", "BOOKMARK @9"}; !slices.Equal(got, want) {
		t.Fatalf("after the initial events got %v, want %v", got, want)
	}
	if len(from) != 1 || from[0] != "5" {
		t.Errorf("the plain watches started from %v, want one from 5", from)
	}
	if !first.IsStopped() {
		t.Error("the compressed watch was not stopped")
	}
	assertStopStops(t, w, plain)
}

func TestAStreamingListWhosePlainWatchCannotBeOpenedGoesOn(t *testing.T) {
	first := watch.NewFakeWithChanSize(4, false)
	first.Add(objectAt("a", "3"))
	first.Action(watch.Bookmark, initialEventsEndAt("5"))
	first.Modify(objectAt("a", "6"))
	w := continueAfterInitialEvents(first, func(string) (watch.Interface, error) { return nil, errors.New("refused") })
	if got, want := receive(t, w, 3), []string{"ADDED a@3", "BOOKMARK @5", "MODIFIED a@6"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if first.IsStopped() {
		t.Error("the only watch was stopped")
	}
	assertStopStops(t, w, first)
}

// When the API server drops connections, client-go's Request.Watch retries
// the plain watch and then answers with an empty watch (closed at once) and
// no error; a plain watch may also fail at once. Either way the compressed
// watch goes on, and the reflector lists nothing again.
func TestAPlainWatchAlreadyClosedOrFailingLeavesTheFirstWatchGoingOn(t *testing.T) {
	failing := func() watch.Interface {
		w := watch.NewFakeWithChanSize(2, false)
		w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired})
		return w
	}
	for name, plain := range map[string]func() watch.Interface{
		"closed (an empty watch)":  watch.NewEmptyWatch,
		"its first event an error": failing,
		"closed after an error":    func() watch.Interface { w := failing(); w.(*watch.FakeWatcher).Stop(); return w },
		"no watch and no error":    func() watch.Interface { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			first := watch.NewFakeWithChanSize(4, false)
			first.Add(objectAt("a", "3"))
			first.Action(watch.Bookmark, initialEventsEndAt("5"))
			first.Modify(objectAt("a", "6"))
			var opened watch.Interface
			w := continueAfterInitialEvents(first, func(string) (watch.Interface, error) { opened = plain(); return opened, nil })
			if got, want := receive(t, w, 3), []string{"ADDED a@3", "BOOKMARK @5", "MODIFIED a@6"}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			first.Delete(objectAt("a", "7"))
			if got, want := receive(t, w, 1), []string{"DELETED a@7"}; !slices.Equal(got, want) {
				t.Fatalf("then got %v, want %v", got, want)
			}
			if first.IsStopped() {
				t.Error("the compressed watch was stopped")
			}
			if f, ok := opened.(*watch.FakeWatcher); ok && !f.IsStopped() {
				t.Error("the plain watch that was let go was not stopped")
			}
			assertStopStops(t, w, first)
		})
	}
}

// A plain watch that has sent its first event by the time it is opened
// takes over, and that event follows the bookmark.
func TestAPlainWatchsFirstEventFollowsTheBookmark(t *testing.T) {
	first, plain := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(4, false)
	first.Action(watch.Bookmark, initialEventsEndAt("5"))
	first.Modify(objectAt("sent-again-by-the-plain-watch", "6"))
	plain.Modify(objectAt("a", "6"))
	plain.Delete(objectAt("a", "7"))
	w := continueAfterInitialEvents(first, func(string) (watch.Interface, error) { return plain, nil })
	if got, want := receive(t, w, 3), []string{"BOOKMARK @5", "MODIFIED a@6", "DELETED a@7"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !first.IsStopped() {
		t.Error("the compressed watch was not stopped")
	}
	assertStopStops(t, w, plain)
}

// A bookmark that does not end the initial events, and one after them,
// changes nothing; the end of the underlying watch ends the watch.
func TestOnlyTheEndOfTheInitialEventsStartsAPlainWatch(t *testing.T) {
	first, plain := watch.NewFakeWithChanSize(4, false), watch.NewFakeWithChanSize(4, false)
	first.Action(watch.Bookmark, objectAt("", "2"))
	first.Action(watch.Bookmark, initialEventsEndAt("5"))
	opened := 0
	w := continueAfterInitialEvents(first, func(string) (watch.Interface, error) { opened++; return plain, nil })
	defer w.Stop()
	receive(t, w, 2)
	plain.Action(watch.Bookmark, initialEventsEndAt("7"))
	receive(t, w, 1)
	plain.Stop()
	assertEnds(t, w)
	if opened != 1 {
		t.Errorf("%d plain watches opened, want 1", opened)
	}
}

// assertStopStops stops w and asserts that it ends and stops current, the
// watch it was reading.
func assertStopStops(t *testing.T, w watch.Interface, current *watch.FakeWatcher) {
	t.Helper()
	w.Stop()
	assertEnds(t, w)
	if !current.IsStopped() {
		t.Error("Stop did not stop the watch being read")
	}
}

func assertEnds(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("an event after the end")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end within 10s")
	}
}
