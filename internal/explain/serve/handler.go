// Package serve serves explanations (package explain) over HTTP, authorized
// per object with the caller's own RBAC.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/explain"
)

// Explainer explains objects.
type Explainer interface {
	// Resolve maps a request's query (group, version, resource, namespace
	// and name, or uid) to its target; explain.ErrNotFound when it names nothing
	// the collector knows.
	Resolve(q url.Values) (explain.Target, error)
	// Explain explains the target. visible says whether a related object
	// (an owner, a dependent) may be named to the caller; the others are
	// counted.
	Explain(ctx context.Context, t explain.Target, visible func(explain.Object) bool) explain.Explanation
}

// Authorizer decides what a caller may read.
type Authorizer interface {
	CanGet(ctx context.Context, u user.Info, gvr schema.GroupVersionResource, namespace, name string) (bool, error)
}

// Handler serves explanations. The caller (authenticated, in the request's
// context) must be allowed to get the object; owners and dependents it may
// not get are counted, not named. A caller that may not get the object
// learns nothing, not even whether it exists: the answer is 403 whatever
// the object.
func Handler(ex Explainer, authz func() Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := ctrl.Log.WithName("explain")
		if r.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		u, ok := request.UserFrom(r.Context())
		a := authz()
		if !ok || a == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		t, err := ex.Resolve(r.URL.Query())
		if errors.Is(err, explain.ErrNotFound) {
			// Resolving by UID only works for objects the collector knows:
			// saying so would tell the caller that a UID exists.
			http.Error(w, "Forbidden: the object is unknown, or you may not get it", http.StatusForbidden)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		allowed, err := a.CanGet(r.Context(), u, t.Resource, t.Namespace, t.Name)
		if err != nil {
			log.Error(err, "Authorization failed", "user", u.GetName())
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			http.Error(w, "Forbidden: the object is unknown, or you may not get it", http.StatusForbidden)
			return
		}
		visible := func(o explain.Object) bool {
			gvr, err := parseResource(o.Resource)
			if err != nil {
				return false
			}
			ok, err := a.CanGet(r.Context(), u, gvr, o.Namespace, o.Name)
			return err == nil && ok
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ex.Explain(r.Context(), t, visible))
	})
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
