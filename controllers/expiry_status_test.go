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

package controllers

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/policy"
)

// The expiry collector's status reports what it has scheduled and the
// annotations it could not read, besides what every collector reports.
func TestExpiryStatusReportsScheduledAndInvalid(t *testing.T) {
	got := collectorsStatus([]apigc.Status{{Name: "expiry", Enabled: true, Synced: true, Deleted: 3, DryRunDeletions: 1, Scheduled: 7, Invalid: 2}})
	want := ownergcv1alpha1.ExpiryCollectorStatus{CollectorStatus: ownergcv1alpha1.CollectorStatus{Enabled: true, Synced: true, Deleted: 3, DryRunDeletions: 1},
		Scheduled: 7, Invalid: 2}
	if got.Expiry != want {
		t.Errorf("status.collectors.expiry = %+v, want %+v", got.Expiry, want)
	}
}

// unmatchedEngine answers UnmatchedIgnored from a fixed list of served
// resources.
type unmatchedEngine struct {
	Engine
	served []schema.GroupResource
}

func (e unmatchedEngine) UnmatchedIgnored(entries []schema.GroupResource) ([]schema.GroupResource, bool) {
	if e.served == nil {
		return nil, false
	}
	var out []schema.GroupResource
	for _, gr := range entries {
		if !slices.Contains(e.served, gr) {
			out = append(out, gr)
		}
	}
	return out, true
}

func (unmatchedEngine) Status() engine.Status  { return engine.Status{} }
func (unmatchedEngine) Policy() *policy.Policy { return policy.Defaults() }

// A rule that matches no served resource is reported as an unmatched
// ignored resource is: the ExpiryRulesResolved condition names it.
func TestExpiryRulesResolved(t *testing.T) {
	rule := func(group, resource string) ownergcv1alpha1.ExpiryRule {
		return ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Group: group, Resource: resource},
			NamespaceSelector: &metav1.LabelSelector{}, After: metav1.Duration{Duration: 3600e9}}
	}
	served := []schema.GroupResource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}
	for _, tc := range []struct {
		name    string
		served  []schema.GroupResource
		rules   []ownergcv1alpha1.ExpiryRule
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "no discovery yet", rules: []ownergcv1alpha1.ExpiryRule{rule("", "configmaps")}, status: metav1.ConditionUnknown, reason: ownergcv1alpha1.ReasonDiscovering},
		{name: "no rule", served: served, status: metav1.ConditionTrue, reason: ownergcv1alpha1.ReasonAllRulesMatched, message: "empty"},
		{name: "every rule matches", served: served, rules: []ownergcv1alpha1.ExpiryRule{rule("", "configmaps"), rule("apps", "deployments")},
			status: metav1.ConditionTrue, reason: ownergcv1alpha1.ReasonAllRulesMatched, message: "(2)"},
		{name: "a singular", served: served, rules: []ownergcv1alpha1.ExpiryRule{rule("", "configmaps"), rule("apps", "deployment")},
			status: metav1.ConditionFalse, reason: ownergcv1alpha1.ReasonUnmatchedRules, message: `1 of 2 rules`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &GCPolicyReconciler{Engine: unmatchedEngine{served: tc.served}}
			gcp := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			gcp.Spec.Collectors.Expiry.Rules = tc.rules
			c := r.expiryRulesCondition(gcp)
			if c.Type != ownergcv1alpha1.ConditionExpiryRulesResolved || c.Status != tc.status || c.Reason != tc.reason ||
				!strings.Contains(c.Message, tc.message) || c.ObservedGeneration != 4 {
				t.Errorf("condition %+v, want %s %s saying %q", c, tc.status, tc.reason, tc.message)
			}
			if tc.status == metav1.ConditionFalse && !strings.Contains(c.Message, `rule 2 {group: "apps", resource: "deployment"}`) {
				t.Errorf("the message does not name the rule: %s", c.Message)
			}
		})
	}
}
