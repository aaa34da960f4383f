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

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/policy"
)

func expiryEnabled(t *testing.T, rules ...ownergcv1alpha1.ExpiryRule) *policy.Policy {
	t.Helper()
	p, err := policy.FromSpec(&ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{Expiry: ownergcv1alpha1.ExpiryCollector{
		Enabled: true, Rules: rules}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Without the manager, why says when the object expires, by the decision
// model, from what the caller may read: a namespace it may not get leaves
// a rule's choice not known.
func TestWhyFromAPISaysWhenTheObjectExpires(t *testing.T) {
	rule := ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "preview"}}, After: metav1.Duration{Duration: 48 * time.Hour}}
	for _, tc := range []struct {
		name   string
		annot  map[string]string
		labels func() (map[string]string, error)
		words  string
	}{
		{name: "annotated", annot: map[string]string{ownergcv1alpha1.TTLAnnotation: "7d"}, words: "by annotation ownergc.io/ttl=7d"},
		{name: "by a rule", labels: func() (map[string]string, error) { return map[string]string{"env": "preview"}, nil },
			words: "by rule 1 of the GCPolicy (configmaps in namespaces labelled env=preview, 2d after creation)"},
		{name: "a namespace you may not get", labels: func() (map[string]string, error) { return nil, errors.New("you may not get namespace ns") },
			words: "not known: whether rule 1 of the GCPolicy"},
		{name: "an unreadable annotation", annot: map[string]string{ownergcv1alpha1.ExpiresAnnotation: "soon"},
			words: `annotation ownergc.io/expires="soon" cannot be read`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := cm("x", "x")
			o.meta.Annotations = tc.annot
			f := facts(o)
			f.policy = policyView{policy: expiryEnabled(t, rule), fromObject: true}
			f.namespaceLabels = tc.labels
			r := explainFromAPI(f)
			if !strings.Contains(r.Expiry, tc.words) || r.Verdict.Expiry == nil {
				t.Fatalf("expiry %q (%+v), want it to say %q", r.Expiry, r.Verdict.Expiry, tc.words)
			}
			var b strings.Builder
			if err := renderWhy(&b, &r, now, painter(false)); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "Expiry:       ") {
				t.Errorf("why does not print the expiry:\n%s", b.String())
			}
		})
	}
}

// expiring lists the next first, with when, by what and what ownergc does.
func TestRenderExpiring(t *testing.T) {
	p := expiryEnabled(t)
	item := func(name string, annotations map[string]string) ExpiringItem {
		o := cm(name, types.UID("u-"+name))
		o.meta.Annotations = annotations
		e := decision.ExpiryOf(decision.ObjectOf(&o.meta, o.resource.GroupResource()), p, decision.ExpiryContext{Now: now})
		return ExpiringItem{Object: o.ref(), Expiry: e, Words: e.String()}
	}
	l := Expiring{Items: []ExpiringItem{
		item("due", map[string]string{ownergcv1alpha1.TTLAnnotation: "30m"}),
		item("later", map[string]string{ownergcv1alpha1.ExpiresAnnotation: "2026-05-01T15:12:00Z"}),
		item("bad", map[string]string{ownergcv1alpha1.TTLAnnotation: "7days"}),
	}}
	var b strings.Builder
	if err := renderExpiring(&b, l, true, now); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"NAMESPACE  OBJECT",
		"ns         ConfigMap/due    2026-05-01T11:30:00Z  due 30m ago  ttl=30m",
		"deletes it now (Background)",
		"ConfigMap/later  2026-05-01T15:12:00Z  3h12m",
		"expires=2026-05-01T15:12:00Z  deletes it (Background)",
		`ttl="7days"`, "never: the annotation cannot be read",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the list does not say %q:\n%s", want, got)
		}
	}
	b.Reset()
	if err := renderExpiring(&b, Expiring{}, false, now); err != nil || b.String() != "Nothing expires.\n" {
		t.Errorf("an empty list: %q, %v", b.String(), err)
	}
}
