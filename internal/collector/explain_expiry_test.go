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

package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/policy"
)

// An explanation says when the object expires, from the object read live:
// by its annotation, or by a rule — whose namespace labels it reads only
// when the reader may get the namespace.
func TestExplanationSaysWhenTheObjectExpires(t *testing.T) {
	annotated := func(k, v string) objOpt {
		return func(o *metav1.PartialObjectMetadata) {
			o.Annotations = map[string]string{k: v}
			o.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour))
		}
	}
	created := func(o *metav1.PartialObjectMetadata) {
		o.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour))
	}
	denyNamespaces := func(o explain.Object) explain.Access {
		if o.Kind == "Namespace" {
			return explain.Denied
		}
		return explain.Allowed
	}
	spec := ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{Expiry: ownergcv1alpha1.ExpiryCollector{Enabled: true,
		Rules: []ownergcv1alpha1.ExpiryRule{{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "preview"}}, After: metav1.Duration{Duration: 7 * 24 * time.Hour}}}}}}
	for _, tc := range []struct {
		name    string
		obj     *metav1.PartialObjectMetadata
		visible explain.Visibility
		state   decision.ExpiryState
		words   string
	}{
		{name: "by annotation", obj: configMap("ttl", annotated(ownergcv1alpha1.TTLAnnotation, "7d")), visible: allowAll,
			state: decision.ExpiryScheduled, words: "(in 6d23h), by annotation ownergc.io/ttl=7d"},
		{name: "an annotation that cannot be read", obj: configMap("bad", annotated(ownergcv1alpha1.ExpiresAnnotation, "tomorrow")), visible: allowAll,
			state: decision.ExpiryInvalid, words: `annotation ownergc.io/expires="tomorrow" cannot be read`},
		{name: "by a rule on the namespace's labels", obj: configMap("ruled", created), visible: allowAll,
			state: decision.ExpiryScheduled, words: "by rule 1 of the GCPolicy (configmaps in namespaces labelled env=preview, 7d after creation)"},
		{name: "a namespace the reader may not get", obj: configMap("hidden", created), visible: denyNamespaces,
			state: decision.ExpiryUnknown, words: "which could not be read (you may not get namespace ns)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p, err := policy.FromSpec(&spec, 1)
			if err != nil {
				t.Fatal(err)
			}
			h.policy.Set(p)
			h.api.put("namespaces", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"env": "preview"}}})
			h.observe(tc.obj)
			ex := h.c.Explain(context.Background(), targetOf(tc.obj), 5, tc.visible)
			if ex.Verdict.Expiry == nil || ex.Verdict.Expiry.State != tc.state || !strings.Contains(ex.Expiry, tc.words) {
				t.Fatalf("expiry %q (%+v), want %s saying %q", ex.Expiry, ex.Verdict.Expiry, tc.state, tc.words)
			}
			for _, c := range h.explainAPI.calls {
				if c.resource == "namespaces" && tc.state == decision.ExpiryUnknown {
					t.Errorf("read the namespace its reader may not get: %v", c)
				}
			}
			if len(h.api.calls) != 0 {
				t.Errorf("the explanation used the collector's client: %v", h.api.calls)
			}
		})
	}
}
