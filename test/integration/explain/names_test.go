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

package explain_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/test/framework"
)

// The attack: a caller who may get the ConfigMaps of its own namespace asks
// about a "ConfigMap" whose name leads, once client-go cleans the request
// path, to a Secret of another namespace. Every such name or namespace is
// refused with 400, and no answer says anything of the Secret.
func TestExplainRefusesNamesThatAreNotOnePathSegment(t *testing.T) {
	mine, other := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	secret := cp.Create(t, framework.Secrets, other, "token")
	caller := configMapReader(t, mine, "configmaps-reader")
	cms := framework.ConfigMaps.GVR
	query := func(namespace, name string) string { return explain.Query(cms, namespace, name).Encode() }

	for what, q := range map[string]string{
		"name with ..":                 query(mine, "../../"+other+"/secrets/"+secret.Name),
		"name with .. after a name":    query(mine, "x/../../../"+other+"/secrets/"+secret.Name),
		"name ..":                      query(mine, ".."),
		"name with /":                  query(mine, other+"/secrets"),
		"name with %2F, encoded":       "version=v1&resource=configmaps&namespace=" + mine + "&name=..%2F..%2F" + other + "%2Fsecrets%2F" + secret.Name,
		"name with a literal %2F":      query(mine, "..%2F..%2F"+other+"%2Fsecrets%2F"+secret.Name),
		"empty name":                   query(mine, ""),
		"over-long name":               query(mine, strings.Repeat("a", explain.MaxNameLength+1)),
		"namespace with ..":            query(mine+"/../"+other, "x"),
		"namespace ..":                 query("..", "x"),
		"namespace with /":             query(other+"/secrets", secret.Name),
		"namespace with %2F, encoded":  "version=v1&resource=configmaps&namespace=" + other + "%2Fsecrets&name=" + secret.Name,
		"namespace with a literal %2F": query(other+"%2Fsecrets", secret.Name),
		"empty namespace":              query("", "x"),
		"over-long namespace":          query(strings.Repeat("n", 64), "x"),
		"uid with ..":                  "uid=" + url.QueryEscape("../../"+other+"/secrets/"+secret.Name),
		"empty uid":                    "uid=",
	} {
		code, body, err := manager.Get(explain.Path+"?"+q, caller.Token)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d %q, want 400", what, code, body)
		}
		if strings.Contains(string(body), string(secret.UID)) {
			t.Errorf("%s: the answer names the Secret's UID: %s", what, body)
		}
	}
}

// Owner references whose name cannot be one path segment, in an object the
// caller may get: each is explained as naming no object, and nothing of the
// Secret its cleaned path leads to appears. The dependent is held by a
// finalizer, so that it can be explained after the collector deleted it.
func TestExplainSaysThatAnOwnerReferenceNamesNoObject(t *testing.T) {
	mine, other := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	secret := cp.Create(t, framework.Secrets, other, "token")
	caller := configMapReader(t, mine, "configmaps-reader")
	names := []string{
		"../../" + other + "/secrets/" + secret.Name,
		"x/../../../" + other + "/secrets/" + secret.Name,
		"..",
		other + "/secrets",
		"..%2F..%2F" + other + "%2Fsecrets%2F" + secret.Name,
		strings.Repeat("a", explain.MaxNameLength+1),
	}
	var refs []metav1.OwnerReference
	for _, name := range names {
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uuid.NewUUID()})
	}
	dep := cp.CreateHeld(t, framework.ConfigMaps, mine, "dependent", framework.OwnedBy(refs...))

	code, body, err := manager.Get(explain.Path+"?"+queryFor(dep), caller.Token)
	if err != nil || code != http.StatusOK {
		t.Fatalf("explaining %s: %d %v %s", dep, code, err, body)
	}
	if strings.Contains(string(body), string(secret.UID)) {
		t.Fatalf("the answer names the Secret's UID %s: %s", secret.UID, body)
	}
	var ex explain.Explanation
	if err := json.Unmarshal(body, &ex); err != nil {
		t.Fatalf("decoding: %v\n%s", err, body)
	}
	if len(ex.Owners) != len(names) || ex.HiddenOwners != 0 {
		t.Fatalf("owners %+v (hidden %d): want the %d references, named", ex.Owners, ex.HiddenOwners, len(names))
	}
	for i, o := range ex.Owners {
		if o.Name != names[i] || o.Status != explain.OwnerDangling || !strings.Contains(o.Reason, "names no object") {
			t.Errorf("owner %d (%.60q): status %s, reason %q; want Dangling, saying it names no object", i, o.Name, o.Status, o.Reason)
		}
	}
}

// Asking by a UID nobody has and by the UID of an object the caller may
// not get: the same status, the same body.
func TestExplainAnswersUnknownAndForbiddenUIDsAlike(t *testing.T) {
	mine, other := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	secret := cp.Create(t, framework.Secrets, other, "token")
	manager.WaitObserved(t, secret)
	caller := configMapReader(t, mine, "configmaps-reader")
	type answer struct {
		code int
		body string
	}
	var answers []answer
	for _, uid := range []string{string(secret.UID), string(uuid.NewUUID())} {
		code, body, err := manager.Get(explain.Path+"?uid="+uid, caller.Token)
		if err != nil {
			t.Fatalf("uid %s: %v", uid, err)
		}
		answers = append(answers, answer{code, string(body)})
	}
	if answers[0].code != http.StatusForbidden || answers[0] != answers[1] {
		t.Fatalf("a forbidden UID is answered %d %q, an unknown one %d %q: want the same 403", answers[0].code, answers[0].body, answers[1].code, answers[1].body)
	}
}
