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

// Package api_test checks the GCPolicy API as a real kube-apiserver serves it
// from the CRD in config/crd/bases: schema defaulting, validation and the
// status subresource. No manager runs; only the API server is under test.
package api_test

import (
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp *framework.ControlPlane
	// k8sClient is cp's client.
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Setup: func(c *framework.ControlPlane) error {
		k8sClient = c.Client
		return nil
	}}, &cp, nil))
}

// unstructuredPolicy builds a GCPolicy as a plain map so that exactly the
// given JSON reaches the server: zero values, empty lists and missing fields
// are sent as written rather than as the Go types would encode them. A nil
// spec leaves the spec field out altogether.
func unstructuredPolicy(name string, spec map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "GCPolicy",
		"metadata":   map[string]any{"name": name},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	return &unstructured.Unstructured{Object: obj}
}

// expectRejected creates obj and fails unless the API server rejects it as
// Invalid with a message that contains every string of want (the field
// path, the rule's words).
func expectRejected(t *testing.T, obj *unstructured.Unstructured, want []string) {
	t.Helper()
	deleteOnCleanup(t, obj.GetName())
	err := k8sClient.Create(framework.Context(t), obj)
	if err == nil {
		t.Fatalf("the API server accepted the policy %v; want it rejected with a message containing %q", obj.Object, want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v (reason %q), want an Invalid error", err, apierrors.ReasonForError(err))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error message %q does not contain %q", err.Error(), w)
		}
	}
}

// deleteOnCleanup makes sure the cluster-scoped policy name is gone once the
// test ends, so that the next test can create its own. It is registered
// before the create, so that an object a test wrongly got accepted is removed
// too.
func deleteOnCleanup(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(func() { deletePolicy(t, name) })
}

// deletePolicy deletes the policy name (if it exists) and waits until the
// server no longer returns it.
func deletePolicy(t *testing.T, name string) {
	t.Helper()
	p := &v1alpha1.GCPolicy{}
	p.Name = name
	if err := k8sClient.Delete(framework.Context(t), p); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting GCPolicy %q: %v", name, err)
		return
	}
	framework.WaitGone(t, k8sClient, p, framework.CascadeTimeout, "the test deleted it")
}

// getPolicy reads the policy name back from the server.
func getPolicy(t *testing.T, name string) *v1alpha1.GCPolicy {
	t.Helper()
	p := &v1alpha1.GCPolicy{}
	if err := k8sClient.Get(framework.Context(t), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatalf("reading GCPolicy %q back: %v", name, err)
	}
	return p
}
