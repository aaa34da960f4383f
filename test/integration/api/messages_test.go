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

package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// servedCRD reads the GCPolicy CustomResourceDefinition back from the API
// server, as kubectl sees it.
func servedCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := k8sClient.Get(framework.Context(t), client.ObjectKey{Name: "gcpolicies." + v1alpha1.GroupVersion.Group}, u); err != nil {
		t.Fatalf("reading the GCPolicy CRD from the API server: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		t.Fatalf("decoding the GCPolicy CRD: %v", err)
	}
	return crd
}

func servedVersion(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == v1alpha1.GroupVersion.Version {
			return &crd.Spec.Versions[i]
		}
	}
	t.Fatalf("the CRD has no version %s", v1alpha1.GroupVersion.Version)
	return nil
}

// `kubectl get gcpolicy` shows whether the collector is Degraded next to
// Ready, and `kubectl get ownergc` lists GCPolicies.
func TestPrinterColumnsAndCategory(t *testing.T) {
	crd := servedCRD(t)
	var names []string
	paths := map[string]string{}
	for _, c := range servedVersion(t, crd).AdditionalPrinterColumns {
		names = append(names, c.Name)
		paths[c.Name] = c.JSONPath
	}
	if want := []string{"Ready", "Degraded", "Monitored", "Nodes", "Blocked", "Mode", "Agreement", "Age"}; !slices.Equal(names, want) {
		t.Errorf("printer columns %v, want %v", names, want)
	}
	if want := `.status.conditions[?(@.type=="Degraded")].status`; paths["Degraded"] != want {
		t.Errorf("the Degraded column shows %q, want the status of the Degraded condition %q", paths["Degraded"], want)
	}
	// The accepted names are what discovery serves, and so what kubectl
	// resolves a category with.
	if !slices.Contains(crd.Status.AcceptedNames.Categories, "ownergc") {
		t.Errorf("categories served %v (spec %v): `kubectl get ownergc` would not list GCPolicies",
			crd.Status.AcceptedNames.Categories, crd.Spec.Names.Categories)
	}
}

// Every defaulted or bounded field of the spec says its default and its
// bounds in its description, which is what `kubectl explain` prints.
func TestFieldDescriptionsStateDefaultsAndBounds(t *testing.T) {
	schema := servedVersion(t, servedCRD(t)).Schema.OpenAPIV3Schema
	spec, ok := schema.Properties["spec"]
	if !ok {
		t.Fatal("the schema has no spec")
	}
	checked := map[string]bool{}
	var walk func(path string, s apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s apiextensionsv1.JSONSchemaProps) {
		var want []string
		if s.Default != nil {
			var v any
			if err := json.Unmarshal(s.Default.Raw, &v); err != nil {
				t.Fatalf("%s: default %s: %v", path, s.Default.Raw, err)
			}
			switch v := v.(type) {
			case string:
				if v == "" {
					v = `""`
				}
				want = append(want, "Defaults to "+v)
			case float64:
				want = append(want, fmt.Sprintf("Defaults to %v", v))
			default: // a list or an object: the description says what it amounts to
				want = append(want, "Defaults to")
			}
		}
		if s.Minimum != nil && s.Maximum != nil {
			want = append(want, fmt.Sprintf("%v to %v", *s.Minimum, *s.Maximum))
		}
		if s.MaxLength != nil {
			want = append(want, fmt.Sprintf("%d characters", *s.MaxLength))
		}
		if s.MaxItems != nil {
			want = append(want, fmt.Sprintf("At most %d", *s.MaxItems))
		}
		for _, e := range s.Enum {
			want = append(want, strings.Trim(string(e.Raw), `"`))
		}
		if len(want) > 0 {
			checked[path] = true
		}
		for _, w := range want {
			if !strings.Contains(s.Description, w) {
				t.Errorf("the description of %s does not say %q: %q", path, w, s.Description)
			}
		}
		for name, p := range s.Properties {
			walk(path+"."+name, p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(path+"[]", *s.Items.Schema)
		}
	}
	walk("spec", spec)

	// The walk saw the fields it had to, with the values the manager uses.
	for _, path := range []string{
		"spec", "spec.ignoredResources", "spec.ignoredResources[].group", "spec.ignoredResources[].resource",
		"spec.workers", "spec.workers.attemptToDelete", "spec.workers.attemptToOrphan", "spec.defaultPropagation",
		"spec.mode", "spec.propagationOverrides", "spec.propagationOverrides[].propagation", "spec.protection.namespaces",
		"spec.diagnostics", "spec.diagnostics.blockedDeletionAfter", "spec.diagnostics.shadowGracePeriod",
		"spec.collectors", "spec.collectors.terminatedPods", "spec.collectors.terminatedPods.enabled",
		"spec.collectors.terminatedPods.threshold", "spec.collectors.finishedJobs", "spec.collectors.finishedJobs.enabled",
		"spec.collectors.certificateSigningRequests", "spec.collectors.certificateSigningRequests.enabled",
		"spec.collectors.certificateSigningRequests.approvedAfter", "spec.collectors.certificateSigningRequests.deniedAfter",
		"spec.collectors.certificateSigningRequests.pendingAfter",
	} {
		if !checked[path] {
			t.Errorf("%s has no default, bound or enum in the served schema", path)
		}
	}
	workers := spec.Properties["workers"].Properties
	for _, field := range []string{"attemptToDelete", "attemptToOrphan"} {
		d := workers[field].Description
		for _, w := range []string{
			fmt.Sprintf("Defaults to %d", v1alpha1.DefaultAttemptToDeleteWorkers),
			fmt.Sprintf("%d to %d", v1alpha1.MinWorkers, v1alpha1.MaxWorkers),
		} {
			if !strings.Contains(d, w) {
				t.Errorf("spec.workers.%s: description %q does not say %q", field, d, w)
			}
		}
	}
}

// statusCauses returns the field and message of each cause of an Invalid
// error.
func statusCauses(t *testing.T, err error) map[string]string {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want an Invalid error from the API server", err)
	}
	causes := map[string]string{}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			causes[c.Field] += c.Message
		}
	}
	return causes
}

// The singleton rule names metadata.name, not "<nil>".
func TestSingletonErrorNamesMetadataName(t *testing.T) {
	deleteOnCleanup(t, "custom")
	err := k8sClient.Create(framework.Context(t), &v1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: "custom"}})
	if err == nil {
		t.Fatal("the API server accepted a GCPolicy named \"custom\"")
	}
	t.Logf("rejected as expected: %v", err)
	causes := statusCauses(t, err)
	if msg, ok := causes["metadata.name"]; !ok || !strings.Contains(msg, "singleton") || !strings.Contains(msg, "'default'") {
		t.Errorf("causes %v: want one on metadata.name saying that GCPolicy is a singleton named 'default'", causes)
	}
	if strings.Contains(err.Error(), "<nil>") {
		t.Errorf("the error still names no field: %v", err)
	}
}

// An invalid group is described in words, on the field, without the regular
// expression; valid groups, the core group included, are accepted.
func TestGroupErrorInWords(t *testing.T) {
	ignoring := func(group string) *unstructured.Unstructured {
		return unstructuredPolicy(v1alpha1.PolicyName, map[string]any{
			"ignoredResources": []any{map[string]any{"group": group, "resource": "widgets"}},
		})
	}
	for _, group := range []string{"Apps", "apps/v1", "-apps", "example..com", "example.com."} {
		t.Run("rejects "+group, func(t *testing.T) {
			deleteOnCleanup(t, v1alpha1.PolicyName)
			err := k8sClient.Create(framework.Context(t), ignoring(group))
			if err == nil {
				t.Fatalf("the API server accepted group %q", group)
			}
			t.Logf("rejected as expected: %v", err)
			causes := statusCauses(t, err)
			msg := causes["spec.ignoredResources[0].group"]
			for _, w := range []string{"must be a DNS subdomain", "empty for the core group"} {
				if !strings.Contains(msg, w) {
					t.Errorf("causes %v: want one on spec.ignoredResources[0].group saying %q", causes, w)
				}
			}
			for _, regex := range []string{"should match", "[a-z0-9]"} {
				if strings.Contains(err.Error(), regex) {
					t.Errorf("the error shows the regular expression (%q): %v", regex, err)
				}
			}
		})
	}
	for _, group := range []string{"", "apps", "events.k8s.io", "my-group.example.com", "x1"} {
		t.Run(fmt.Sprintf("accepts %q", group), func(t *testing.T) {
			deleteOnCleanup(t, v1alpha1.PolicyName)
			if err := k8sClient.Create(framework.Context(t), ignoring(group)); err != nil {
				t.Fatalf("the API server rejected the valid group %q: %v", group, err)
			}
		})
	}
}
