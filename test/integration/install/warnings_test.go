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

package install_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// warnings collects the warnings the API server returns, as kubectl prints
// them.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// TestInstalledPolicyWarnsAboutMistakenIgnoredResources checks the
// ValidatingAdmissionPolicy of dist/install.yaml: writing a GCPolicy whose
// ignored resources look mistaken (a singular, resource.group, a version as
// group) succeeds with a warning naming each, and a correct one draws none.
func TestInstalledPolicyWarnsAboutMistakenIgnoredResources(t *testing.T) {
	w := &warnings{}
	cfg := rest.CopyConfig(installed.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(entries ...ownergcv1alpha1.GroupResource) error {
		p := &ownergcv1alpha1.GCPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: ownergcv1alpha1.GroupVersion.String(), Kind: "GCPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName},
			Spec:       ownergcv1alpha1.GCPolicySpec{IgnoredResources: entries},
		}
		//nolint:staticcheck // client.Apply with an object is what kubectl apply --server-side does
		return c.Patch(framework.Context(t), p, client.Apply, client.FieldOwner("ownergc-warnings-test"), client.ForceOwnership)
	}
	t.Cleanup(func() {
		p := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
		if err := installed.Client.Delete(framework.Context(t), p); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the GCPolicy: %v", err)
		}
	})
	gr := func(group, resource string) ownergcv1alpha1.GroupResource {
		return ownergcv1alpha1.GroupResource{Group: group, Resource: resource}
	}

	// The admission policy is type-checked against the CRD in the
	// background after it is created: wait until it warns.
	var got []string
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if err := apply(gr("apps", "deployment"), gr("", "deployments.apps"), gr("v1", "pods"), gr("", "configmaps"), gr("storage.k8s.io", "*")); err != nil {
			t.Fatalf("a GCPolicy with entries that look mistaken but are valid was rejected: %v", err)
		}
		got = w.take()
		if len(got) == 0 {
			return fmt.Errorf("no warning")
		}
		return nil
	}, "writing a GCPolicy with mistaken-looking ignored resources should return warnings")
	all := strings.Join(got, "\n")
	t.Logf("warnings:\n%s", all)
	for _, want := range []string{`resource "deployment"`, "plural", `resource "deployments.apps"`, `group "v1"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the warnings do not mention %s", want)
		}
	}
	for _, fine := range []string{"configmaps", `"*"`, "storage.k8s.io"} {
		if strings.Contains(all, fine) {
			t.Errorf("the warnings mention %s, which is fine", fine)
		}
	}

	if err := apply(gr("apps", "deployments"), gr("", "configmaps"), gr("storage.k8s.io", "*"), gr("", "endpoints")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); len(got) != 0 {
		t.Errorf("a GCPolicy with correct ignored resources drew warnings: %q", got)
	}
}
