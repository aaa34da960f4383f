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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// defaultedSpec is the spec the server must store for a policy that sets
// nothing: the +kubebuilder:default markers have to agree with the constants
// the manager falls back on when no GCPolicy exists.
func defaultedSpec() v1alpha1.GCPolicySpec {
	return v1alpha1.GCPolicySpec{
		IgnoredResources: v1alpha1.DefaultIgnoredResources(),
		Workers: v1alpha1.Workers{
			AttemptToDelete: v1alpha1.DefaultAttemptToDeleteWorkers,
			AttemptToOrphan: v1alpha1.DefaultAttemptToOrphanWorkers,
		},
		DefaultPropagation: v1alpha1.DefaultPropagationPolicy,
		Mode:               v1alpha1.ModeEnforce,
		Diagnostics: v1alpha1.Diagnostics{
			BlockedDeletionAfter: &metav1.Duration{Duration: 5 * time.Minute},
			ShadowGracePeriod:    &metav1.Duration{Duration: 2 * time.Minute},
		},
		Collectors: v1alpha1.Collectors{
			TerminatedPods: v1alpha1.TerminatedPodsCollector{Threshold: ptr.To[int32](12500)},
			CertificateSigningRequests: v1alpha1.CertificateSigningRequestsCollector{
				ApprovedAfter: &metav1.Duration{Duration: time.Hour},
				DeniedAfter:   &metav1.Duration{Duration: time.Hour},
				PendingAfter:  &metav1.Duration{Duration: 24 * time.Hour},
			},
		},
	}
}

func TestSampleIsAccepted(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "config", "samples", "ownergc_v1alpha1_gcpolicy.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the sample: %v", err)
	}
	sample := &v1alpha1.GCPolicy{}
	// Strict, so that a misspelt field in the sample fails here instead of
	// being pruned silently by the server.
	if err := yaml.UnmarshalStrict(data, sample); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	if sample.Name != v1alpha1.PolicyName {
		t.Fatalf("the sample is named %q; the only valid name is %q", sample.Name, v1alpha1.PolicyName)
	}
	want := *sample.Spec.DeepCopy()

	deleteOnCleanup(t, sample.Name)
	if err := k8sClient.Create(framework.Context(t), sample); err != nil {
		t.Fatalf("the API server rejected the sample %s: %v", path, err)
	}
	got := getPolicy(t, sample.Name)
	if !equality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("the server changed the sample's spec:\n got: %+v\nwant: %+v", got.Spec, want)
	}
}

func TestDefaulting(t *testing.T) {
	withWorkers := func(toDelete, toOrphan int32) v1alpha1.GCPolicySpec {
		s := defaultedSpec()
		s.Workers = v1alpha1.Workers{AttemptToDelete: toDelete, AttemptToOrphan: toOrphan}
		return s
	}
	cases := []struct {
		name string
		obj  client.Object
		want v1alpha1.GCPolicySpec
	}{{
		name: "no spec field",
		obj:  unstructuredPolicy(v1alpha1.PolicyName, nil),
		want: defaultedSpec(),
	}, {
		name: "empty spec",
		obj:  unstructuredPolicy(v1alpha1.PolicyName, map[string]any{}),
		want: defaultedSpec(),
	}, {
		// The Go types send "ignoredResources": null and "workers": {}.
		name: "zero value of the Go type",
		obj:  &v1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PolicyName}},
		want: defaultedSpec(),
	}, {
		name: "empty workers",
		obj:  unstructuredPolicy(v1alpha1.PolicyName, map[string]any{"workers": map[string]any{}}),
		want: defaultedSpec(),
	}, {
		name: "one worker pool set",
		obj: unstructuredPolicy(v1alpha1.PolicyName, map[string]any{
			"workers": map[string]any{"attemptToOrphan": int64(3)},
		}),
		want: withWorkers(v1alpha1.DefaultAttemptToDeleteWorkers, 3),
	}, {
		name: "ignored resource without group",
		obj: unstructuredPolicy(v1alpha1.PolicyName, map[string]any{
			"ignoredResources": []any{map[string]any{"resource": "configmaps"}},
		}),
		want: func() v1alpha1.GCPolicySpec {
			s := defaultedSpec()
			s.IgnoredResources = []v1alpha1.GroupResource{{Group: "", Resource: "configmaps"}}
			return s
		}(),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deleteOnCleanup(t, v1alpha1.PolicyName)
			if err := k8sClient.Create(framework.Context(t), tc.obj); err != nil {
				t.Fatalf("creating the policy: %v", err)
			}
			got := getPolicy(t, v1alpha1.PolicyName)
			if !equality.Semantic.DeepEqual(got.Spec, tc.want) {
				t.Errorf("spec after defaulting:\n got: %+v\nwant: %+v", got.Spec, tc.want)
			}
		})
	}
}

// An explicit empty list means "ignore nothing" and must not be replaced by
// the default list, neither on create nor on update.
func TestExplicitEmptyIgnoredResources(t *testing.T) {
	// ignoredResourcesOnServer returns spec.ignoredResources exactly as the
	// server stores it, and whether the field is present at all.
	ignoredResourcesOnServer := func(t *testing.T) ([]any, bool) {
		t.Helper()
		u := unstructuredPolicy(v1alpha1.PolicyName, nil)
		if err := k8sClient.Get(framework.Context(t), client.ObjectKey{Name: v1alpha1.PolicyName}, u); err != nil {
			t.Fatalf("reading the policy back: %v", err)
		}
		list, found, err := unstructured.NestedSlice(u.Object, "spec", "ignoredResources")
		if err != nil {
			t.Fatalf("spec.ignoredResources is not a list: %v", err)
		}
		return list, found
	}

	t.Run("create", func(t *testing.T) {
		deleteOnCleanup(t, v1alpha1.PolicyName)
		obj := unstructuredPolicy(v1alpha1.PolicyName, map[string]any{"ignoredResources": []any{}})
		if err := k8sClient.Create(framework.Context(t), obj); err != nil {
			t.Fatalf("creating the policy: %v", err)
		}
		if list, found := ignoredResourcesOnServer(t); !found || len(list) != 0 {
			t.Errorf("spec.ignoredResources = %v (present: %v), want an explicit empty list", list, found)
		}
		if got := getPolicy(t, v1alpha1.PolicyName).Spec; got.Workers.AttemptToDelete != v1alpha1.DefaultAttemptToDeleteWorkers ||
			got.DefaultPropagation != v1alpha1.DefaultPropagationPolicy {
			t.Errorf("the other fields were not defaulted: %+v", got)
		}
	})

	t.Run("update", func(t *testing.T) {
		deleteOnCleanup(t, v1alpha1.PolicyName)
		if err := k8sClient.Create(framework.Context(t), unstructuredPolicy(v1alpha1.PolicyName, map[string]any{})); err != nil {
			t.Fatalf("creating the policy: %v", err)
		}
		p := &v1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PolicyName}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ignoredResources":[]}}`))
		if err := k8sClient.Patch(framework.Context(t), p, patch); err != nil {
			t.Fatalf("patching spec.ignoredResources to []: %v", err)
		}
		if list, found := ignoredResourcesOnServer(t); !found || len(list) != 0 {
			t.Errorf("after patching to []: spec.ignoredResources = %v (present: %v), want an explicit empty list", list, found)
		}

		// Removing the field brings the default back.
		patch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ignoredResources":null}}`))
		if err := k8sClient.Patch(framework.Context(t), p, patch); err != nil {
			t.Fatalf("removing spec.ignoredResources: %v", err)
		}
		if got, want := getPolicy(t, v1alpha1.PolicyName).Spec.IgnoredResources, v1alpha1.DefaultIgnoredResources(); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("after removing the field: spec.ignoredResources = %+v, want the default %+v", got, want)
		}
	})
}

func TestValidationRejects(t *testing.T) {
	withSpec := func(spec map[string]any) *unstructured.Unstructured {
		return unstructuredPolicy(v1alpha1.PolicyName, spec)
	}
	ignoring := func(items ...map[string]any) *unstructured.Unstructured {
		list := make([]any, len(items))
		for i := range items {
			list[i] = items[i]
		}
		return withSpec(map[string]any{"ignoredResources": list})
	}
	gr := func(group, resource string) map[string]any {
		return map[string]any{"group": group, "resource": resource}
	}
	workers := func(field string, n int32) *unstructured.Unstructured {
		return withSpec(map[string]any{"workers": map[string]any{field: int64(n)}})
	}

	type rejection struct {
		name string
		obj  *unstructured.Unstructured
		// want are substrings the error message must contain, so that a
		// rejection for some unrelated reason does not pass.
		want []string
	}
	// bounds are a worker pool's sizes just out of range.
	bounds := func(pool string) []rejection {
		return []rejection{
			{pool + " below the minimum", workers(pool, v1alpha1.MinWorkers-1), []string{"spec.workers." + pool, "greater than or equal to 1"}},
			{pool + " above the maximum", workers(pool, v1alpha1.MaxWorkers+1), []string{"spec.workers." + pool, "less than or equal to 500"}},
		}
	}

	cases := []rejection{{
		name: "name other than default",
		obj:  unstructuredPolicy("custom", map[string]any{}),
		want: []string{"singleton", "'default'"},
	}}
	cases = append(cases, bounds("attemptToDelete")...)
	cases = append(cases, bounds("attemptToOrphan")...)
	cases = append(cases, []rejection{{
		name: "unknown propagation policy",
		obj:  withSpec(map[string]any{"defaultPropagation": "Sideways"}),
		want: []string{"spec.defaultPropagation", `"Sideways"`, "supported values", `"Background"`, `"Foreground"`, `"Orphan"`},
	}, {
		name: "ignored resource with an empty resource name",
		obj:  ignoring(gr("", "")),
		want: []string{"spec.ignoredResources[0].resource", "at least 1 chars long"},
	}, {
		name: "ignored resource without a resource name",
		obj:  ignoring(map[string]any{"group": "apps"}),
		want: []string{"spec.ignoredResources[0].resource", "Required value"},
	}, {
		name: "ignored resource that is not a resource name",
		obj:  ignoring(gr("", "Bad Name")),
		want: []string{"spec.ignoredResources[0].resource", "lowercase plural resource name"},
	}, {
		name: "ignored resource with an invalid group",
		obj:  ignoring(gr("Apps", "deployments")),
		want: []string{"spec.ignoredResources[0].group", "must be a DNS subdomain"},
	}, {
		name: "duplicate ignored resources",
		obj:  ignoring(gr("apps", "deployments"), gr("", "configmaps"), gr("apps", "deployments")),
		want: []string{"spec.ignoredResources[2]", "Duplicate value"},
	}, {
		// The group defaults to "" before the list-map keys are compared.
		name: "duplicate ignored resources once the group is defaulted",
		obj:  ignoring(map[string]any{"resource": "configmaps"}, gr("", "configmaps")),
		want: []string{"spec.ignoredResources[1]", "Duplicate value"},
	}}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRejected(t, tc.obj, tc.want)
		})
	}
}

func TestSecondPolicyIsRejected(t *testing.T) {
	deleteOnCleanup(t, v1alpha1.PolicyName)
	deleteOnCleanup(t, "second")
	if err := k8sClient.Create(framework.Context(t), &v1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PolicyName}}); err != nil {
		t.Fatalf("creating the default policy: %v", err)
	}
	err := k8sClient.Create(framework.Context(t), &v1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: "second"}})
	if err == nil {
		t.Fatal("the API server accepted a second GCPolicy named \"second\" next to \"default\"")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "singleton") {
		t.Fatalf("got %v, want an Invalid error saying GCPolicy is a singleton", err)
	}
}

func TestStatusSubresource(t *testing.T) {
	deleteOnCleanup(t, v1alpha1.PolicyName)
	if err := k8sClient.Create(framework.Context(t), &v1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PolicyName}}); err != nil {
		t.Fatalf("creating the policy: %v", err)
	}
	created := getPolicy(t, v1alpha1.PolicyName)
	if created.Generation != 1 {
		t.Fatalf("metadata.generation = %d after create, want 1", created.Generation)
	}

	// A status update stores the status, ignores any change to the spec and
	// leaves the generation alone.
	p := created.DeepCopy()
	p.Spec.Workers.AttemptToDelete = 99
	p.Status = v1alpha1.GCPolicyStatus{
		ObservedGeneration: 1,
		Conditions: []metav1.Condition{{
			Type:               v1alpha1.ConditionReady,
			Status:             metav1.ConditionTrue,
			ObservedGeneration: 1,
			LastTransitionTime: metav1.Now(),
			Reason:             v1alpha1.ReasonSynced,
			Message:            "every monitored resource has synced",
		}},
		MonitoredResources: 7,
		FailedResources: []v1alpha1.FailedResource{{
			Group: "example.com", Version: "v1", Resource: "widgets", Message: "forbidden",
		}},
		Graph: v1alpha1.GraphStatus{Nodes: 12, VirtualNodes: 1},
	}
	if err := k8sClient.Status().Update(framework.Context(t), p); err != nil {
		t.Fatalf("updating the status: %v", err)
	}
	got := getPolicy(t, v1alpha1.PolicyName)
	if got.Status.MonitoredResources != 7 || got.Status.Graph.Nodes != 12 || len(got.Status.Conditions) != 1 ||
		got.Status.Conditions[0].Reason != v1alpha1.ReasonSynced || len(got.Status.FailedResources) != 1 {
		t.Errorf("status was not stored as written: %+v", got.Status)
	}
	if !equality.Semantic.DeepEqual(got.Spec, created.Spec) {
		t.Errorf("a status update changed the spec:\n got: %+v\nwant: %+v", got.Spec, created.Spec)
	}
	if got.Generation != 1 {
		t.Errorf("metadata.generation = %d after a status update, want it unchanged at 1", got.Generation)
	}

	// A spec update bumps the generation and ignores any change to the status.
	p = got.DeepCopy()
	p.Spec.DefaultPropagation = v1alpha1.PropagationForeground
	p.Status.MonitoredResources = 1000
	if err := k8sClient.Update(framework.Context(t), p); err != nil {
		t.Fatalf("updating the spec: %v", err)
	}
	got = getPolicy(t, v1alpha1.PolicyName)
	if got.Spec.DefaultPropagation != v1alpha1.PropagationForeground {
		t.Errorf("spec.defaultPropagation = %q after the update, want %q", got.Spec.DefaultPropagation, v1alpha1.PropagationForeground)
	}
	if got.Generation != 2 {
		t.Errorf("metadata.generation = %d after a spec update, want 2", got.Generation)
	}
	if got.Status.MonitoredResources != 7 {
		t.Errorf("an update of the main resource changed status.monitoredResources to %d, want it left at 7", got.Status.MonitoredResources)
	}

	// And a second status update again leaves the generation alone.
	p = got.DeepCopy()
	p.Status.ObservedGeneration = 2
	if err := k8sClient.Status().Update(framework.Context(t), p); err != nil {
		t.Fatalf("updating the status again: %v", err)
	}
	got = getPolicy(t, v1alpha1.PolicyName)
	if got.Generation != 2 || got.Status.ObservedGeneration != 2 {
		t.Errorf("after the second status update: generation %d, observedGeneration %d; want 2 and 2", got.Generation, got.Status.ObservedGeneration)
	}
}
