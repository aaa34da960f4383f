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

package main

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/fake"

	"github.com/ownergc/ownergc/internal/explain"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"web", "web-7d4b9", "a.b", "system:controller:x", "Evil\x1b[31m"} {
		if why := checkName(ok); why != "" {
			t.Errorf("checkName(%q) = %q, want no objection", ok, why)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../../kube-system/secrets/x", "x%2Fy", "x/../../y"} {
		if checkName(bad) == "" {
			t.Errorf("checkName(%q) should object", bad)
		}
	}
	if err := validName("the name", "../x"); err == nil || err.Error() != `the name "../x" cannot be an object's name: may not contain '/'` {
		t.Errorf("validName: %v", err)
	}
}

func TestCheckNamespace(t *testing.T) {
	for _, ok := range []string{"default", "kube-system", "a1"} {
		if why := checkNamespace(ok); why != "" {
			t.Errorf("checkNamespace(%q) = %q, want no objection", ok, why)
		}
	}
	for _, bad := range []string{"", "..", "a/b", "Upper", "a.b", "x%2F", strings.Repeat("a", 64)} {
		if checkNamespace(bad) == "" {
			t.Errorf("checkNamespace(%q) should object", bad)
		}
	}
}

// Names are printed as they are, or quoted when a character of theirs is
// not printable; free text has those characters escaped.
func TestDisplayAndEscape(t *testing.T) {
	for in, want := range map[string]string{
		"web":                "web",
		"café ünïcode":       "café ünïcode",
		"evil\x1b[2J":        `"evil\x1b[2J"`,
		"bell\a":             `"bell\a"`,
		"rtl\u202eexe.txt":   `"rtl\u202eexe.txt"`,
		"two\nlines":         `"two\nlines"`,
		"tab\tbed":           `"tab\tbed"`,
		"c1\u009b31m":        `"c1\u009b31m"`,
		"bad\xffutf8":        `"bad\xffutf8"`,
		"quote\"d, but fine": "quote\"d, but fine",
	} {
		if got := display(in); got != want {
			t.Errorf("display(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"no such object":                     "no such object",
		"owner \x1b]0;pwned\a is gone":       `owner \x1b]0;pwned\a is gone`,
		"a\nb\tc\xfe":                        `a\nb\tc\xfe`,
		"its kind x/v1, Kind=\u202eGhost is": `its kind x/v1, Kind=\u202eGhost is`,
	} {
		if got := escapeText(in); got != want {
			t.Errorf("escapeText(%q) = %s, want %s", in, got, want)
		}
	}
	if got, want := escapeExcept("digraph {\n\t\"a\x1b\" -> \"b\";\n}\n", "\n\t"), "digraph {\n\t\"a\\x1b\" -> \"b\";\n}\n"; got != want {
		t.Errorf("escapeExcept kept %q, want %q", got, want)
	}
}

// No control character of a name, kind, finalizer or reason reaches the
// text of tree and why.
func TestRenderEscapesControlCharacters(t *testing.T) {
	evil := objectRef{APIVersion: "v1", Kind: "Conf\x1b[2JigMap", Namespace: "ns", Name: "x\x1b]0;pwned\a", UID: "u\x1b"}
	tree := &Tree{Direction: DirectionOwners, Root: &Node{Object: evil, Children: []*Node{{
		Object: objectRef{Kind: "Ghost\x1b[31m", Name: "g\u202eh"}, Reference: &Reference{Controller: true},
		Status: NodeUnverifiable, Reason: "its kind x/v1, Kind=Ghost\x1b[31m is not served"}}}}
	var out strings.Builder
	if err := renderTree(&out, tree, now, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Conf\x1b[2JigMap"/"x\x1b]0;pwned\a"`, `"Ghost\x1b[31m"/"g\u202eh"`, `Kind=Ghost\x1b[31m is not served`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tree lacks %s:\n%s", want, out.String())
		}
	}
	checkOnlyPaint(t, "tree", out.String())

	r := &WhyResult{Source: SourceAPI, ManagerError: "the manager answered 403 Forbidden: no\x1b[8m", Explanation: explain.Explanation{
		Object: evil, Graph: GraphUnknown,
		Owners:     []explain.Owner{{Object: objectRef{Kind: "ConfigMap", Name: "o\x1b[1m"}, Status: explain.OwnerDangling, Reason: "\x1b[1mno such object"}},
		Dependents: []explain.Dependent{{Object: objectRef{Kind: "ConfigMap", Name: "d\x07"}, Blocking: true, Remains: "it carries finalizers a\x1b"}},
		Queue:      explain.Queue{LastError: "x\x1b"},
		NotChecked: &explain.NotChecked{Owners: 1, Message: "1 owners were not read (status NotChecked)\x1b"},
		Decision:   "kept: owner ConfigMap o\x1b[1m exists",
	}, Unknown: []string{"u\x1b"}}
	out.Reset()
	if err := renderWhy(&out, r, now, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Conf\x1b[2JigMap" ns/"x\x1b]0;pwned\a" (uid "u\x1b")`, `ConfigMap/"o\x1b[1m": `, `Dangling: \x1b[1mno such object`,
		`ConfigMap/"d\a" [blocking]`, `403 Forbidden: no\x1b[8m`, "Not checked:  \x1b[33m1 owners were not read (status NotChecked)\\x1b", `kept: owner ConfigMap o\x1b[1m exists`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("why lacks %s:\n%s", want, out.String())
		}
	}
	checkOnlyPaint(t, "why", out.String())
}

// checkOnlyPaint fails unless the only control characters of out, but for
// newlines, are the painter's colours.
func checkOnlyPaint(t *testing.T, what, out string) {
	t.Helper()
	rest := out
	for _, code := range []string{red, yellow, bold, "0"} {
		rest = strings.ReplaceAll(rest, "\x1b["+code+"m", "")
	}
	for _, r := range rest {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e') {
			t.Errorf("%s prints the control character %q:\n%s", what, r, out)
			return
		}
	}
}

// An owner reference whose name cannot be one path segment is never looked
// up: it names no object, and counts as an owner that is gone.
func TestOwnerWithAnInvalidNameIsNotLookedUp(t *testing.T) {
	mc := fake.NewSimpleMetadataClient(fake.NewTestScheme())
	c := &clients{mapper: testMapper(), metadata: mc}
	dep := cm("dep", "d")
	for _, name := range []string{"..", "../../kube-system/secrets/token", "x/../../y", "a%2Fb", "."} {
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: "o"}
		l := c.lookupOwner(context.Background(), "ns", ref)
		if l.status != explain.OwnerDangling || !strings.Contains(l.reason, "so it names no object: it is never looked up") {
			t.Errorf("owner %q: %s: %s", name, l.status, l.reason)
		}
		f := facts(dep, l)
		f.obj.OwnerReferences = []metav1.OwnerReference{ref}
		if got, want := explainFromAPI(f).Decision, "will be deleted with propagation Background: all its owners are gone"; got != want {
			t.Errorf("owner %q: decision %q, want %q", name, got, want)
		}
	}
	if a := mc.Actions(); len(a) > 0 {
		t.Errorf("owners with invalid names were looked up: %v", a)
	}
	l := c.lookupOwner(context.Background(), "ns", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "fine", UID: "o"})
	if l.status != explain.OwnerDangling || l.reason != "no such object" || len(mc.Actions()) != 1 {
		t.Errorf("a valid owner name should be looked up: %s: %s, %v", l.status, l.reason, mc.Actions())
	}

	// tree --up shows it as an owner that is gone, and goes no further.
	root := buildOwners(context.Background(), dep.ref(), metav1.ObjectMeta{Namespace: "ns", Name: "dep",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "../x", UID: "o"}}}, c.lookupOwner)
	if len(root.Children) != 1 || root.Children[0].Status != NodeDangling || len(root.Children[0].Children) != 0 {
		t.Errorf("tree --up: %+v", root.Children)
	}
}

// The object named on the command line is checked before it is read.
func TestResolveChecksTheNameAndNamespace(t *testing.T) {
	mc := fake.NewSimpleMetadataClient(fake.NewTestScheme())
	c := &clients{mapper: testMapper(), metadata: mc, namespace: "ns"}
	for _, args := range [][]string{{"configmap", ".."}, {"configmap/%2e%2e"}, {"configmap", "x%2Fy"}} {
		if _, err := c.resolve(context.Background(), args, false); err == nil || !strings.Contains(err.Error(), "cannot be an object's name") {
			t.Errorf("resolve(%q): %v", args, err)
		}
	}
	c.namespace = "../kube-system"
	if _, err := c.resolve(context.Background(), []string{"configmap/x"}, false); err == nil ||
		err.Error() != `the namespace "../kube-system" cannot be the name of a namespace: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')` {
		t.Errorf("resolve in namespace ../kube-system: %v", err)
	}
	if a := mc.Actions(); len(a) > 0 {
		t.Errorf("invalid names were read: %v", a)
	}
}

// testMapper maps core ConfigMaps.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return m
}
