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

// Package access authenticates and authorizes the requests to the manager's
// metrics server, against the API server (TokenReview, SubjectAccessReview),
// as controller-runtime's filters.WithAuthenticationAndAuthorization does —
// and lets some paths authorize each request by the object it asks about,
// with the caller's own RBAC, instead of by a URL grant.
package access

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/request"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Access authenticates callers and authorizes what they ask. Answers are
// cached as the API server's own delegating authenticator and authorizer
// cache them: tokens for a minute, allowed requests for five minutes,
// denied ones for thirty seconds.
type Access struct {
	authn authenticator.Request
	authz authorizer.Authorizer
}

// backoff is the retry backoff of the review requests (the API server's own
// default for its webhooks).
var backoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// New returns an Access that reviews tokens and access through the API
// server of cfg.
func New(cfg *rest.Config, httpClient *http.Client) (*Access, error) {
	authnClient, err := authenticationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authzClient, err := authorizationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 time.Minute,
		TokenAccessReviewClient:  authnClient,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("creating the authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authzClient,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("creating the authorizer: %w", err)
	}
	return &Access{authn: authn, authz: authz}, nil
}

// Filter is a metrics server filter: every request must be authenticated.
// A request to one of the byObject paths is passed on with the caller in
// its context (request.UserFrom), for its handler to authorize by the
// objects it asks about (CanGet); every other request must be allowed the
// non-resource URL it asks for.
func (a *Access) Filter(byObject ...string) metricsserver.Filter {
	return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			res, ok, err := a.authn.AuthenticateRequest(req)
			switch {
			case err != nil:
				log.Error(err, "Authentication failed")
				http.Error(w, "Authentication failed", http.StatusInternalServerError)
				return
			case !ok:
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			if slices.Contains(byObject, req.URL.Path) {
				handler.ServeHTTP(w, req.WithContext(request.WithUser(req.Context(), res.User)))
				return
			}
			attrs := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path}
			decision, reason, err := a.authz.Authorize(req.Context(), attrs)
			switch {
			case err != nil:
				log.Error(err, "Authorization failed", "user", res.User.GetName())
				http.Error(w, "Authorization failed", http.StatusInternalServerError)
			case decision != authorizer.DecisionAllow:
				log.V(4).Info("Authorization denied", "user", res.User.GetName(), "path", req.URL.Path, "reason", reason)
				http.Error(w, fmt.Sprintf("Authorization denied for user %s", res.User.GetName()), http.StatusForbidden)
			default:
				handler.ServeHTTP(w, req)
			}
		}), nil
	}
}

// CanGet reports whether u may get the object namespace/name of resource
// gvr.
func (a *Access) CanGet(ctx context.Context, u user.Info, gvr schema.GroupVersionResource, namespace, name string) (bool, error) {
	decision, _, err := a.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: "get", ResourceRequest: true,
		APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource,
		Namespace: namespace, Name: name,
	})
	if err != nil {
		return false, err
	}
	return decision == authorizer.DecisionAllow, nil
}
