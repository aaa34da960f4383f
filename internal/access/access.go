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
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/webhook"
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
	authn bearerToken
	authz authorizer.Authorizer
}

// backoff is the retry backoff of the review requests (the API server's own
// default for its webhooks).
var backoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// reviewQPS and reviewBurst are the rate limit of an Access's reviews, its
// own: they never take from the rate limit of cfg's other clients (the
// collectors' --kube-api-qps, the host manager's), nor those from theirs.
const reviewQPS, reviewBurst = 20, 40

// New returns an Access that reviews tokens and access through the API
// server of cfg, over httpClient, within a rate limit of its own.
func New(cfg *rest.Config, httpClient *http.Client) (*Access, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter, cfg.QPS, cfg.Burst = nil, reviewQPS, reviewBurst
	authnClient, err := authenticationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authzClient, err := authorizationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	// As the API server's delegating authenticator (bearer tokens only,
	// anonymous requests refused, answers cached for a minute), but a token
	// the API server does not know is unauthenticated, not an error: the
	// fleet tells "the host does not know this token" from "the host could
	// not be asked" (FleetFilter), and an unknown token is 401, not 500.
	authn := bearerToken{tokencache.New(&tokenReviews{client: authnClient}, false, time.Minute, time.Minute)}
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
	return a.filter(byObject, false)
}

// FleetFilter is the metrics server filter of a fleet's host: as Filter,
// except that a request to one of the byCluster paths whose token the host
// does not authenticate is passed on too, without a caller in its context:
// its handler may authenticate it at the member it asks about. A token the
// host authenticates is never passed on without its caller, so that it is
// never sent to a member.
func (a *Access) FleetFilter(byCluster ...string) metricsserver.Filter {
	return a.filter(byCluster, true)
}

func (a *Access) filter(byObject []string, passUnauthenticated bool) metricsserver.Filter {
	return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			own := slices.Contains(byObject, req.URL.Path)
			res, ok, err := a.authn.AuthenticateRequest(req)
			switch {
			case err != nil:
				log.Error(err, "Authentication failed")
				http.Error(w, "Authentication failed", http.StatusInternalServerError)
				return
			case !ok && own && passUnauthenticated:
				handler.ServeHTTP(w, req)
				return
			case !ok:
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			if own {
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

// Authenticate authenticates the bearer token of req: the caller, or false
// when the API server does not know the token.
func (a *Access) Authenticate(req *http.Request) (user.Info, bool, error) {
	res, ok, err := a.authn.AuthenticateRequest(req)
	if err != nil || !ok {
		return nil, false, err
	}
	return res.User, true, nil
}

// Allowed reports whether the API server allows attrs (their User set).
func (a *Access) Allowed(ctx context.Context, attrs authorizer.AttributesRecord) (bool, error) {
	decision, _, err := a.authz.Authorize(ctx, attrs)
	if err != nil {
		return false, err
	}
	return decision == authorizer.DecisionAllow, nil
}

// bearerToken authenticates a request's bearer token. A request without
// one, or whose token the API server does not know, is unauthenticated,
// without an error (bearertoken.Authenticator makes an error of it).
type bearerToken struct {
	token authenticator.Token
}

func (b bearerToken) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	scheme, token, found := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "bearer") || token == "" {
		return nil, false, nil
	}
	return b.token.AuthenticateToken(req.Context(), token)
}

// tokenReviews authenticates tokens with TokenReviews.
type tokenReviews struct {
	client authenticationv1.AuthenticationV1Interface
}

// tokenReviewTimeout bounds one TokenReview.
const tokenReviewTimeout = 10 * time.Second

// AuthenticateToken asks the API server, retrying as its own webhooks
// retry: an error only when it could not be asked.
func (r *tokenReviews) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, tokenReviewTimeout)
	defer cancel()
	var review *authnv1.TokenReview
	err := webhook.WithExponentialBackoff(ctx, backoff, func() error {
		var err error
		review, err = r.client.TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	}, webhook.DefaultShouldRetry)
	if err != nil {
		return nil, false, err
	}
	if !review.Status.Authenticated {
		return nil, false, nil
	}
	u := review.Status.User
	var extra map[string][]string
	if u.Extra != nil {
		extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			extra[k] = v
		}
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}}, true, nil
}

// CanGet reports whether u may get the object namespace/name of resource
// gvr.
func (a *Access) CanGet(ctx context.Context, u user.Info, gvr schema.GroupVersionResource, namespace, name string) (bool, error) {
	return a.Allowed(ctx, authorizer.AttributesRecord{
		User: u, Verb: "get", ResourceRequest: true,
		APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource,
		Namespace: namespace, Name: name,
	})
}
