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

// Package serve serves explanations (package explain) over HTTP, authorized
// per object with the caller's own RBAC, at a bounded cost per request:
// handler.go serves the requests, resolve.go maps a request's query to the
// object it asks about (from discovery and the graph).
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/explain"
)

// Explainer explains objects.
type Explainer interface {
	// Resolve maps a request's query (group, version, resource, namespace
	// and name, or uid) to its target; explain.ErrNotFound when its uid
	// names nothing the collector knows. A name or namespace that cannot
	// be one path segment is an *explain.InvalidNameError. Resolver
	// implements it.
	Resolve(q url.Values) (explain.Target, error)
	// Explain explains the target, within limits' reads. visible says
	// whether a related object (an owner, a dependent) may be named to
	// the caller; the others are counted.
	Explain(ctx context.Context, t explain.Target, limits explain.Limits, visible explain.Visibility) explain.Explanation
}

// Authorizer decides what a caller may read.
type Authorizer interface {
	CanGet(ctx context.Context, u user.Info, gvr schema.GroupVersionResource, namespace, name string) (bool, error)
}

// authorizerKey is the context key of WithAuthorizer.
type authorizerKey struct{}

// WithAuthorizer returns ctx carrying a, the authorizer of the request's
// caller (a fleet's: the member's, or one that allows a host identity
// everything of the member it was granted).
func WithAuthorizer(ctx context.Context, a Authorizer) context.Context {
	return context.WithValue(ctx, authorizerKey{}, a)
}

// AuthorizerFrom returns the authorizer WithAuthorizer put in r's context,
// nil if none.
func AuthorizerFrom(r *http.Request) Authorizer {
	a, _ := r.Context().Value(authorizerKey{}).(Authorizer)
	return a
}

// Options configure the handler.
type Options struct {
	// Limits bound each request (default explain.DefaultLimits; a zero
	// field takes its default).
	Limits explain.Limits
	// Timeout bounds the work of one request (default 30 seconds).
	Timeout time.Duration
	// Admitted, when set, is called with each request once it holds one
	// of the Limits.InFlight places, before anything is resolved or
	// reviewed: a test hook that holds requests in flight.
	Admitted func(*http.Request)
}

// DefaultTimeout is the default Options.Timeout.
const DefaultTimeout = 30 * time.Second

// unknownUID is the resource of the review that a request for an unknown
// UID makes, in place of the one an object's UID would have cost: no
// object is of it, and its answer is not used.
var unknownUID = schema.GroupVersionResource{Group: "ownergc.io", Version: "v1alpha1", Resource: "unknown-uids"}

const forbidden = "Forbidden: the object is unknown, or you may not get it"

// Handler serves explanations. The caller (authenticated, in the request's
// context) must be allowed to get the object; owners and dependents it may
// not get are counted, not named. A caller that may not get the object
// learns nothing, not even whether it exists: the answer is 403 whatever
// the object, and asking by a UID nobody has costs the same review as
// asking by the UID of an object the caller may not get.
//
// Each request is bounded: a name or namespace that cannot be one path
// segment is refused (400) before any other work; at most Limits.InFlight
// requests are served at once (429 beyond, with Retry-After); each makes
// at most Limits.Reviews SubjectAccessReviews (the related objects beyond
// them are counted as hidden and reported not checked) and at most
// Limits.Reads live reads (Explainer.Explain).
//
// Concurrency: the handler is safe for concurrent use; the in-flight places
// are a buffered channel, and each request's review budget is its own.
//
// authz returns what authorizes a request: the manager's Access in the
// single-cluster mode, the one a fleet put in the request's context
// (AuthorizerFrom) for a member's engine; nil answers 401.
func Handler(ex Explainer, authz func(*http.Request) Authorizer, opts Options) http.Handler {
	limits := withDefaults(opts.Limits)
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	inFlight := make(chan struct{}, limits.InFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := ctrl.Log.WithName("explain")
		if r.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		u, ok := request.UserFrom(r.Context())
		a := authz(r)
		if !ok || a == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		q := r.URL.Query()
		if err := explain.ValidateQuery(q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case inFlight <- struct{}{}:
			defer func() { <-inFlight }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("Too many requests: ownergc explains %d objects at a time; try again shortly", limits.InFlight), http.StatusTooManyRequests)
			return
		}
		if opts.Admitted != nil {
			opts.Admitted(r)
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()

		t, err := ex.Resolve(q)
		var allowed bool
		switch {
		case errors.Is(err, explain.ErrNotFound):
			// The same review as for a UID the caller may not read, whose
			// answer changes nothing: an unknown UID and a forbidden one
			// cost the same and are answered alike.
			_, err = a.CanGet(ctx, u, unknownUID, "", q.Get("uid"))
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		default:
			allowed, err = a.CanGet(ctx, u, t.Resource, t.Namespace, t.Name)
		}
		if err != nil {
			log.Error(err, "Authorization failed", "user", u.GetName())
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			http.Error(w, forbidden, http.StatusForbidden)
			return
		}
		reviews := &reviewer{ctx: ctx, a: a, u: u, left: limits.Reviews - 1}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ex.Explain(ctx, t, limits, reviews.visible))
	})
}

// withDefaults fills the zero fields of l from explain.DefaultLimits.
func withDefaults(l explain.Limits) explain.Limits {
	d := explain.DefaultLimits
	if l.InFlight <= 0 {
		l.InFlight = d.InFlight
	}
	if l.Reviews <= 0 {
		l.Reviews = d.Reviews
	}
	if l.Reads <= 0 {
		l.Reads = d.Reads
	}
	return l
}

// reviewer reviews the caller's access to the related objects of one
// request, at most left times.
//
// Concurrency: one request's; not safe for concurrent use.
type reviewer struct {
	ctx  context.Context
	a    Authorizer
	u    user.Info
	left int
}

// visible is the request's explain.Visibility. An object whose resource
// is unknown or whose name cannot be one path segment is denied without a
// review: RBAC would judge the name as a string, not the object it does
// not name.
func (rv *reviewer) visible(o explain.Object) explain.Access {
	gvr, err := parseResource(o.Resource)
	if err != nil || explain.ValidatePath(o.Namespace, o.Name) != nil {
		return explain.Denied
	}
	if rv.left <= 0 {
		return explain.NotReviewed
	}
	rv.left--
	ok, err := rv.a.CanGet(rv.ctx, rv.u, gvr, o.Namespace, o.Name)
	if err != nil || !ok {
		return explain.Denied
	}
	return explain.Allowed
}

// parseResource parses group/version/resource (version/resource for the
// core group).
func parseResource(s string) (schema.GroupVersionResource, error) {
	var gvr schema.GroupVersionResource
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		gvr.Version, gvr.Resource = parts[0], parts[1]
	case 3:
		gvr.Group, gvr.Version, gvr.Resource = parts[0], parts[1], parts[2]
	default:
		return gvr, fmt.Errorf("resource %q is not group/version/resource", s)
	}
	return gvr, nil
}
