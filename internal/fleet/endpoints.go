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
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	ctrl "sigs.k8s.io/controller-runtime"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/access"
	"github.com/ownergc/ownergc/internal/debug"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/explain/serve"
)

// Endpoint is one of the endpoints the fleet serves about its members on
// the host's metrics server, each request naming its member with the
// cluster query parameter.
type Endpoint struct {
	// Path is where it is served (/explain, /debug/graph).
	Path string
	// Subresource is the subresource of clustergcstatuses (group
	// ownergc.io) whose get, on the member's ClusterGCStatus in the
	// cluster namespace, lets a host identity ask the endpoint about
	// everything of that member.
	Subresource string
	// ByObject: the endpoint authorizes a member's caller by the objects
	// it asks about (/explain); otherwise the caller must be allowed get on
	// the non-resource URL Path at the member, as in the single-cluster
	// mode (/debug/graph).
	ByObject bool
	// Handler returns the handler of an engine: it is called with the
	// caller in the request's context (request.WithUser) and what
	// authorizes the caller (serve.WithAuthorizer).
	Handler func(*engine.Engine) http.Handler
}

// Endpoints are what the fleet serves about its members: /explain (a
// member's caller authorized per object) and /debug/graph (a member's
// caller allowed the URL at the member).
var Endpoints = []Endpoint{
	{Path: explain.Path, Subresource: ExplainSubresource, ByObject: true, Handler: (*engine.Engine).ExplainHandler},
	{Path: debug.GraphPath, Subresource: GraphSubresource, Handler: (*engine.Engine).GraphHandler},
}

// Subresources of clustergcstatuses that grant a host identity /explain and
// /debug/graph about the member named (docs/security.md).
const (
	ExplainSubresource = "explain"
	GraphSubresource   = "graph"
)

// ClusterParameter is the query parameter that names the member.
const ClusterParameter = "cluster"

// Handler serves ep about the members this replica collects. Its caller is
// one of two:
//
//   - a host identity (host authenticated its token; the host's metrics
//     filter, access.FleetFilter, put it in the request's context), allowed
//     by the host get on the subresource ep.Subresource of the member's
//     ClusterGCStatus (in namespace, named after the member): it is
//     answered about everything of the member. Its token is never sent to
//     the member.
//   - a caller of the member: a token the host does not know is reviewed
//     at the member (TokenReview, then SubjectAccessReview, by the
//     member's engine, engine.MemberAccess), and the member's RBAC decides
//     what it is told, as in the single-cluster mode.
//
// A member that this replica does not collect (or that does not exist) is
// 404 to a host identity allowed to ask about it, 401 to everyone else,
// like a token the member does not know: nobody learns which members exist
// without being allowed to ask about them.
func (f *Fleet) Handler(ep Endpoint, host func() *access.Access, namespace string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := ctrl.Log.WithName("fleet-endpoints")
		if r.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		name := r.URL.Query().Get(ClusterParameter)
		if name == "" {
			http.Error(w, "give the member cluster: ?"+ClusterParameter+"=<name of its kubeconfig Secret>", http.StatusBadRequest)
			return
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			http.Error(w, "the "+ClusterParameter+" parameter is not a member's name (a kubeconfig Secret's): "+strings.Join(errs, "; "), http.StatusBadRequest)
			return
		}
		if u, ok := request.UserFrom(r.Context()); ok {
			h := host()
			if h == nil {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			allowed, err := h.Allowed(r.Context(), authorizer.AttributesRecord{
				User: u, Verb: "get", ResourceRequest: true,
				APIGroup: ownergcv1alpha1.GroupVersion.Group, APIVersion: ownergcv1alpha1.GroupVersion.Version,
				Resource: "clustergcstatuses", Subresource: ep.Subresource, Namespace: namespace, Name: name,
			})
			switch {
			case err != nil:
				log.Error(err, "Authorization failed", "user", u.GetName(), "cluster", name)
				http.Error(w, "Authorization failed", http.StatusInternalServerError)
				return
			case !allowed:
				http.Error(w, "Forbidden: you may not get clustergcstatuses/"+ep.Subresource+" of this member on the host", http.StatusForbidden)
				return
			}
			eng := f.Engine(name)
			if eng == nil {
				http.Error(w, "Not found: this replica does not collect the member (it may be another replica's, or not engaged)", http.StatusNotFound)
				return
			}
			ep.Handler(eng).ServeHTTP(w, r.WithContext(serve.WithAuthorizer(r.Context(), grantAll{})))
			return
		}
		eng := f.Engine(name)
		if eng == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		ma, err := eng.MemberAccess()
		if err != nil {
			log.Error(err, "Unable to review access at the member", "cluster", name)
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		u, ok, err := ma.Authenticate(r)
		switch {
		case err != nil:
			log.Error(err, "Authentication at the member failed", "cluster", name)
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		case !ok:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if !ep.ByObject {
			allowed, err := ma.Allowed(r.Context(), authorizer.AttributesRecord{User: u, Verb: "get", Path: ep.Path})
			switch {
			case err != nil:
				log.Error(err, "Authorization at the member failed", "user", u.GetName(), "cluster", name)
				http.Error(w, "Authorization failed", http.StatusInternalServerError)
				return
			case !allowed:
				http.Error(w, "Authorization denied for user "+u.GetName(), http.StatusForbidden)
				return
			}
		}
		ctx := serve.WithAuthorizer(request.WithUser(r.Context(), u), ma)
		ep.Handler(eng).ServeHTTP(w, r.WithContext(ctx))
	})
}

// grantAll authorizes a host identity that was granted a member: it may be
// told of every object of the member.
type grantAll struct{}

func (grantAll) CanGet(context.Context, user.Info, schema.GroupVersionResource, string, string) (bool, error) {
	return true, nil
}
