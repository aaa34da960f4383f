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
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/discovery"
)

var (
	valvesGVR = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "valves"}
	valveGVK  = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Valve"}
	valves    = discovery.Resource{GroupVersionResource: valvesGVR, Kind: "Valve", Namespaced: true}
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
	i.Recorder(valves)
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
			i.Recorder(valves)
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
