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

package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/ownergc/ownergc/internal/explain"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// fakeExplainer resolves names of configmaps and the UID "known", and
// explains by asking visible about related objects.
type fakeExplainer struct {
	mu       sync.Mutex
	resolved int
	// related are the objects Explain asks visible about; answers, what
	// it answered.
	related []explain.Object
	answers []explain.Access
	limits  explain.Limits
}

func (f *fakeExplainer) Resolve(q url.Values) (explain.Target, error) {
	f.mu.Lock()
	f.resolved++
	f.mu.Unlock()
	if err := explain.ValidateQuery(q); err != nil {
		return explain.Target{}, err
	}
	switch {
	case q.Get("uid") == "known":
		return explain.Target{Resource: configMaps, Namespaced: true, Namespace: "theirs", Name: "private"}, nil
	case q.Has("uid"):
		return explain.Target{}, explain.ErrNotFound
	}
	return explain.Target{Resource: configMaps, Namespaced: true, Namespace: q.Get("namespace"), Name: q.Get("name")}, nil
}

func (f *fakeExplainer) Explain(_ context.Context, t explain.Target, limits explain.Limits, visible explain.Visibility) explain.Explanation {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits = limits
	f.answers = nil
	for _, o := range f.related {
		f.answers = append(f.answers, visible(o))
	}
	return explain.Explanation{Object: explain.Object{Name: t.Name}}
}

// fakeAuthorizer allows what allow says and records each review.
type fakeAuthorizer struct {
	mu      sync.Mutex
	reviews []string
	allow   func(gvr schema.GroupVersionResource, namespace, name string) bool
}

func (a *fakeAuthorizer) CanGet(_ context.Context, _ user.Info, gvr schema.GroupVersionResource, namespace, name string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reviews = append(a.reviews, gvr.Resource+" "+namespace+"/"+name)
	return a.allow != nil && a.allow(gvr, namespace, name), nil
}

func (a *fakeAuthorizer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reviews)
}

// serve sends GET /explain?query as an authenticated caller.
func serve(h http.Handler, query string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, explain.Path+"?"+query, nil)
	r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: "caller"}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func newHandler(ex Explainer, a *fakeAuthorizer, opts Options) http.Handler {
	return Handler(ex, func(*http.Request) Authorizer { return a }, opts)
}

// A name or namespace that cannot be one path segment is refused with 400
// before anything is resolved or reviewed: the review would judge the
// name as a string, the read would follow the path it makes.
func TestNamesThatAreNotOnePathSegmentAreRefusedBeforeAnyWork(t *testing.T) {
	long := strings.Repeat("a", explain.MaxNameLength+1)
	for _, query := range []string{
		"version=v1&resource=configmaps&namespace=mine&name=" + url.QueryEscape("../../other/secrets/x"),
		"version=v1&resource=configmaps&namespace=mine&name=" + url.QueryEscape("x/../../../other/secrets/x"),
		"version=v1&resource=configmaps&namespace=mine&name=..",
		"version=v1&resource=configmaps&namespace=mine&name=.",
		"version=v1&resource=configmaps&namespace=mine&name=a%2Fb",   // decodes to a/b
		"version=v1&resource=configmaps&namespace=mine&name=x%252Fy", // decodes to x%2Fy
		"version=v1&resource=configmaps&namespace=mine&name=",
		"version=v1&resource=configmaps&namespace=mine",
		"version=v1&resource=configmaps&namespace=mine&name=" + long,
		"version=v1&resource=configmaps&namespace=..&name=x",
		"version=v1&resource=configmaps&namespace=" + url.QueryEscape("mine/../other") + "&name=x",
		"version=v1&resource=configmaps&namespace=other%2Fsecrets&name=x",
		"version=v1&resource=configmaps&namespace=Mine&name=x",
		"version=v1&resource=configmaps&namespace=" + strings.Repeat("n", 64) + "&name=x",
		"uid=",
		"uid=" + url.QueryEscape("a/../b"),
		"uid=" + strings.Repeat("u", explain.MaxUIDLength+1),
	} {
		ex, a := &fakeExplainer{}, &fakeAuthorizer{allow: func(schema.GroupVersionResource, string, string) bool { return true }}
		w := serve(newHandler(ex, a, Options{}), query)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%.120s: %d %q, want 400", query, w.Code, w.Body.String())
		}
		if ex.resolved != 0 || a.count() != 0 {
			t.Errorf("%.120s: resolved %d times and reviewed %d times before the answer, want neither", query, ex.resolved, a.count())
		}
	}
}

// Asking by a UID nobody has and by the UID of an object the caller may
// not get: the same answer, after the same work (one review).
func TestUnknownAndForbiddenUIDsAreAnsweredAlike(t *testing.T) {
	var codes []int
	var bodies []string
	for _, uid := range []string{"known", "unknown"} {
		a := &fakeAuthorizer{}
		w := serve(newHandler(&fakeExplainer{}, a, Options{}), "uid="+uid)
		codes, bodies = append(codes, w.Code), append(bodies, w.Body.String())
		if a.count() != 1 {
			t.Errorf("uid %s: %d reviews (%v), want 1", uid, a.count(), a.reviews)
		}
	}
	if codes[0] != http.StatusForbidden || codes[0] != codes[1] || bodies[0] != bodies[1] {
		t.Errorf("forbidden UID: %d %q; unknown UID: %d %q; want the same 403", codes[0], bodies[0], codes[1], bodies[1])
	}
}

// Beyond InFlight requests at once, the answer is 429 with Retry-After;
// the place is given back when a request ends.
func TestRequestsBeyondTheConcurrencyLimitAreRefused(t *testing.T) {
	admitted, release := make(chan struct{}), make(chan struct{})
	a := &fakeAuthorizer{allow: func(schema.GroupVersionResource, string, string) bool { return true }}
	first := true
	h := newHandler(&fakeExplainer{}, a, Options{Limits: explain.Limits{InFlight: 1}, Admitted: func(*http.Request) {
		if first {
			first = false
			close(admitted)
			<-release
		}
	}})
	const query = "version=v1&resource=configmaps&namespace=mine&name=x"
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(h, query) }()
	<-admitted
	if w := serve(h, query); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("a request beyond the limit: %d (Retry-After %q) %q, want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	close(release)
	if w := <-done; w.Code != http.StatusOK {
		t.Errorf("the request in flight: %d %q, want 200", w.Code, w.Body.String())
	}
	if w := serve(h, query); w.Code != http.StatusOK {
		t.Errorf("a request once the place is free again: %d %q, want 200", w.Code, w.Body.String())
	}
}

// One request reviews at most Limits.Reviews objects, its own included;
// the related objects beyond are not reviewed (counted, never named), and
// those that cannot be one path segment are denied without a review.
func TestReviewsPerRequestAreBounded(t *testing.T) {
	ex := &fakeExplainer{related: []explain.Object{
		{Resource: "v1/configmaps", Namespace: "mine", Name: "../../other/secrets/x"},
		{Resource: "not a resource", Namespace: "mine", Name: "x"},
	}}
	for i := 0; i < 10; i++ {
		ex.related = append(ex.related, explain.Object{Resource: "v1/configmaps", Namespace: "mine", Name: "dep-" + string(rune('a'+i))})
	}
	a := &fakeAuthorizer{allow: func(schema.GroupVersionResource, string, string) bool { return true }}
	w := serve(newHandler(ex, a, Options{Limits: explain.Limits{Reviews: 4, Reads: 7}}), "version=v1&resource=configmaps&namespace=mine&name=x")
	if w.Code != http.StatusOK {
		t.Fatalf("%d %q", w.Code, w.Body.String())
	}
	if a.count() != 4 {
		t.Errorf("%d reviews (%v), want 4: the object's and three related", a.count(), a.reviews)
	}
	want := []explain.Access{explain.Denied, explain.Denied, explain.Allowed, explain.Allowed, explain.Allowed}
	for range 7 {
		want = append(want, explain.NotReviewed)
	}
	if len(ex.answers) != len(want) {
		t.Fatalf("answers %v, want %v", ex.answers, want)
	}
	for i := range want {
		if ex.answers[i] != want[i] {
			t.Fatalf("answers %v, want %v", ex.answers, want)
		}
	}
	if ex.limits.Reads != 7 || ex.limits.InFlight != explain.DefaultLimits.InFlight {
		t.Errorf("the explainer was given limits %+v, want the tuned reads and the default in-flight", ex.limits)
	}
}
