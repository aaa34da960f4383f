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

package fleet

import (
	"net/http"
	"sync"
	"time"
)

// DefaultProbeInterval is how long a cluster's API server, once it has
// answered a probe, is taken to answer without another, unless one of the
// engine's own requests fails to reach it meanwhile.
const DefaultProbeInterval = time.Minute

// reachability tells whether a cluster's API server answers without asking
// it every few seconds: the engine's own requests pass through wrap, and the
// first one that cannot reach the server (a transport error, or a gateway's
// 502, 503 or 504) after a successful probe reports it (onFailure), so that
// the cluster's status probes again at once. An idle
// cluster whose server stopped is noticed as soon as its watches try to
// reopen (a second or so); one whose server hangs with every connection
// open, by the next periodic probe.
//
// Concurrency: mu guards the fields below it; onFailure is called without
// it held.
type reachability struct {
	onFailure func()

	mu       sync.Mutex
	probedAt time.Time // when the last probe began
	probeErr error     // what it found
	failedAt time.Time // when a request last failed to reach the server
}

// wrap passes the engine's requests through, noting those that do not reach
// the server (a transport error, the request's own context still live).
func (r *reachability) wrap(rt http.RoundTripper) http.RoundTripper {
	return &noticing{rt: rt, r: r}
}

// noticing is the round tripper wrap returns.
type noticing struct {
	rt http.RoundTripper
	r  *reachability
}

func (n *noticing) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(req)
	switch {
	case err != nil && req.Context().Err() == nil:
		n.r.failed(time.Now())
	case err == nil && proxyFailure(resp.StatusCode):
		// A proxy or load balancer in front of the server answers for a
		// server that does not.
		n.r.failed(time.Now())
	}
	return resp, err
}

// proxyFailure reports whether a status is what a gateway answers for a
// server it cannot reach (the probe then tells whether the server itself
// answers: a kube-apiserver answers 503 for an aggregated API whose backend
// is down).
func proxyFailure(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// WrappedRoundTripper lets client-go reach the transport underneath (to
// close its idle connections).
func (n *noticing) WrappedRoundTripper() http.RoundTripper { return n.rt }

// failed notes a request that did not reach the server; the first since a
// probe that found the server answering is reported. (After a probe that
// did not, the status is probed again at each refresh anyway: reporting
// every failed request then would probe as often as the engine's requests
// fail.)
func (r *reachability) failed(now time.Time) {
	r.mu.Lock()
	first := r.probeErr == nil && !r.failedAt.After(r.probedAt)
	r.failedAt = now
	r.mu.Unlock()
	if first && r.onFailure != nil {
		r.onFailure()
	}
}

// fresh reports whether the last probe found the server answering, begun
// less than maxAge ago, and no request has failed to reach it since.
func (r *reachability) fresh(now time.Time, maxAge time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.probedAt.IsZero() && r.probeErr == nil && now.Sub(r.probedAt) < maxAge && !r.failedAt.After(r.probedAt)
}

// probed records a probe begun at began that found err: a request that
// failed while it ran is not taken as answered by it.
func (r *reachability) probed(began time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probedAt, r.probeErr = began, err
}
