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
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

var (
	valvesGVR = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "valves"}
	valveGVK  = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Valve"}
)

func TestCollectionOf(t *testing.T) {
	for path, want := range map[string]*schema.GroupVersionResource{
		"/api/v1/configmaps":                     {Version: "v1", Resource: "configmaps"},
		"/apis/example.com/v2/valves":            &valvesGVR,
		"/api/v1/namespaces/ns/configmaps":       nil,
		"/apis/example.com/v2/namespaces/ns/x/y": nil,
		"/apis/example.com/v2":                   nil,
		"/healthz":                               nil,
	} {
		got, ok := collectionOf(path)
		if ok != (want != nil) || (ok && got != *want) {
			t.Errorf("collectionOf(%q) = %v, %t; want %v", path, got, ok, want)
		}
	}
}

// newTracked returns list and watch functions of valves tracked by i, as
// a monitor's reflector calls them.
func newTracked(i *ListWatches, list func() error, events ...watch.Event) *toolscache.ListWatch {
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.PartialObjectMetadataList{}, list()
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(len(events), false)
			for _, e := range events {
				w.Action(e.Type, e.Object)
			}
			return w, nil
		},
	}
	return i.tracking(i.track(valvesGVR, valveGVK), lw)
}

func TestListErrorsAreReportedAfterTheGracePeriodAndClearedByAList(t *testing.T) {
	i := NewListWatches(nil)
	failing := errors.New("conversion webhook unavailable")
	listErr := failing
	lw := newTracked(i, func() error { return listErr })
	now := time.Now()
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err == nil {
		t.Fatal("the list should fail")
	}
	if _, f := i.Failing(valveGVK, now); f {
		t.Fatal("a failure is not reported before the grace period")
	}
	if err, f := i.Failing(valveGVK, now.Add(failureGrace+time.Second)); !f || !errors.Is(err, failing) {
		t.Fatalf("after the grace period: %v %t, want the list error", err, f)
	}
	listErr = nil
	_, _ = lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if _, f := i.Failing(valveGVK, now.Add(failureGrace+time.Second)); f {
		t.Fatal("a successful list clears the failure")
	}
}

// A streaming list reports its failure inside the stream: its error event
// counts, and only the end of its initial events clears it.
func TestStreamingListErrorsCountUntilTheInitialEventsEnd(t *testing.T) {
	i := NewListWatches(nil)
	errEvent := watch.Event{Type: watch.Error, Object: &metav1.Status{Code: 500, Message: "corrupt object"}}
	bookmark := &metav1.PartialObjectMetadata{}
	lw := newTracked(i, func() error { return nil }, errEvent, watch.Event{Type: watch.Bookmark, Object: bookmark})
	yes := true
	drain := func() {
		w, _ := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: &yes})
		for range 2 {
			<-w.ResultChan()
		}
		w.Stop()
	}
	drain()
	later := time.Now().Add(failureGrace + time.Second)
	if _, f := i.Failing(valveGVK, later); !f {
		t.Fatal("an error event of a streaming list must count, and a plain bookmark must not clear it")
	}
	bookmark.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	drain()
	if _, f := i.Failing(valveGVK, later); f {
		t.Fatal("the end of the initial events clears the failure")
	}
}

// After a streaming list's initial events, its watch goes on as a plain
// one: its events prove the resource can be watched (a plain watch that
// could not be opened to carry it on is not a failure of the resource).
func TestEventsAfterTheInitialEventsClearAFailure(t *testing.T) {
	i := NewListWatches(nil)
	end := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	source := watch.NewFake()
	lw := i.tracking(i.track(valvesGVR, valveGVK), &toolscache.ListWatch{
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return source, nil },
	})
	yes := true
	w, _ := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: &yes})
	defer w.Stop()
	go source.Action(watch.Bookmark, end)
	<-w.ResultChan()
	transportGet(i, answer{http.StatusInternalServerError}, "https://example.com/apis/example.com/v2/valves?watch=true&resourceVersion=5")
	later := time.Now().Add(failureGrace + time.Second)
	if _, f := i.Failing(valveGVK, later); !f {
		t.Fatal("a failed watch request must count")
	}
	go source.Modify(&metav1.PartialObjectMetadata{})
	<-w.ResultChan()
	if _, f := i.Failing(valveGVK, later); f {
		t.Fatal("an event after the initial events clears the failure")
	}
}

// transportGet sends a GET of url through i's transport over rt.
func transportGet(i *ListWatches, rt http.RoundTripper, url string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	_, _ = i.Transport(rt).RoundTrip(req)
}

type answer struct{ code int }

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.code, Status: http.StatusText(a.code), Body: http.NoBody}, nil
}

// Requests the client retries on its own are seen by the transport.
func TestTransportRecordsFailedListAndWatchRequests(t *testing.T) {
	i := NewListWatches(nil)
	newTracked(i, func() error { return nil })
	get := func(rt http.RoundTripper, url string) { transportGet(i, rt, url) }
	later := time.Now().Add(failureGrace + time.Second)
	get(answer{http.StatusOK}, "https://h/apis/example.com/v2/namespaces/ns/valves/v") // an object: ignored
	get(answer{http.StatusTooManyRequests}, "https://h/apis/other.com/v1/things")      // not watched: ignored
	if _, f := i.Failing(valveGVK, later); f {
		t.Fatal("requests of other resources or objects must not count")
	}
	get(answer{http.StatusTooManyRequests}, "https://h/apis/example.com/v2/valves?watch=true&sendInitialEvents=true")
	if _, f := i.Failing(valveGVK, later); !f {
		t.Fatal("a refused watch of the resource must count")
	}
	get(answer{http.StatusOK}, "https://h/apis/example.com/v2/valves?watch=true")
	if _, f := i.Failing(valveGVK, later); !f {
		t.Fatal("an opened watch proves nothing yet")
	}
	get(answer{http.StatusOK}, "https://h/apis/example.com/v2/valves?limit=500")
	if _, f := i.Failing(valveGVK, later); f {
		t.Fatal("a successful list clears the failure")
	}
}

// unreachable fails every request with err, as a transport does when the
// API server is down or drops the connection.
type unreachable struct{ err error }

func (u unreachable) RoundTrip(*http.Request) (*http.Response, error) { return nil, u.err }

// An API server that could not be reached and accepts the informer's plain
// watch again has recovered, even if the resource then stays idle (no
// event, not even a bookmark, for minutes); a failure it answered itself
// is not cleared by that.
func TestAWatchAcceptedAfterTheAPIServerWasUnreachableClearsTheFailure(t *testing.T) {
	for name, err := range map[string]error{
		"refused":  &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		"cut":      io.ErrUnexpectedEOF,
		"reset":    &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		"timedOut": context.DeadlineExceeded, // no answer in time
	} {
		t.Run(name, func(t *testing.T) {
			i := NewListWatches(nil)
			newTracked(i, func() error { return nil })
			get := func(rt http.RoundTripper, url string) { transportGet(i, rt, url) }
			later := time.Now().Add(failureGrace + time.Second)
			const plainWatch = "https://h/apis/example.com/v2/valves?watch=true&resourceVersion=340&allowWatchBookmarks=true"
			get(unreachable{err}, plainWatch)
			if _, f := i.Failing(valveGVK, later); !f {
				t.Fatal("a watch that cannot reach the API server must count")
			}
			get(answer{http.StatusOK}, "https://h/apis/example.com/v2/valves?watch=true&sendInitialEvents=true")
			if _, f := i.Failing(valveGVK, later); !f {
				t.Fatal("an opened streaming list proves nothing before its initial events end")
			}
			get(answer{http.StatusOK}, plainWatch)
			if _, f := i.Failing(valveGVK, later); f {
				t.Fatal("a plain watch accepted by the API server again clears a failure to reach it")
			}
		})
	}
}
