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
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Expiry configures the expiry collector (spec.collectors.expiry).
type Expiry struct {
	Enabled bool
	// WarnBefore is how long before an object expires it gets a Warning
	// event ExpiresSoon; zero: none.
	WarnBefore time.Duration
	// Rules give a time to live to the objects that carry no expiry
	// annotation; the first that matches decides.
	Rules []ExpiryRule
}

// ExpiryRule is one rule of spec.collectors.expiry.rules.
type ExpiryRule struct {
	// GroupResource is the resource it expires (Resource "*": every
	// resource of the group).
	schema.GroupResource
	// Namespaces, when not nil, are the namespaces it selects by name.
	Namespaces []string
	// Selector, when not nil, selects the namespaces by their labels.
	// With both, a namespace must be named and match.
	Selector labels.Selector
	// SelectorText is the selector as written ("env=preview"), for words.
	SelectorText string
	// After is how long after its creation an object it selects expires.
	After time.Duration
}

// Matches reports whether the rule's resource is gr.
func (r *ExpiryRule) Matches(gr schema.GroupResource) bool {
	return r.Group == gr.Group && (r.Resource == "*" || r.Resource == gr.Resource)
}

// NeedsLabels reports whether the rule selects namespaces by their labels.
func (r *ExpiryRule) NeedsLabels() bool { return r.Selector != nil }

// SelectsName reports whether the namespace's name passes the rule's list
// of names (always, without one).
func (r *ExpiryRule) SelectsName(namespace string) bool {
	return r.Namespaces == nil || slices.Contains(r.Namespaces, namespace)
}

// NeedsNamespaceLabels reports whether some rule selects namespaces by
// their labels: the expiry collector then follows the Namespaces' labels.
func (e *Expiry) NeedsNamespaceLabels() bool {
	return slices.ContainsFunc(e.Rules, func(r ExpiryRule) bool { return r.NeedsLabels() })
}

// HasRulesFor reports whether some rule names resource gr.
func (e *Expiry) HasRulesFor(gr schema.GroupResource) bool {
	return slices.ContainsFunc(e.Rules, func(r ExpiryRule) bool { return r.Matches(gr) })
}

// expiryFromSpec converts spec.collectors.expiry; values the schema
// refuses are errors.
func expiryFromSpec(spec *ownergcv1alpha1.ExpiryCollector) (Expiry, error) {
	out := Expiry{Enabled: spec.Enabled}
	if w := spec.WarnBefore; w != nil {
		if w.Duration < ownergcv1alpha1.MinCollectorDuration || w.Duration > ownergcv1alpha1.MaxCollectorDuration {
			return out, fmt.Errorf("collectors.expiry.warnBefore %s is outside %s..%s", w.Duration,
				ownergcv1alpha1.MinCollectorDuration, ownergcv1alpha1.MaxCollectorDuration)
		}
		out.WarnBefore = w.Duration
	}
	if len(spec.Rules) > ownergcv1alpha1.MaxExpiryRules {
		return out, fmt.Errorf("collectors.expiry.rules has %d rules, at most %d", len(spec.Rules), ownergcv1alpha1.MaxExpiryRules)
	}
	for i, r := range spec.Rules {
		rule, err := expiryRuleFromSpec(&r)
		if err != nil {
			return out, fmt.Errorf("collectors.expiry.rules[%d]: %w", i, err)
		}
		out.Rules = append(out.Rules, rule)
	}
	return out, nil
}

func expiryRuleFromSpec(r *ownergcv1alpha1.ExpiryRule) (ExpiryRule, error) {
	out := ExpiryRule{GroupResource: schema.GroupResource{Group: r.Group, Resource: r.Resource}, After: r.After.Duration}
	switch {
	case r.Resource == "":
		return out, fmt.Errorf("resource is required")
	case r.After.Duration < time.Second || r.After.Duration > ownergcv1alpha1.MaxExpiryAfter:
		return out, fmt.Errorf("after %s is outside 1s..%s", r.After.Duration, ownergcv1alpha1.MaxExpiryAfter)
	case r.Namespaces == nil && r.NamespaceSelector == nil:
		return out, fmt.Errorf("namespaces or a namespaceSelector is required")
	}
	if r.Namespaces != nil {
		out.Namespaces = make([]string, 0, len(r.Namespaces))
		for _, ns := range r.Namespaces {
			out.Namespaces = append(out.Namespaces, string(ns))
		}
	}
	if r.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(r.NamespaceSelector)
		if err != nil {
			return out, fmt.Errorf("namespaceSelector: %w", err)
		}
		out.Selector, out.SelectorText = sel, metav1.FormatLabelSelector(r.NamespaceSelector)
	}
	return out, nil
}
