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
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// A cluster is probed again once a minute, or as soon as one of its
// engine's requests cannot reach it: step by step, what the engine's
// requests and the probes do to what Probe would answer without asking.
func TestReachabilityProbesOnTheFirstFailedRequestAndOtherwiseOnceAMinute(t *testing.T) {
	reported := 0
	r := &reachability{onFailure: func() { reported++ }}
	t0 := time.Now()
	down := errors.New("connection refused")
	steps := []struct {
		name      string
		do        func()
		at        time.Duration // when fresh is asked
		fresh     bool
		reportedN int
	}{
		{"never probed", func() {}, 0, false, 0},
		{"probed, answering", func() { r.probed(t0, nil) }, time.Second, true, 0},
		{"59 s later, no request failed", func() {}, 59 * time.Second, true, 0},
		{"a minute later", func() {}, time.Minute, false, 0},
		{"a request fails to reach it", func() { r.failed(t0.Add(2 * time.Second)) }, 3 * time.Second, false, 1},
		{"another fails: reported once", func() { r.failed(t0.Add(3 * time.Second)) }, 4 * time.Second, false, 1},
		{"probed, not answering", func() { r.probed(t0.Add(5*time.Second), down) }, 6 * time.Second, false, 1},
		// The status probes a cluster that did not answer at each refresh:
		// its failing requests are not reported one by one.
		{"a request fails after that probe: not reported", func() { r.failed(t0.Add(7 * time.Second)) }, 8 * time.Second, false, 1},
		{"probed, answering again", func() { r.probed(t0.Add(9*time.Second), nil) }, 10 * time.Second, true, 1},
		{"a request failed while a probe ran", func() { r.failed(t0.Add(12 * time.Second)); r.probed(t0.Add(11*time.Second), nil) }, 13 * time.Second, false, 2},
	}
	for _, s := range steps {
		s.do()
		if got := r.fresh(t0.Add(s.at), time.Minute); got != s.fresh {
			t.Errorf("%s: answering without a probe: %v, want %v", s.name, got, s.fresh)
		}
		if reported != s.reportedN {
			t.Errorf("%s: %d failures reported, want %d", s.name, reported, s.reportedN)
		}
	}
}

type fakeTransport struct {
	err  error
	code int
}

func (f fakeTransport) RoundTrip(*http.Request) (*http.Response, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &http.Response{StatusCode: f.code, Body: http.NoBody}, nil
}

// Only a request that does not reach the server counts: a transport error or
// a gateway's answer, not the server's own (an error status included), and
// not a request its caller cancelled.
func TestReachabilityCountsOnlyRequestsThatDoNotReachTheServer(t *testing.T) {
	for name, tc := range map[string]struct {
		err       error
		code      int
		cancelled bool
		want      bool
	}{
		"an answer, 200":  {nil, http.StatusOK, false, false},
		"an answer, 500":  {nil, http.StatusInternalServerError, false, false},
		"an answer, 429":  {nil, http.StatusTooManyRequests, false, false},
		"a gateway's 502": {nil, http.StatusBadGateway, false, true},
		"a gateway's 503 (or an aggregated API's)": {nil, http.StatusServiceUnavailable, false, true},
		"a gateway's 504":                          {nil, http.StatusGatewayTimeout, false, true},
		"connection refused":                       {errors.New("dial tcp: connection refused"), 0, false, true},
		"cancelled by its caller":                  {context.Canceled, 0, true, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &reachability{}
			r.probed(time.Now().Add(-time.Second), nil)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancelled {
				cancel()
			}
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://member.example/api", nil)
			resp, _ := r.wrap(fakeTransport{tc.err, tc.code}).RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			if failed := !r.fresh(time.Now(), time.Minute); failed != tc.want {
				t.Errorf("taken as not reaching the server: %v, want %v", failed, tc.want)
			}
		})
	}
}
