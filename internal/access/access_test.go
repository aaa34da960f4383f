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

package access

import (
	"context"
	"errors"
	"net/http"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewing is a TokenReview client that knows one token, "known", and
// fails every review when down.
func reviewing(down bool) (*tokenReviews, *int) {
	cs := fake.NewClientset()
	calls := new(int)
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*calls++
		if down {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "known" {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice", Groups: []string{"team"}}}
		} else {
			tr.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	return &tokenReviews{client: cs.AuthenticationV1()}, calls
}

// A token the API server does not know is unauthenticated, not an error
// (the fleet then asks the member); an API server that cannot be asked is
// an error; a request without a bearer token is not sent for review.
func TestBearerTokenTellsUnknownTokensFromFailedReviews(t *testing.T) {
	for _, tc := range []struct {
		name      string
		header    string
		down      bool
		wantUser  string
		wantErr   bool
		wantCalls int
	}{
		{name: "known token", header: "Bearer known", wantUser: "alice", wantCalls: 1},
		{name: "scheme in any case", header: "bearer known", wantUser: "alice", wantCalls: 1},
		{name: "unknown token", header: "Bearer stranger", wantCalls: 1},
		{name: "no header", header: ""},
		{name: "basic credentials", header: "Basic YTpi"},
		{name: "empty token", header: "Bearer  "},
		{name: "API server down", header: "Bearer known", down: true, wantErr: true, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reviews, calls := reviewing(tc.down)
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://manager/explain", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			res, ok, err := bearerToken{reviews}.AuthenticateRequest(req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error: %t", err, tc.wantErr)
			}
			if got := ""; ok {
				got = res.User.GetName()
				if got != tc.wantUser {
					t.Errorf("authenticated as %q, want %q", got, tc.wantUser)
				}
			} else if tc.wantUser != "" {
				t.Errorf("not authenticated, want %q", tc.wantUser)
			}
			if *calls != tc.wantCalls {
				t.Errorf("%d TokenReviews, want %d", *calls, tc.wantCalls)
			}
		})
	}
}
