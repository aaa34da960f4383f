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
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/ownergc/ownergc/internal/discovery"
)

// failureGrace is how long list or watch errors must persist before a
// resource is reported as failed, so that one dropped connection does not
// flap the status.
const failureGrace = 5 * time.Second

// ListWatches builds the monitors' list and watch functions and records
// each one's errors: how a resource that cannot be listed is found.
//
// Concurrency: mu guards errs and kinds. Each monitor's errors live in a
// listErrors of its own, which its list and watch functions write from the
// reflector's goroutine: a monitor that was replaced or stopped can only
// write to its own, forgotten, record.
type ListWatches struct {
	mu   sync.Mutex
	errs map[schema.GroupVersionKind]*listErrors
	// kinds maps the resources of watched kinds to those kinds, for
	// Transport.
	kinds map[schema.GroupVersionResource]schema.GroupVersionKind
	// changed is called when a resource starts or stops failing.
	changed func()
}

// NewListWatches returns a ListWatches; changed, when not nil, is called
// (without locks held) when a resource may have started or stopped failing.
func NewListWatches(changed func()) *ListWatches {
	if changed == nil {
		changed = func() {}
	}
	return &ListWatches{errs: make(map[schema.GroupVersionKind]*listErrors),
		kinds: make(map[schema.GroupVersionResource]schema.GroupVersionKind), changed: changed}
}

// listErrors is the error state of one monitor's list and watch.
type listErrors struct {
	// failing is set while err is; it keeps the success path lock-free.
	failing atomic.Bool
	mu      sync.Mutex
	err     error
	since   time.Time
	timer   *time.Timer
}

// unreachable reports whether the recorded failure is that the API server
// could not be reached or dropped the connection (a refused, reset, timed
// out or cut connection; not an answer).
func (st *listErrors) unreachable() bool {
	if !st.failing.Load() {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return isUnreachable(st.err)
}

// isUnreachable: err is that the API server could not be reached or
// dropped the connection (a refused, reset, timed out or cut connection;
// not an answer).
func isUnreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || utilnet.IsProbableEOF(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsConnectionRefused(err)
}

// Recorder starts a new error record for the monitor of resource r
// (replacing the record of an earlier monitor of its kind), registers r for
// Transport, and returns what the monitor records its errors with (nil: it
// lists and watches).
func (i *ListWatches) Recorder(r discovery.Resource) func(error) {
	st := i.track(r.GroupVersionResource, r.GVK())
	return func(err error) { i.record(st, err) }
}

// Failing returns the error of the monitor of gvk if it has failed to list
// or watch for longer than the grace period.
func (i *ListWatches) Failing(gvk schema.GroupVersionKind, now time.Time) (error, bool) {
	i.mu.Lock()
	st, ok := i.errs[gvk]
	i.mu.Unlock()
	if !ok || !st.failing.Load() {
		return nil, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil || now.Sub(st.since) < failureGrace {
		return nil, false
	}
	return st.err, true
}

// track starts a new error record for the monitor of gvk, which lists and
// watches gvr.
func (i *ListWatches) track(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *listErrors {
	st := &listErrors{}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.errs[gvk] = st
	i.kinds[gvr] = gvk
	return st
}

// Forget drops the error record of gvk's monitor, once it has stopped.
func (i *ListWatches) Forget(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) {
	i.mu.Lock()
	st, ok := i.errs[gvk]
	delete(i.errs, gvk)
	delete(i.kinds, gvr)
	i.mu.Unlock()
	if ok {
		st.mu.Lock()
		if st.timer != nil {
			st.timer.Stop()
		}
		st.mu.Unlock()
	}
}

// record sets the monitor's error state; err nil means it works.
func (i *ListWatches) record(st *listErrors, err error) {
	if err == nil && !st.failing.Load() {
		return
	}
	st.mu.Lock()
	changed := false
	switch {
	case err == nil:
		st.err = nil
		st.failing.Store(false)
		if st.timer != nil {
			st.timer.Stop()
			st.timer = nil
		}
		changed = time.Since(st.since) >= failureGrace
	case st.err == nil:
		st.err, st.since = err, time.Now()
		st.failing.Store(true)
		// Reported once the grace period has passed.
		st.timer = time.AfterFunc(failureGrace, i.changed)
	default:
		st.err = err
	}
	st.mu.Unlock()
	if changed {
		i.changed()
	}
}

// initialEventsEnd reports whether a bookmark marks the end of a streaming
// list's initial events.
func initialEventsEnd(obj runtime.Object) bool {
	m, ok := obj.(metav1.Object)
	return ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == trueValue
}

// Transport wraps the monitors' HTTP transport (rest.Config.Wrap) so that
// every list or watch request of a watched resource that fails is recorded
// against that resource's monitor, and every list that succeeds clears it:
// the client retries some failures on its own (a 429 or 5xx with a
// Retry-After, up to ten times, for minutes) before the reflector hears of
// them, and a resource the API server keeps answering that way would
// otherwise look like one that is slowly listing.
func (i *ListWatches) Transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if req.Method != http.MethodGet {
			return resp, err
		}
		gvr, ok := collectionOf(req.URL.Path)
		if !ok {
			return resp, err
		}
		i.mu.Lock()
		gvk, watched := i.kinds[gvr]
		st := i.errs[gvk]
		i.mu.Unlock()
		if !watched || st == nil {
			return resp, err
		}
		q := req.URL.Query()
		watching := q.Get("watch") == trueValue || q.Get("watch") == "1"
		switch {
		case err != nil:
			i.record(st, err)
		case resp.StatusCode >= 400:
			i.record(st, &httpError{status: resp.Status, path: req.URL.Path})
		case !watching:
			i.record(st, nil)
		case q.Get("sendInitialEvents") != trueValue && st.unreachable():
			// The API server could not be reached, and now accepts a watch
			// from where the reflector left off: that is proof enough (an
			// idle resource may see no event, not even a bookmark, for
			// minutes). Failures the API server answered need more.
			i.record(st, nil)
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// httpError is a failed list or watch request.
type httpError struct{ status, path string }

func (e *httpError) Error() string { return "GET " + e.path + ": " + e.status }

// collectionOf returns the resource of a cluster-wide collection path:
// /api/v1/<resource> or /apis/<group>/<version>/<resource>.
func collectionOf(path string) (schema.GroupVersionResource, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "api":
		return schema.GroupVersionResource{Version: parts[1], Resource: parts[2]}, true
	case len(parts) == 4 && parts[0] == "apis":
		return schema.GroupVersionResource{Group: parts[1], Version: parts[2], Resource: parts[3]}, true
	}
	return schema.GroupVersionResource{}, false
}

// watchError is an error event of a watch stream.
type watchError struct{ msg string }

func (e *watchError) Error() string { return e.msg }

func apiStatusError(obj runtime.Object) error {
	if s, ok := obj.(*metav1.Status); ok {
		if s.Reason == metav1.StatusReasonExpired || s.Code == 410 {
			// A compacted resourceVersion: the reflector relists, which is
			// not a failure of the resource.
			return nil
		}
		return &watchError{msg: s.Message}
	}
	return &watchError{msg: "watch reported an error"}
}
