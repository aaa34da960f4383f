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

package plugin_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

// standIn is a server that stands in for the manager: it records the
// Authorization header of each request and answers an explanation.
type standIn struct{ *framework.Recorder }

func newStandIn(t *testing.T, tls bool) standIn {
	return standIn{framework.StartRecorder(t, tls, func(r *http.Request) string { return r.Header.Get("Authorization") },
		func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":{"apiVersion":"v1","kind":"ConfigMap","name":"x"},"graph":"Observed","queue":{},"decision":"the stand-in's decision"}`)
		})}
}

// wantRequests fails the test unless the stand-in got exactly n requests,
// each with the bearer token.
func (s standIn) wantRequests(t *testing.T, n int, token, after string) {
	t.Helper()
	got := s.Seen()
	if len(got) != n {
		t.Fatalf("after %s, the stand-in manager got %d requests, want %d", after, len(got), n)
	}
	for _, a := range got {
		if a != "Bearer "+token {
			t.Fatalf("after %s, the stand-in manager got Authorization %q, want the user's bearer token", after, a)
		}
	}
}

// The plugin sends the user's token to --server-url only over https, to a
// server whose certificate it verified (against --manager-ca-file) or that
// it was told not to verify (--manager-insecure-skip-tls-verify); kubectl's
// --insecure-skip-tls-verify is the API server's alone.
func TestManagerConnectionFlags(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	who := user(t, ns)
	kc := kubeconfig(t, who, ns)
	cp.Create(t, framework.ConfigMaps, ns, "x")
	explainedBy := func(why string) string {
		return `Explained by: +API reads alone, since the ownergc manager could not answer: ` + why
	}

	// http:// is refused: why explains from API reads alone, graph fails.
	plain := newStandIn(t, false)
	wantLines(t, mustRun(t, kc, "why", "configmap/x", "--server-url", plain.URL), "why at an http:// URL",
		explainedBy(`--server-url `+q(plain.URL)+` is refused: the plugin sends your bearer token to the manager, never in cleartext; give its https:// URL`))
	if r := runPlugin(t, kc, "graph", "--server-url", plain.URL); r.Err == nil || !strings.Contains(r.Stderr, "is refused: the plugin sends your bearer token to the manager, never in cleartext") {
		t.Errorf("graph at an http:// URL should fail, saying why:\n%s", r)
	}
	plain.wantRequests(t, 0, who.Token, "why and graph at an http:// URL")

	// A certificate the plugin cannot verify: no request, with or without
	// kubectl's --insecure-skip-tls-verify (which still applies to the API
	// server: the explanation from API reads works with it).
	tls := newStandIn(t, true)
	for _, args := range [][]string{{}, {"--insecure-skip-tls-verify"}} {
		r := mustRun(t, kc, append([]string{"why", "configmap/x", "--server-url", tls.URL}, args...)...)
		wantLines(t, r, "why at a server whose certificate is not verified",
			explainedBy(`requesting /explain from the manager \(`+q(tls.URL)+`\): .*certificate.* \(give the certificate authority that signed the manager's certificate with --manager-ca-file, .*; kubectl's --insecure-skip-tls-verify applies to the API server alone\)`),
			`Decision: +kept: it has no owner references, .*`)
	}
	tls.wantRequests(t, 0, who.Token, "why at a server whose certificate is not verified")

	// Verified against --manager-ca-file (httptest's certificate is valid
	// for 127.0.0.1), or not verified on request.
	ca := filepath.Join(t.TempDir(), "manager-ca.crt")
	if err := os.WriteFile(ca, tls.CAData(), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{{"--manager-ca-file", ca}, {"--manager-insecure-skip-tls-verify"}} {
		r := mustRun(t, kc, append([]string{"why", "configmap/x", "--server-url", tls.URL}, args...)...)
		wantLines(t, r, "why at a server it verified or was told not to verify",
			`Explained by: +the ownergc manager \(`+q(tls.URL)+`\)`,
			`Decision: +the stand-in's decision`)
		tls.wantRequests(t, i+1, who.Token, "why "+strings.Join(args, " "))
	}
	if r := runPlugin(t, kc, "graph", "--server-url", tls.URL, "--manager-ca-file", ca, "--manager-insecure-skip-tls-verify"); r.Err == nil ||
		!strings.Contains(r.Stderr, "give --manager-ca-file or --manager-insecure-skip-tls-verify, not both") {
		t.Errorf("both manager TLS flags should be refused:\n%s", r)
	}
	tls.wantRequests(t, 2, who.Token, "graph with both manager TLS flags")
}

// evilName is a Role's name (RBAC names need only be one path segment)
// that would clear the terminal and set its title; evilKind and
// evilOwner, an owner reference's kind and name (which the API server does
// not check), would blink and reverse the text that follows.
const (
	evilName  = "evil\x1b[2J\x1b]0;pwned\a"
	evilKind  = "Gh\x1b[5most"
	evilOwner = "g\u202eh\a"
)

// Names, kinds and texts are printed with their control characters
// escaped, in tree, why and graph; JSON keeps them as they are.
func TestControlCharactersAreEscaped(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	kc := kubeconfig(t, user(t, ns), ns)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: evilName}}
	create(t, role)
	ghost := uuid.NewUUID()
	dep := cp.Create(t, framework.ConfigMaps, ns, "escaped", framework.OwnedBy(
		metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Name: evilName, UID: role.UID},
		metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: evilKind, Name: evilOwner, UID: ghost}))
	manager.WaitObserved(t, dep)
	evil, kind, owner := q(`"evil\x1b[2J\x1b]0;pwned\a"`), q(`"Gh\x1b[5most"`), q(`"g\u202eh\a"`)

	up := mustRun(t, kc, "tree", "configmap/escaped", "--up")
	wantLines(t, up, "owners of the ConfigMap",
		q(ns)+` +ConfigMap/escaped +\w+`,
		q(ns)+` +├─Role/`+evil+` +- +\w+`,
		` +└─`+kind+`/`+owner+` +- +- +Unverifiable: its kind nope.example.com/v1, Kind=Gh\\x1b\[5most is not served by the API server: .*`)
	noControlCharacters(t, up)

	down := mustRun(t, kc, "tree", "role", evilName)
	wantLines(t, down, "dependents of the Role", q(ns)+` +Role/`+evil+` +\w+`, q(ns)+` +└─ConfigMap/escaped +- +\w+ +1 other owner`)
	noControlCharacters(t, down)

	why := mustRun(t, kc, append([]string{"why", "configmap/escaped"}, withManager()...)...)
	wantLines(t, why, "the manager's explanation",
		`  Role/`+evil+`: Solid: .*`,
		`  `+kind+`/`+owner+`: not classified for you: .*`)
	noControlCharacters(t, why)

	fallback := mustRun(t, kc, "why", "configmap/escaped")
	wantLines(t, fallback, "the explanation from API reads alone",
		`  Role/`+evil+`: Solid: it exists`,
		`  `+kind+`/`+owner+`: Unverifiable: its kind nope.example.com/v1, Kind=Gh\\x1b\[5most is not served .*`,
		`Decision: +kept: owner Gh\\x1b\[5most g\\u202eh\\a cannot be verified; .*`)
	noControlCharacters(t, fallback)

	grapher := cp.NewIdentity(t, ns, "grapher", true,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{NonResourceURLs: []string{"/debug/graph"}, Verbs: []string{"get"}})
	dot := mustRun(t, kubeconfig(t, grapher, ns), append([]string{"graph", "configmap/escaped"}, withManager()...)...)
	wantLines(t, dot, "DOT around the ConfigMap", `    name=`+evil)
	noControlCharacters(t, dot)

	var tree struct {
		Root struct {
			Children []struct{ Object struct{ Kind, Name string } }
		}
	}
	decode(t, mustRun(t, kc, "tree", "configmap/escaped", "--up", "-o", "json"), &tree)
	if c := tree.Root.Children; len(c) != 2 || c[0].Object.Name != evilName || c[1].Object.Kind != evilKind || c[1].Object.Name != evilOwner {
		t.Errorf("tree -o json should keep the names as they are: %+v", tree)
	}
	cp.Survive(t, "an owner exists, another cannot be verified", dep)
}

// noControlCharacters fails the test if the plugin printed a character
// that is not printable, but for newlines (colours are off: NO_COLOR).
func noControlCharacters(t *testing.T, r result) {
	t.Helper()
	for _, out := range []string{r.Stdout, r.Stderr} {
		for i, c := range out {
			if c == utf8.RuneError || (c != '\n' && (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))) {
				t.Fatalf("the plugin printed the control character %q at byte %d:\n%s", c, i, r)
			}
		}
	}
}

// An owner reference whose name cannot be one path segment names no
// object: the plugin never looks it up — here, followed as a path, the
// first would read a ConfigMap of another namespace with the reference's
// UID, which the user may read — and counts it as an owner that is gone.
// Names and namespaces given on the command line are checked too.
func TestOwnerReferenceThatNamesNoObject(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	other := framework.CreateNamespace(t, cp.Client)
	reader := cp.NewIdentity(t, ns, "reader", true,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}})
	kc := kubeconfig(t, reader, ns)
	// Neither the collector's deletion nor its removal of references may
	// change the dependent while the plugin looks at it.
	refuse(t, ns, admissionregistrationv1.Delete, admissionregistrationv1.Update)
	decoy := cp.Create(t, framework.ConfigMaps, other, "decoy")
	traversal := "../../" + other + "/configmaps/decoy"
	dep := cp.Create(t, framework.ConfigMaps, ns, "traversal", framework.WithLabels(map[string]string{undeletable: "true"}), framework.OwnedBy(
		metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: traversal, UID: decoy.UID},
		metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "..", UID: uuid.NewUUID()},
		metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "decoy%2F..", UID: uuid.NewUUID()}))
	if r := mustRun(t, kc, "tree", "-n", other, "configmap/decoy"); !strings.Contains(r.Stdout, "ConfigMap/decoy") {
		t.Fatalf("the reader should see the decoy:\n%s", r)
	}
	namesNoObject := func(why string) string {
		return `Dangling: its name cannot be one path segment \(` + why + `\), so it names no object: it is never looked up, and the collector treats the reference as dangling \(an owner that is gone\)`
	}

	up := mustRun(t, kc, "tree", "configmap/traversal", "--up")
	wantLines(t, up, "owners of the dependent",
		q(ns)+` +ConfigMap/traversal +\w+`,
		` +├─ConfigMap/`+q(traversal)+` +- +- +`+namesNoObject(`may not contain '/'`),
		` +├─ConfigMap/\.\. +- +- +`+namesNoObject(`may not be '\.\.'`),
		` +└─ConfigMap/decoy%2F\.\. +- +- +`+namesNoObject(`may not contain '%'`))

	why := mustRun(t, kc, "why", "configmap/traversal")
	wantLines(t, why, "the explanation from API reads alone",
		`Owners: +3`,
		`  ConfigMap/`+q(traversal)+`: `+namesNoObject(`may not contain '/'`),
		`  ConfigMap/\.\.: `+namesNoObject(`may not be '\.\.'`),
		`Decision: +will be deleted with propagation Background.*: all its owners are gone`)

	// The manager says the same, in its words.
	manager.WaitObserved(t, dep)
	fromManager := mustRun(t, kc, append([]string{"why", "configmap/traversal"}, withManager()...)...)
	wantLines(t, fromManager, "the manager's explanation",
		`Explained by: +the ownergc manager .*`,
		`  ConfigMap/`+q(traversal)+`: Dangling: its name cannot be one path segment \(may not contain '/'\), so it names no object: .*`,
		`  ConfigMap/\.\.: Dangling: its name cannot be one path segment \(may not be '\.\.'\), so it names no object: .*`,
		`Decision: +will be deleted .*`)

	for _, bad := range []struct{ args []string }{
		{[]string{"tree", "configmap", ".."}},
		{[]string{"why", "configmap", ".."}},
		{[]string{"tree", "configmap/decoy%2F.."}},
		{[]string{"tree", "-n", "Not-A-Label", "configmap/traversal"}},
	} {
		r := runPlugin(t, kc, bad.args...)
		if r.Err == nil || !regexp.MustCompile(`^error: the (name|namespace) "[^"]*" cannot be (an object's name|the name of a namespace): `).MatchString(r.Stderr) {
			t.Errorf("an invalid name or namespace should be refused before any request:\n%s", r)
		}
	}
	cp.Survive(t, "the admission policy refuses its deletion", dep)
}
