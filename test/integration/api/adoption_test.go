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
	"testing"

	"github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// The fields for diagnostics and safe adoption are validated by the schema,
// with errors that name the field and say what is wrong.
func TestAdoptionAndDiagnosticsFieldsAreValidated(t *testing.T) {
	override := func(o map[string]any) map[string]any {
		return map[string]any{"propagationOverrides": []any{o}}
	}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"unknown mode", map[string]any{"mode": "Maybe"}, []string{"spec.mode", `"Maybe"`, `"Enforce"`, `"DryRun"`}},
		{"override without a propagation", override(map[string]any{"group": "apps", "resource": "replicasets"}), []string{"spec.propagationOverrides[0].propagation", "Required value"}},
		{"override with an unknown propagation", override(map[string]any{"resource": "pods", "propagation": "Sideways"}), []string{"spec.propagationOverrides[0].propagation", `"Sideways"`}},
		{"duplicate overrides", map[string]any{"propagationOverrides": []any{
			map[string]any{"group": "apps", "resource": "replicasets", "propagation": "Foreground"},
			map[string]any{"group": "apps", "resource": "replicasets", "propagation": "Orphan"}}}, []string{"spec.propagationOverrides[1]", "Duplicate value"}},
		{"protected namespace that is not a DNS label", map[string]any{"protection": map[string]any{"namespaces": []any{"Kube_System"}}}, []string{"spec.protection.namespaces[0]", "DNS label"}},
		{"blockedDeletionAfter that is not a duration", map[string]any{"diagnostics": map[string]any{"blockedDeletionAfter": "soon"}}, []string{"spec.diagnostics.blockedDeletionAfter"}},
		{"blockedDeletionAfter too long", map[string]any{"diagnostics": map[string]any{"blockedDeletionAfter": "48h"}}, []string{"spec.diagnostics.blockedDeletionAfter", "from 1s to 24h"}},
		{"shadowGracePeriod too short", map[string]any{"diagnostics": map[string]any{"shadowGracePeriod": "100ms"}}, []string{"spec.diagnostics.shadowGracePeriod", "from 1s to 24h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectRejected(t, unstructuredPolicy(v1alpha1.PolicyName, tc.spec), tc.want)
		})
	}
}

// A valid policy with every new field is accepted, and the defaults apply.
func TestAdoptionAndDiagnosticsDefaults(t *testing.T) {
	obj := unstructuredPolicy(v1alpha1.PolicyName, map[string]any{
		"propagationOverrides": []any{map[string]any{"group": "apps", "resource": "replicasets", "propagation": "Foreground"}},
		"protection":           map[string]any{"namespaces": []any{"kube-system"}},
	})
	deleteOnCleanup(t, obj.GetName())
	if err := k8sClient.Create(framework.Context(t), obj); err != nil {
		t.Fatalf("creating a valid policy: %v", err)
	}
	p := getPolicy(t, v1alpha1.PolicyName)
	d := p.Spec.Diagnostics
	if p.Spec.Mode != v1alpha1.ModeEnforce || d.BlockedDeletionAfter == nil || d.BlockedDeletionAfter.Duration.String() != "5m0s" ||
		d.ShadowGracePeriod == nil || d.ShadowGracePeriod.Duration.String() != "2m0s" {
		t.Fatalf("defaults: mode %q, diagnostics %+v", p.Spec.Mode, d)
	}
}
