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

package decision

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/policy"
)

func TestParseTTL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "36h", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "2w", want: 14 * 24 * time.Hour},
		{in: "1w2d", want: 9 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "30s", want: 30 * time.Second},
		{in: "1500ms", want: 1500 * time.Millisecond},
		{in: "", err: "empty"},
		{in: "7", err: "no unit"},
		{in: "7days", err: "unknown unit"},
		{in: "d", err: "does not start with a number"},
		{in: "-1h", err: "does not start with a number"},
		{in: " 1h", err: "does not start with a number"},
		{in: "1h ", err: "unknown unit"},
		{in: "0s", err: "shorter than one second"},
		{in: "500ms", err: "shorter than one second"},
		{in: "1..5h", err: "not a number"},
		{in: "99999w", err: "longer than 100 years"},
		{in: "forever", err: "does not start with a number"},
	} {
		got, err := ParseTTL(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseTTL(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseExpires(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{in: "2026-07-01T18:00:00Z", want: time.Date(2026, 7, 1, 18, 0, 0, 0, time.UTC), ok: true},
		{in: "2026-07-01T20:00:00+02:00", want: time.Date(2026, 7, 1, 18, 0, 0, 0, time.UTC), ok: true},
		{in: "2026-07-01T18:00:00.5Z", want: time.Date(2026, 7, 1, 18, 0, 0, 5e8, time.UTC), ok: true},
		{in: "2026-07-01", want: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), ok: true},
		{in: ""},
		{in: "tomorrow"},
		{in: "2026-07-01 18:00"},
		{in: "2026-07-01T18:00"},
		{in: "2026-13-01"},
		{in: "07/01/2026"},
	} {
		got, err := ParseExpires(tc.in)
		switch {
		case !tc.ok && err == nil:
			t.Errorf("ParseExpires(%q) = %v; want an error", tc.in, got)
		case tc.ok && (err != nil || !got.Equal(tc.want)):
			t.Errorf("ParseExpires(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestHumanize(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 400 * time.Millisecond: "0s", 59*time.Minute + 59500*time.Millisecond: "1h", 12 * time.Second: "12s", 45*time.Minute + 10*time.Second: "45m10s",
		3*time.Hour + 12*time.Minute + 5*time.Second: "3h12m", time.Hour + 30*time.Second: "1h",
		52 * time.Hour: "2d4h", 7 * 24 * time.Hour: "7d", -90 * time.Second: "-1m30s", math.MinInt64: "-0s",
	} {
		if got := Humanize(d); got != want {
			t.Errorf("Humanize(%v) = %q, want %q", d, got, want)
		}
	}
}

var (
	created = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now     = created.Add(time.Hour)
)

// expiryPolicy is a policy with expiry enabled (unless changed) and the
// rules.
func expiryPolicy(t *testing.T, change func(*ownergcv1alpha1.GCPolicySpec), rules ...ownergcv1alpha1.ExpiryRule) *policy.Policy {
	t.Helper()
	spec := ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{Expiry: ownergcv1alpha1.ExpiryCollector{Enabled: true, Rules: rules}}}
	if change != nil {
		change(&spec)
	}
	p, err := policy.FromSpec(&spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rule(resource string, after time.Duration, namespaces []string, selector *metav1.LabelSelector) ownergcv1alpha1.ExpiryRule {
	r := ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: resource}, NamespaceSelector: selector,
		After: metav1.Duration{Duration: after}}
	for _, ns := range namespaces {
		r.Namespaces = append(r.Namespaces, ownergcv1alpha1.NamespaceName(ns))
	}
	return r
}

func labelled(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func TestExpiryOf(t *testing.T) {
	ttl, expires := ownergcv1alpha1.TTLAnnotation, ownergcv1alpha1.ExpiresAnnotation
	cm := func(annotations ...string) Object {
		o := Object{Resource: configMaps, Namespace: "ns", Name: "cm", Created: created, Annotations: map[string]string{}}
		for i := 0; i+1 < len(annotations); i += 2 {
			o.Annotations[annotations[i]] = annotations[i+1]
		}
		return o
	}
	preview := map[string]string{"env": "preview"}
	labels := func(l map[string]string, err error) func() (map[string]string, error) {
		return func() (map[string]string, error) { return l, err }
	}
	enabled := expiryPolicy(t, nil)
	for _, tc := range []struct {
		name   string
		obj    Object
		policy *policy.Policy
		labels func() (map[string]string, error)
		// state "" means it does not expire (nil).
		state ExpiryState
		at    time.Time
		by    ExpirySource
		rule  int
		// words are fragments of its words.
		words []string
	}{
		{name: "no annotation, no rule", obj: cm(), policy: enabled},
		{name: "ttl later", obj: cm(ttl, "7d"), policy: enabled, state: ExpiryScheduled, at: created.Add(7 * 24 * time.Hour), by: ByTTL,
			words: []string{"expires at 2026-05-08T12:00:00Z (in 6d23h), by annotation ownergc.io/ttl=7d", "propagation Background"}},
		{name: "ttl passed", obj: cm(ttl, "30m"), policy: enabled, state: ExpiryDue, at: created.Add(30 * time.Minute), by: ByTTL,
			words: []string{"expired at 2026-05-01T12:30:00Z (30m ago)", "deletes it now with propagation Background"}},
		{name: "expires, a time", obj: cm(expires, "2026-05-01T15:12:00Z"), policy: enabled, state: ExpiryScheduled,
			at: time.Date(2026, 5, 1, 15, 12, 0, 0, time.UTC), by: ByExpires, words: []string{"(in 2h12m), by annotation ownergc.io/expires=2026-05-01T15:12:00Z"}},
		{name: "expires, a date", obj: cm(expires, "2026-05-03"), policy: enabled, state: ExpiryScheduled,
			at: time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC), by: ByExpires},
		{name: "both: ttl earlier", obj: cm(ttl, "2h", expires, "2026-05-03"), policy: enabled, state: ExpiryScheduled, at: created.Add(2 * time.Hour), by: ByTTL},
		{name: "both: expires earlier", obj: cm(ttl, "2w", expires, "2026-05-03"), policy: enabled, state: ExpiryScheduled,
			at: time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC), by: ByExpires},
		{name: "ttl unreadable", obj: cm(ttl, "7days"), policy: enabled, state: ExpiryInvalid,
			words: []string{"does not expire", `annotation ownergc.io/ttl="7days" cannot be read (unknown unit "days"): it accepts a duration`}},
		{name: "both unreadable", obj: cm(ttl, "soon", expires, "tomorrow"), policy: enabled, state: ExpiryInvalid,
			words: []string{`ownergc.io/ttl="soon"`, `ownergc.io/expires="tomorrow" cannot be read`, "RFC 3339"}},
		{name: "one unreadable, the other decides", obj: cm(ttl, "soon", expires, "2026-05-03"), policy: enabled, state: ExpiryScheduled, by: ByExpires,
			at: time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC), words: []string{`ownergc.io/ttl="soon" cannot be read`}},
		{name: "unreadable annotation: no rule applies", obj: cm(ttl, "soon"), state: ExpiryInvalid,
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, []string{"ns"}, nil))},
		{name: "disabled", obj: cm(ttl, "7d"), policy: policy.Defaults(), state: ExpiryDisabled, at: created.Add(7 * 24 * time.Hour), by: ByTTL,
			words: []string{"would expire at 2026-05-08T12:00:00Z", "not enabled (spec.collectors.expiry.enabled"}},
		{name: "policy not known", obj: cm(ttl, "7d"), state: ExpiryDisabled, at: created.Add(7 * 24 * time.Hour), by: ByTTL,
			words: []string{"unless the GCPolicy, which could not be read, enables it"}},
		{name: "ignored resource", obj: cm(ttl, "30m"), state: ExpiryIgnored, at: created.Add(30 * time.Minute), by: ByTTL,
			policy: expiryPolicy(t, func(s *ownergcv1alpha1.GCPolicySpec) {
				s.IgnoredResources = []ownergcv1alpha1.GroupResource{{Resource: "configmaps"}}
			}), words: []string{"its resource configmaps is ignored"}},
		{name: "protected by annotation", obj: cm(ttl, "30m", ownergcv1alpha1.ProtectedAnnotation, "true"), policy: enabled, state: ExpiryProtected,
			at: created.Add(30 * time.Minute), by: ByTTL, words: []string{"protected (annotation ownergc.io/protected=true): it never expires"}},
		{name: "protected namespace", obj: cm(ttl, "30m"), state: ExpiryProtected, at: created.Add(30 * time.Minute), by: ByTTL,
			policy: expiryPolicy(t, func(s *ownergcv1alpha1.GCPolicySpec) {
				s.Protection.Namespaces = []ownergcv1alpha1.NamespaceName{"ns"}
			}), words: []string{"namespace ns is protected"}},
		{name: "dry run", obj: cm(ttl, "30m"), state: ExpiryDue, at: created.Add(30 * time.Minute), by: ByTTL,
			policy: expiryPolicy(t, func(s *ownergcv1alpha1.GCPolicySpec) { s.Mode = ownergcv1alpha1.ModeDryRun }),
			words:  []string{"would delete it now (the GCPolicy's mode is DryRun"}},
		{name: "propagation override", obj: cm(ttl, "30m"), state: ExpiryDue, at: created.Add(30 * time.Minute), by: ByTTL,
			policy: expiryPolicy(t, func(s *ownergcv1alpha1.GCPolicySpec) {
				s.PropagationOverrides = []ownergcv1alpha1.PropagationOverride{{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
					Propagation: ownergcv1alpha1.PropagationForeground}}
			}), words: []string{"with propagation Foreground (the GCPolicy's propagation for configmaps)"}},
		{name: "rule by namespace name", obj: cm(), state: ExpiryScheduled, at: created.Add(7 * 24 * time.Hour), by: ByRule, rule: 2,
			policy: expiryPolicy(t, nil, rule("secrets", time.Minute, []string{"ns"}, nil), rule("configmaps", 7*24*time.Hour, []string{"other", "ns"}, nil)),
			words:  []string{"by rule 2 of the GCPolicy (configmaps in namespaces other, ns, 7d after creation)"}},
		{name: "rule of another namespace", obj: cm(), policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, []string{"other"}, nil))},
		{name: "rule by label", obj: cm(), labels: labels(preview, nil), state: ExpiryDue, at: created.Add(time.Minute), by: ByRule, rule: 1,
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, nil, labelled("env", "preview"))),
			words:  []string{"by rule 1 of the GCPolicy (configmaps in namespaces labelled env=preview, 1m after creation)"}},
		{name: "rule by label, not matching", obj: cm(), labels: labels(map[string]string{"env": "prod"}, nil),
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, nil, labelled("env", "preview")))},
		{name: "rule by label and name: both must match", obj: cm(), labels: labels(preview, nil),
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, []string{"other"}, labelled("env", "preview")))},
		{name: "every namespace", obj: cm(), state: ExpiryDue, by: ByRule, rule: 1, at: created.Add(time.Minute), labels: labels(nil, nil),
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, nil, &metav1.LabelSelector{})), words: []string{"configmaps in every namespace"}},
		{name: "labels not known", obj: cm(), labels: labels(nil, errors.New("forbidden")), state: ExpiryUnknown, by: ByRule, rule: 1,
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, nil, labelled("env", "preview"))),
			words:  []string{"not known: whether rule 1 of the GCPolicy", "labels of namespace ns, which could not be read (forbidden)"}},
		{name: "labels not asked for when an earlier rule decides", obj: cm(), labels: labels(nil, errors.New("must not be read")), state: ExpiryDue,
			by: ByRule, rule: 1, at: created.Add(time.Minute),
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, []string{"ns"}, nil), rule("configmaps", time.Hour, nil, labelled("env", "preview")))},
		{name: "annotation wins over a rule", obj: cm(ttl, "7d"), state: ExpiryScheduled, by: ByTTL, at: created.Add(7 * 24 * time.Hour),
			policy: expiryPolicy(t, nil, rule("configmaps", time.Minute, []string{"ns"}, nil))},
		{name: "resource * of the group", obj: cm(), state: ExpiryDue, by: ByRule, rule: 1, at: created.Add(time.Minute),
			policy: expiryPolicy(t, nil, rule("*", time.Minute, []string{"ns"}, nil)), words: []string{"every resource of the core group in namespaces ns"}},
		{name: "being deleted", obj: func() Object { o := cm(ttl, "30m"); o.Deleting = true; return o }(), policy: enabled, state: ExpiryDeleting,
			at: created.Add(30 * time.Minute), by: ByTTL},
		{name: "a Namespace, by a rule on its own labels", state: ExpiryDue, by: ByRule, rule: 1, at: created.Add(time.Minute),
			obj:    Object{Resource: namespacesResource, Name: "preview-1", Created: created, Labels: preview},
			policy: expiryPolicy(t, nil, rule("namespaces", time.Minute, nil, labelled("env", "preview")))},
		{name: "a Namespace, by a rule on its name", state: ExpiryDue, by: ByRule, rule: 1, at: created.Add(time.Minute),
			obj:    Object{Resource: namespacesResource, Name: "preview-1", Created: created},
			policy: expiryPolicy(t, nil, rule("namespaces", time.Minute, []string{"preview-1"}, nil))},
		{name: "a cluster-scoped object: no rule selects it", obj: Object{Resource: schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
			Name: "r", Created: created}, policy: expiryPolicy(t, nil, rule("*", time.Minute, nil, &metav1.LabelSelector{}))},
		{name: "a cluster-scoped object by annotation", state: ExpiryDue, by: ByTTL, at: created.Add(time.Minute),
			obj: Object{Resource: schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, Name: "r", Created: created,
				Annotations: map[string]string{ttl: "1m"}}, policy: enabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ExpiryOf(tc.obj, tc.policy, ExpiryContext{NamespaceLabels: tc.labels, Now: now})
			if tc.state == "" {
				if e != nil {
					t.Fatalf("ExpiryOf = %+v (%s), want nil: it does not expire", e, e)
				}
				return
			}
			if e == nil {
				t.Fatalf("ExpiryOf = nil, want %s", tc.state)
			}
			words := e.String()
			if e.State != tc.state || !e.When().Equal(tc.at) || e.By != tc.by || e.Rule != tc.rule {
				t.Errorf("ExpiryOf = %s at %v by %s rule %d, want %s at %v by %s rule %d (%s)", e.State, e.When(), e.By, e.Rule,
					tc.state, tc.at, tc.by, tc.rule, words)
			}
			for _, w := range tc.words {
				if !strings.Contains(words, w) {
					t.Errorf("words %q\ndo not say %q", words, w)
				}
			}
			if _, err := json.Marshal(e); err != nil {
				t.Errorf("the expiry does not marshal: %v", err)
			}
		})
	}
}

// Decide says when the object expires only when asked, and only of an
// object that exists; its other rules are unchanged.
func TestDecideAsksForExpiry(t *testing.T) {
	obj := Object{Resource: configMaps, Namespace: "ns", Created: created, Annotations: map[string]string{ownergcv1alpha1.TTLAnnotation: "30m"}}
	p := expiryPolicy(t, nil)
	if d := Decide(Input{Object: obj, Policy: p}); d.Expiry != nil {
		t.Errorf("not asked, Decide said %s", d.Expiry)
	}
	d := Decide(Input{Object: obj, Policy: p, Expiry: &ExpiryContext{Now: now}})
	if d.Action != Keep || d.Reason != ReasonNoOwners || !d.Expiry.Due() {
		t.Errorf("Decide = %s %s, expiry %s; want Keep NoOwners and the expiry due", d.Action, d.Reason, d.Expiry)
	}
	absent := obj
	absent.Absent = true
	if d := Decide(Input{Object: absent, Policy: p, Expiry: &ExpiryContext{Now: now}}); d.Expiry != nil {
		t.Errorf("an absent object expires: %s", d.Expiry)
	}
}
