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
	"time"

	"github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// spec.collectors is validated by the schema, with errors that name the
// field and say in words what it expects.
func TestCollectorsFieldsAreValidated(t *testing.T) {
	csrs := func(field string, value any) map[string]any {
		return map[string]any{"collectors": map[string]any{"certificateSigningRequests": map[string]any{field: value}}}
	}
	threshold := func(v int64) map[string]any {
		return map[string]any{"collectors": map[string]any{"terminatedPods": map[string]any{"threshold": v}}}
	}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"negative threshold", threshold(-1), []string{"spec.collectors.terminatedPods.threshold", "greater than or equal to 0"}},
		{"threshold too large", threshold(500001), []string{"spec.collectors.terminatedPods.threshold", "less than or equal to 500000"}},
		{"enabled that is not a boolean", map[string]any{"collectors": map[string]any{"finishedJobs": map[string]any{"enabled": "yes"}}},
			[]string{"spec.collectors.finishedJobs.enabled", "boolean"}},
		{"approvedAfter that is not a duration", csrs("approvedAfter", "soon"), []string{"spec.collectors.certificateSigningRequests.approvedAfter"}},
		{"approvedAfter too short", csrs("approvedAfter", "500ms"), []string{"spec.collectors.certificateSigningRequests.approvedAfter", "from 1s to 8760h"}},
		{"deniedAfter too long", csrs("deniedAfter", "9000h"), []string{"spec.collectors.certificateSigningRequests.deniedAfter", "from 1s to 8760h"}},
		{"pendingAfter zero", csrs("pendingAfter", "0s"), []string{"spec.collectors.certificateSigningRequests.pendingAfter", "from 1s to 8760h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectRejected(t, unstructuredPolicy(v1alpha1.PolicyName, tc.spec), tc.want)
		})
	}
}

// A collector set partly keeps what is set and takes the defaults for the
// rest; threshold 0 (kube-controller-manager's "keep every terminated Pod")
// is kept, not replaced by the default.
func TestCollectorsDefaults(t *testing.T) {
	obj := unstructuredPolicy(v1alpha1.PolicyName, map[string]any{"collectors": map[string]any{
		"terminatedPods":             map[string]any{"enabled": true, "threshold": int64(0)},
		"certificateSigningRequests": map[string]any{"enabled": true, "pendingAfter": "90m"},
	}})
	deleteOnCleanup(t, obj.GetName())
	if err := k8sClient.Create(framework.Context(t), obj); err != nil {
		t.Fatalf("creating a valid policy: %v", err)
	}
	c := getPolicy(t, v1alpha1.PolicyName).Spec.Collectors
	pods, csrs := c.TerminatedPods, c.CertificateSigningRequests
	if !pods.Enabled || pods.Threshold == nil || *pods.Threshold != 0 {
		t.Errorf("terminatedPods %+v, want enabled with threshold 0", pods)
	}
	if c.FinishedJobs.Enabled {
		t.Errorf("finishedJobs %+v, want the default: disabled", c.FinishedJobs)
	}
	if !csrs.Enabled || csrs.ApprovedAfter == nil || csrs.ApprovedAfter.Duration != time.Hour ||
		csrs.DeniedAfter == nil || csrs.DeniedAfter.Duration != time.Hour || csrs.PendingAfter == nil || csrs.PendingAfter.Duration != 90*time.Minute {
		t.Errorf("certificateSigningRequests %+v, want enabled, 1h, 1h, 90m", csrs)
	}
}
