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

package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// spec.collectors.expiry: off by default; rules keep their order, names and
// selectors; values the schema refuses are errors.
func TestExpiryFromSpec(t *testing.T) {
	if e := Defaults().Collectors.Expiry; e.Enabled || e.WarnBefore != 0 || e.Rules != nil {
		t.Errorf("defaults: %+v, want expiry off, without warning or rules", e)
	}
	rule := func(group, resource string, after time.Duration, namespaces []ownergcv1alpha1.NamespaceName, sel *metav1.LabelSelector) ownergcv1alpha1.ExpiryRule {
		return ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Group: group, Resource: resource},
			Namespaces: namespaces, NamespaceSelector: sel, After: metav1.Duration{Duration: after}}
	}
	p, err := FromSpec(&ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{Expiry: ownergcv1alpha1.ExpiryCollector{
		Enabled: true, WarnBefore: &metav1.Duration{Duration: time.Hour},
		Rules: []ownergcv1alpha1.ExpiryRule{
			rule("", "configmaps", 168*time.Hour, nil, &metav1.LabelSelector{MatchLabels: map[string]string{"env": "preview"}}),
			rule("apps", "*", time.Hour, []ownergcv1alpha1.NamespaceName{"ci"}, nil),
		}}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := p.Collectors.Expiry
	if !e.Enabled || e.WarnBefore != time.Hour || len(e.Rules) != 2 {
		t.Fatalf("got %+v", e)
	}
	first, second := e.Rules[0], e.Rules[1]
	switch {
	case first.GroupResource != (schema.GroupResource{Resource: "configmaps"}) || first.After != 168*time.Hour || first.Namespaces != nil:
		t.Errorf("first rule: %+v", first)
	case !first.Selector.Matches(labels.Set{"env": "preview"}) || first.Selector.Matches(labels.Set{"env": "prod"}) || first.SelectorText != "env=preview":
		t.Errorf("first rule's selector: %v (%q)", first.Selector, first.SelectorText)
	case second.Selector != nil || !second.SelectsName("ci") || second.SelectsName("other"):
		t.Errorf("second rule: %+v", second)
	case !first.SelectsName("any"):
		t.Error("a rule without names selects every name")
	}
	for gr, want := range map[schema.GroupResource]bool{
		{Resource: "configmaps"}: true, {Group: "apps", Resource: "deployments"}: true, {Resource: "secrets"}: false, {Group: "batch", Resource: "jobs"}: false,
	} {
		if got := e.HasRulesFor(gr); got != want {
			t.Errorf("HasRulesFor(%s) = %t, want %t", gr, got, want)
		}
	}
	if !e.NeedsNamespaceLabels() {
		t.Error("a rule with a selector needs the namespaces' labels")
	}

	for name, tc := range map[string]struct {
		spec ownergcv1alpha1.ExpiryCollector
		err  string
	}{
		"warnBefore too short": {ownergcv1alpha1.ExpiryCollector{WarnBefore: &metav1.Duration{Duration: time.Millisecond}}, "warnBefore"},
		"after too long":       {ownergcv1alpha1.ExpiryCollector{Rules: []ownergcv1alpha1.ExpiryRule{rule("", "configmaps", 100000*time.Hour, nil, &metav1.LabelSelector{})}}, "rules[0]: after"},
		"no namespaces":        {ownergcv1alpha1.ExpiryCollector{Rules: []ownergcv1alpha1.ExpiryRule{rule("", "configmaps", time.Hour, nil, nil)}}, "namespaces or a namespaceSelector"},
		"no resource":          {ownergcv1alpha1.ExpiryCollector{Rules: []ownergcv1alpha1.ExpiryRule{rule("", "", time.Hour, nil, &metav1.LabelSelector{})}}, "resource is required"},
		"bad selector": {ownergcv1alpha1.ExpiryCollector{Rules: []ownergcv1alpha1.ExpiryRule{rule("", "configmaps", time.Hour, nil,
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}})}}, "namespaceSelector"},
	} {
		if _, err := FromSpec(&ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{Expiry: tc.spec}}, 1); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want one naming %q", name, err, tc.err)
		}
	}
}
