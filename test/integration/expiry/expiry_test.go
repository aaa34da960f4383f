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

package expiry_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/test/framework"
)

var (
	namespaces   = framework.Kind{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	clusterRoles = framework.Kind{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole"}
)

// Each form of the annotations expires its object at its time, and not
// before; with both, the earlier wins; the forms that take longer are
// scheduled, not deleted.
func TestAnnotationForms(t *testing.T) {
	m := startManager(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())
	ns := framework.CreateNamespace(t, cp.Client)
	cm := func(name string, opts ...framework.Option) framework.Object {
		return cp.Create(t, framework.ConfigMaps, ns, name, opts...)
	}
	// 8 seconds: a ttl counts from the creation time, which the API
	// server keeps to the second; the objects are created and the test
	// checks they survive within that time.
	due := []framework.Object{
		cm("ttl-seconds", ttl("8s")),
		cm("ttl-combined", ttl("0.1m2s")), // Go's units, combined, a decimal
		cm("expires-utc", expires(in(8*time.Second))),
		cm("expires-offset", expires(time.Now().Add(8*time.Second).In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano))),
		cm("both-ttl-earlier", ttl("8s"), expires(in(time.Hour))),
		cm("both-expires-earlier", ttl("2w"), expires(in(8*time.Second))),
	}
	past := []framework.Object{
		cm("expires-a-date-past", expires(time.Now().Add(-48*time.Hour).UTC().Format(time.DateOnly))),
	}
	later := []framework.Object{
		cm("ttl-days", ttl("7d")), cm("ttl-weeks", ttl("2w")), cm("ttl-days-hours", ttl("1d12h")),
		cm("expires-a-date", expires(time.Now().Add(48*time.Hour).UTC().Format(time.DateOnly))),
		cm("plain"),
	}
	cp.WaitGone(t, "an expires date in the past: due at once", past...)
	cp.Survive(t, "8 seconds have not passed: not before their time", due...)
	cp.WaitGone(t, "their time has come", due...)
	cp.SurviveIntact(t, "their time is to come", later...)
	if st := expiryStatus(t, m.Engine); st.Deleted < int64(len(due)+len(past)) || st.Scheduled < 4 {
		t.Errorf("expiry status %+v: want %d deleted and the 4 later ones scheduled", st, len(due)+len(past))
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := framework.PolicyStatus(t, cp.Client).Collectors; st == nil || !st.Expiry.Enabled || !st.Expiry.Synced || st.Expiry.Deleted < 7 || st.Expiry.Scheduled < 4 {
			return fmt.Errorf("status.collectors %+v", st)
		}
		return nil
	}, "status.collectors.expiry should report the deletions and the schedule")
}

// An annotation that cannot be read gets a Warning event InvalidExpiry
// naming the value and the forms accepted, once, and deletes nothing, not
// even by a rule that selects the object.
func TestUnreadableAnnotationsDeleteNothing(t *testing.T) {
	m := startManager(t)
	ns := framework.CreateNamespace(t, cp.Client)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(ownergcv1alpha1.ExpiryRule{
		GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"}, Namespaces: []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(ns)},
		After: metav1.Duration{Duration: time.Second}}))
	for _, tc := range []struct {
		name, key, value, words string
	}{
		{"ttl-days-spelled", ownergcv1alpha1.TTLAnnotation, "7days", `unknown unit "days"`},
		{"ttl-negative", ownergcv1alpha1.TTLAnnotation, "-1h", "does not start with a number"},
		{"ttl-empty", ownergcv1alpha1.TTLAnnotation, "", "it is empty"},
		{"expires-words", ownergcv1alpha1.ExpiresAnnotation, "tomorrow", "neither an RFC 3339 time nor a date"},
		{"expires-no-zone", ownergcv1alpha1.ExpiresAnnotation, "2020-01-01T00:00", "neither an RFC 3339 time nor a date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := cp.Create(t, framework.ConfigMaps, ns, tc.name, annotated(tc.key, tc.value))
			note := waitEvent(t, o, "InvalidExpiry")
			for _, want := range []string{fmt.Sprintf("annotation %s=%q cannot be read", tc.key, tc.value), tc.words, "it accepts", "does not expire"} {
				if !strings.Contains(note, want) {
					t.Errorf("the event says %q, not %q", note, want)
				}
			}
			cp.SurviveIntact(t, "an annotation that cannot be read is never a reason to delete, and the rule does not apply", o)
			if evs := events(t, ns, o.UID, "InvalidExpiry"); len(evs) != 1 {
				t.Errorf("%d InvalidExpiry events, want one: %q", len(evs), evs)
			}
		})
	}
	if st := expiryStatus(t, m.Engine); st.Invalid < 5 {
		t.Errorf("expiry status %+v, want 5 invalid", st)
	}
}

// Rules select by namespace name and by the labels of the namespace, which
// are followed live; objects the rules do not select stay.
func TestRulesByNamespaceNameAndLabel(t *testing.T) {
	startManager(t)
	byName, byLabel, other := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	relabel := func(ns string, env string) {
		cp.Update(t, namespaceObject(t, ns), func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"env": env, "kubernetes.io/metadata.name": ns})
		})
	}
	relabel(byLabel, "preview")
	relabel(other, "prod")
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(
		ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
			Namespaces: []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(byName)}, After: metav1.Duration{Duration: 3 * time.Second}},
		ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "preview"}}, After: metav1.Duration{Duration: 3 * time.Second}},
	))
	named := cp.Create(t, framework.ConfigMaps, byName, "named")
	labelled := cp.Create(t, framework.ConfigMaps, byLabel, "labelled")
	unselected := cp.Create(t, framework.ConfigMaps, other, "unselected")
	secret := cp.Create(t, framework.Secrets, byName, "another-resource")
	annotatedLater := cp.Create(t, framework.ConfigMaps, byName, "annotated-later", ttl("1h"))
	cp.WaitGone(t, "a rule selects them", named, labelled)
	cp.SurviveIntact(t, "no rule selects them; an annotation wins over a rule", unselected, secret, annotatedLater)
	relabel(other, "preview")
	cp.WaitGone(t, "its namespace was labelled env=preview: the second rule selects it now, and its time has passed", unselected)
}

// A Namespace and a cluster-scoped object expire by their annotations; a
// rule for namespaces selects Namespaces by their own labels.
func TestNamespacesAndClusterScopedObjects(t *testing.T) {
	startManager(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "namespaces"},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ownergc.test/expire": "by-rule"}}, After: metav1.Duration{Duration: 2 * time.Second}}))
	suffix := fmt.Sprint(time.Now().UnixNano())
	annotatedNS := cp.Create(t, namespaces, "", "expiring-"+suffix, ttl("2s"))
	ruledNS := cp.Create(t, namespaces, "", "ruled-"+suffix, framework.WithLabels(map[string]string{"ownergc.test/expire": "by-rule"}))
	keptNS := cp.Create(t, namespaces, "", "kept-"+suffix)
	role := cp.Create(t, clusterRoles, "", "expiring-"+suffix, expires(in(2*time.Second)))
	waitDeleting(t, annotatedNS, "the annotated Namespace should be deleted (Terminating)")
	waitDeleting(t, ruledNS, "the Namespace a rule selects by its own labels should be deleted")
	cp.WaitGone(t, "the annotated ClusterRole should be deleted", role)
	if u, ok := cp.Get(t, keptNS); !ok || u.GetDeletionTimestamp() != nil {
		t.Errorf("the Namespace nothing selects was deleted")
	}
}

// A custom resource of a CRD installed after the manager started expires:
// its monitor observes it, and the schedule follows.
func TestCustomResourceOfANewCRD(t *testing.T) {
	startManager(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())
	ns := framework.CreateNamespace(t, cp.Client)
	crd := framework.CRD{Group: framework.UniqueGroup("expiry"), Kind: "Sandbox", Plural: "sandboxes", Scope: apiextensionsv1.NamespaceScoped}
	sandboxes, _ := cp.CreateCRD(t, crd)
	t.Cleanup(func() { cp.DeleteCRD(t, crd) })
	due := cp.Create(t, sandboxes, ns, "due", ttl("3s"))
	later := cp.Create(t, sandboxes, ns, "later", ttl("1h"))
	cp.WaitGone(t, "the custom resource's time has come", due)
	cp.SurviveIntact(t, "its time is to come", later)
}

// Protection wins over expiry; DryRun decides, counts and deletes nothing;
// switched to Enforce, what is due goes.
func TestProtectionAndDryRun(t *testing.T) {
	const user = "ownergc-expiry-dry-run"
	m := cp.StartManager(t, framework.ManagerOptions{StatusRefresh: time.Second, User: user})
	resetOnCleanup(t)
	ns, protectedNS := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	setExpiry(t, ownergcv1alpha1.ModeDryRun, enabled(), func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Protection.Namespaces = []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(protectedNS)}
	})
	due := cp.Create(t, framework.ConfigMaps, ns, "due", ttl("1s"))
	protected := cp.Create(t, framework.ConfigMaps, ns, "protected", annotated(ownergcv1alpha1.ProtectedAnnotation, "true"), ttl("1s"))
	inProtectedNS := cp.Create(t, framework.ConfigMaps, protectedNS, "in-protected-namespace", ttl("1s"))
	cp.DeleteOnCleanup(t, protected, inProtectedNS) // due, once nothing protects them
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := expiryStatus(t, m.Engine); st.DryRunDeletions != 1 {
			return fmt.Errorf("%d dry-run deletions", st.DryRunDeletions)
		}
		return nil
	}, "in DryRun the due object's deletion should be decided and counted, the protected ones' not")
	cp.SurviveIntact(t, "DryRun deletes nothing", due, protected, inProtectedNS)
	writes, err := cp.Writes(user)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if w.ObjectRef.Resource == "configmaps" {
			t.Fatalf("ownergc wrote in DryRun: %v", w)
		}
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := framework.PolicyStatus(t, cp.Client).Collectors; st == nil || st.Expiry.DryRunDeletions != 1 {
			return fmt.Errorf("status.collectors %+v", st)
		}
		return nil
	}, "status.collectors.expiry should count the dry-run deletion")

	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(), func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Protection.Namespaces = []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(protectedNS)}
	})
	cp.WaitGone(t, "in Enforce the due object goes at once", due)
	cp.SurviveIntact(t, "protection wins over expiry", protected, inProtectedNS)
	// One request per expired object: its DELETE.
	writes, err = cp.Writes(user)
	if err != nil {
		t.Fatal(err)
	}
	var toConfigMaps []string
	for _, w := range writes {
		if w.ObjectRef.Resource == "configmaps" {
			toConfigMaps = append(toConfigMaps, w.String())
		}
	}
	if len(toConfigMaps) != 1 || !strings.Contains(toConfigMaps[0], "delete") || !strings.Contains(toConfigMaps[0], "/due (200)") {
		t.Errorf("ownergc's writes to ConfigMaps: %v, want one DELETE of the due one", toConfigMaps)
	}
}

// An annotation removed or extended before the object's time: it is not
// deleted; the extension is followed.
func TestAnnotationRemovedOrExtended(t *testing.T) {
	startManager(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())
	ns := framework.CreateNamespace(t, cp.Client)
	at := in(10 * time.Second) // time to change them before, on a busy machine too
	removed := cp.Create(t, framework.ConfigMaps, ns, "removed", expires(at))
	extended := cp.Create(t, framework.ConfigMaps, ns, "extended", expires(at))
	shortened := cp.Create(t, framework.ConfigMaps, ns, "shortened", ttl("1h"))
	control := cp.Create(t, framework.ConfigMaps, ns, "control", expires(at))
	cp.Update(t, removed, func(u *unstructured.Unstructured) { u.SetAnnotations(nil) })
	cp.Update(t, extended, func(u *unstructured.Unstructured) { expires(in(time.Hour))(u) })
	cp.Update(t, shortened, func(u *unstructured.Unstructured) { ttl("1s")(u) })
	cp.WaitGone(t, "the annotation was shortened to a time past", shortened)
	cp.WaitGone(t, "unchanged, its time has come", control)
	cp.Survive(t, "the annotation was removed or extended before the time", removed, extended)
}

// An object changed between the decision and the deletion fails the
// precondition: it is not deleted, and its new version is decided again —
// extended, it stays; changed otherwise, it goes.
func TestObjectChangedBetweenDecisionAndDeletion(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	var mu sync.Mutex
	changed := map[string]error{}
	change := map[string]func(*unstructured.Unstructured){
		"extended": func(u *unstructured.Unstructured) { ttl("1h")(u) },
		"relabelled": func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"changed": "yes"})
		},
	}
	m := startOwnManager(t, managerOptions{beforeDelete: func(_ context.Context, obj *graph.Object) {
		mu.Lock()
		defer mu.Unlock()
		if _, done := changed[obj.Name]; !done && obj.Namespace == ns && change[obj.Name] != nil {
			_, changed[obj.Name] = cp.TryUpdate(t, framework.Object{Kind: framework.ConfigMaps, Namespace: ns, Name: obj.Name, UID: obj.UID}, change[obj.Name])
		}
	}})
	resetOnCleanup(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())
	extended := cp.Create(t, framework.ConfigMaps, ns, "extended", ttl("1s"))
	relabelled := cp.Create(t, framework.ConfigMaps, ns, "relabelled", ttl("1s"))
	cp.WaitGone(t, "changed after the decision, but still due: decided again from its new version, and deleted", relabelled)
	cp.Survive(t, "extended after the decision: the precondition failed, and its new version is not due", extended)
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"extended", "relabelled"} {
		if err, done := changed[name]; !done || err != nil {
			t.Fatalf("%s was not changed between decision and deletion: %v", name, err)
		}
	}
	if st := expiryStatus(t, m.engine); st.Deleted < 1 || st.Scheduled < 1 {
		t.Errorf("expiry status %+v: want the relabelled one deleted, the extended one scheduled", st)
	}
}

// warnBefore: a Warning event ExpiresSoon, once, before the object's time.
func TestWarnBefore(t *testing.T) {
	startManager(t)
	e := enabled()
	e.WarnBefore = &metav1.Duration{Duration: time.Hour}
	setExpiry(t, ownergcv1alpha1.ModeEnforce, e)
	ns := framework.CreateNamespace(t, cp.Client)
	soon := cp.Create(t, framework.ConfigMaps, ns, "soon", ttl("30m"))
	later := cp.Create(t, framework.ConfigMaps, ns, "later", ttl("3h"))
	note := waitEvent(t, soon, "ExpiresSoon")
	if !strings.Contains(note, "expires at") || !strings.Contains(note, "by annotation ownergc.io/ttl=30m") {
		t.Errorf("the ExpiresSoon event says %q", note)
	}
	cp.Update(t, soon, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"touched": "yes"}) })
	cp.SurviveIntact(t, "their time is to come", later)
	if evs := events(t, ns, soon.UID, "ExpiresSoon"); len(evs) != 1 {
		t.Errorf("%d ExpiresSoon events, want one: %q", len(evs), evs)
	}
	if evs := events(t, ns, later.UID, "ExpiresSoon"); len(evs) != 0 {
		t.Errorf("warned about an object three hours from its time: %q", evs)
	}
}

// An ignored resource never expires; no longer ignored, its objects whose
// time has passed go.
func TestIgnoredResourcesNeverExpire(t *testing.T) {
	startManager(t)
	ignoreSecrets := func(s *ownergcv1alpha1.GCPolicySpec) {
		s.IgnoredResources = append(ownergcv1alpha1.DefaultIgnoredResources(), ownergcv1alpha1.GroupResource{Resource: "secrets"})
	}
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(), ignoreSecrets)
	ns := framework.CreateNamespace(t, cp.Client)
	secret := cp.Create(t, framework.Secrets, ns, "ignored", ttl("1s"))
	cp.SurviveIntact(t, "its resource is ignored", secret)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(), func(s *ownergcv1alpha1.GCPolicySpec) {
		s.IgnoredResources = ownergcv1alpha1.DefaultIgnoredResources()
	})
	cp.WaitGone(t, "its resource is no longer ignored, and its time has passed", secret)
}

// Disabled, the collector deletes nothing; enabled live, it deletes what
// is due and reports it; disabled again, nothing more.
func TestEnabledAndDisabledLive(t *testing.T) {
	m := startManager(t)
	ns := framework.CreateNamespace(t, cp.Client)
	before := cp.Create(t, framework.ConfigMaps, ns, "before", ttl("1s"))
	if st := expiryStatus(t, m.Engine); st.Enabled || st.Running || st.Scheduled != 0 {
		t.Fatalf("expiry off by default: %+v", st)
	}
	cp.SurviveIntact(t, "expiry is off", before)

	p := setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())
	ready := apimeta.FindStatusCondition(p.Status.Conditions, ownergcv1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, "expiry") {
		t.Errorf("Ready: %q, want it to name the expiry collector", ready.Message)
	}
	cp.WaitGone(t, "enabled live, expiry deletes what is due", before)

	setExpiry(t, ownergcv1alpha1.ModeEnforce, ownergcv1alpha1.ExpiryCollector{})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := expiryStatus(t, m.Engine); st.Running {
			return fmt.Errorf("still running: %+v", st)
		}
		if st := framework.PolicyStatus(t, cp.Client).Collectors; st == nil || st.Expiry.Enabled {
			return fmt.Errorf("status.collectors %+v", st)
		}
		return nil
	}, "disabled, the collector should stop and say so")
	after := cp.Create(t, framework.ConfigMaps, ns, "after", ttl("1s"))
	cp.DeleteOnCleanup(t, after) // due, once expiry is on
	cp.SurviveIntact(t, "expiry is off again", after)
}

// A rule naming no served resource is reported in the ExpiryRulesResolved
// condition, with a Warning event, and expires nothing.
func TestUnmatchedRulesAreReported(t *testing.T) {
	startManager(t)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmap"},
		NamespaceSelector: &metav1.LabelSelector{}, After: metav1.Duration{Duration: time.Hour}}))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		c := apimeta.FindStatusCondition(framework.PolicyStatus(t, cp.Client).Conditions, ownergcv1alpha1.ConditionExpiryRulesResolved)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ownergcv1alpha1.ReasonUnmatchedRules ||
			!strings.Contains(c.Message, `rule 1 {group: "", resource: "configmap"}`) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	}, "the ExpiryRulesResolved condition should name the rule that matches no served resource")
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled())
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		c := apimeta.FindStatusCondition(framework.PolicyStatus(t, cp.Client).Conditions, ownergcv1alpha1.ConditionExpiryRulesResolved)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	}, "without the rule, ExpiryRulesResolved should be True")
}

// The schema refuses what expiry cannot take, naming the field.
func TestTheSchemaNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  ownergcv1alpha1.ExpiryCollector
		field string
	}{
		{name: "warnBefore too long", spec: ownergcv1alpha1.ExpiryCollector{WarnBefore: &metav1.Duration{Duration: 9000 * time.Hour}},
			field: "spec.collectors.expiry.warnBefore"},
		{name: "after too long", spec: enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
			NamespaceSelector: &metav1.LabelSelector{}, After: metav1.Duration{Duration: 100000 * time.Hour}}), field: "spec.collectors.expiry.rules[0].after"},
		{name: "no namespace selected", spec: enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
			After: metav1.Duration{Duration: time.Hour}}), field: "spec.collectors.expiry.rules[0].namespaces"},
		{name: "a resource of capitals", spec: enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "ConfigMaps"},
			NamespaceSelector: &metav1.LabelSelector{}, After: metav1.Duration{Duration: time.Hour}}), field: "spec.collectors.expiry.rules[0].resource"},
		{name: "a namespace that is no DNS label", spec: enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
			Namespaces: []ownergcv1alpha1.NamespaceName{"Not_A_Label"}, After: metav1.Duration{Duration: time.Hour}}), field: "spec.collectors.expiry.rules[0].namespaces[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
			p.Spec.Collectors.Expiry = tc.spec
			err := cp.Client.Create(framework.Context(t), p, client.DryRunAll)
			if err == nil {
				t.Fatalf("the API server took %+v", tc.spec)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("the error does not name %s: %v", tc.field, err)
			}
		})
	}
}
