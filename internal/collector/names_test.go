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

package collector

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/explain"
)

// invalidNames cannot be one path segment: client-go would join them into
// a request path that leads elsewhere ("../../other/secrets/x" from a
// ConfigMap of namespace ns reads the Secret x of namespace other), or
// they are empty or over-long.
var invalidNames = []struct{ what, name string }{
	{"dot-dot", "../../other/secrets/x"},
	{"dot-dot after a name", "x/../../../other/secrets/x"},
	{"two dots", ".."},
	{"one dot", "."},
	{"slash", "a/b"},
	{"escaped slash", "x%2Fy"},
	{"empty", ""},
	{"over-long", strings.Repeat("a", explain.MaxNameLength+1)},
}

// expectNoRequestFor fails if a request named something that is not one
// path segment.
func expectNoRequestFor(t *testing.T, f *fakeAPI) {
	t.Helper()
	for _, c := range f.calls {
		if explain.ValidatePath(c.namespace, c.name) != nil {
			t.Fatalf("a request was sent for %.80q in namespace %q: %v", c.name, c.namespace, f.calls)
		}
	}
}

func refNamed(apiVersion, kind, name string, uid types.UID) objOpt {
	return func(o *metav1.PartialObjectMetadata) {
		o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid})
	}
}

// An owner reference whose name cannot be one path segment names no
// object: it is never read, and a dependent whose only owner it is gets
// collected, as upstream collects it after its read finds another object
// or none.
func TestOwnerReferenceThatIsNotOnePathSegmentNamesNoObject(t *testing.T) {
	for _, tc := range invalidNames {
		t.Run(tc.what, func(t *testing.T) {
			h := newHarness(t)
			dep := configMap("dep", refNamed("v1", "ConfigMap", tc.name, "ghost-uid"))
			h.observe(dep)
			if errs := h.drain(); len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			expectNoRequestFor(t, h.api)
			expectVerbs(t, h, "delete")
			if p := h.api.calls[0].delete.PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("deleted with propagation %v, want Background", p)
			}
			if h.graph.VirtualLen() != 0 {
				t.Errorf("the virtual node the reference made should leave the graph once found to name no object")
			}
		})
	}
}

// The attack: a dependent's reference names, through "..", a Secret of
// another namespace, with that Secret's own UID. Upstream's read of the
// cleaned path finds the Secret and keeps the dependent; ownergc never
// reads it, and collects the dependent.
func TestOwnerReferenceThatTraversesToAnotherNamespaceIsNeverRead(t *testing.T) {
	h := newHarness(t)
	secret := object("v1", "Secret", "other", "token")
	h.observe(secret)
	dep := configMap("dep", refNamed("v1", "Secret", "../../other/secrets/token", secret.UID))
	h.observe(dep)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectNoRequestFor(t, h.api)
	expectVerbs(t, h, "delete")
	if h.api.calls[0].name != "dep" {
		t.Fatalf("deleted %v, want the dependent", h.api.calls)
	}
}

// A dependent that also has a live owner keeps it and loses the reference
// that names no object.
func TestReferenceThatNamesNoObjectIsRemovedBesideALiveOwner(t *testing.T) {
	h := newHarness(t)
	alive := configMap("alive")
	h.observe(alive)
	dep := configMap("dep", ownedBy(alive, false), refNamed("v1", "ConfigMap", "../x", "ghost-uid"))
	h.observe(dep)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectNoRequestFor(t, h.api)
	expectVerbs(t, h, "patch")
	want := `{"metadata":{"uid":"configmap-dep","ownerReferences":[{"$patch":"delete","uid":"ghost-uid"}]}}`
	if c := h.api.calls[0]; c.name != "dep" || c.patch != want {
		t.Fatalf("patch of %s: %s, want %s", c.name, c.patch, want)
	}
}

// Every request the collector builds is refused before it is sent when its
// name or namespace cannot be one path segment.
func TestRequestsRefuseNamesThatAreNotOnePathSegment(t *testing.T) {
	h := newHarness(t)
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, tc := range invalidNames {
		if _, err := h.c.get(context.Background(), cms, "ns", tc.name); !isInvalidName(err) {
			t.Errorf("get of a name %s: %v, want an invalid name", tc.what, err)
		}
	}
	for _, ns := range []string{"..", "a/b", "other/secrets", "Upper", strings.Repeat("n", 64)} {
		if _, err := h.c.get(context.Background(), cms, ns, "x"); !isInvalidName(err) {
			t.Errorf("get in namespace %q: %v, want an invalid name", ns, err)
		}
		if _, err := h.c.patch(context.Background(), cms, ns, "x", types.MergePatchType, []byte("{}")); !isInvalidName(err) {
			t.Errorf("patch in namespace %q: %v, want an invalid name", ns, err)
		}
	}
	if len(h.api.calls) != 0 {
		t.Fatalf("requests were sent: %v", h.api.calls)
	}
}

// Every request for an object goes through objectClient, which refuses
// names that are not one path segment: no other code of the package asks
// a client for a resource.
func TestEveryRequestGoesThroughObjectClient(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "objectClient" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Resource" {
					t.Errorf("%s: %s asks a client for a resource: build requests with objectClient", fset.Position(call.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	}
}

// An event about a dependent that names an owner of another namespace by
// UID names the reference as the dependent states it, nothing of the
// owner: its name and namespace are not for the readers of the dependent's
// namespace.
func TestInvalidNamespaceEventNamesTheReferenceNotTheOwner(t *testing.T) {
	h := newHarness(t)
	owner := object("v1", "ConfigMap", "other", "real-name")
	owner.UID = "owner-uid"
	h.observe(owner)
	h.observe(configMap("dep", refNamed("v1", "ConfigMap", "alias", owner.UID)))
	if len(h.recorder.Events) != 1 {
		t.Fatalf("want one event, have %d", len(h.recorder.Events))
	}
	e := <-h.recorder.Events
	if !strings.Contains(e, ReasonOwnerRefInvalidNamespace) || !strings.Contains(e, "alias") || strings.Contains(e, "real-name") || strings.Contains(e, "other") {
		t.Fatalf("event %q should name the reference (alias), not the owner (real-name, of namespace other)", e)
	}
}
