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

package plugin_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/test/framework"
)

// One decision, four voices: for every state the explanations cover, what
// the collector does, what /explain says, and what `kubectl ownergc why`
// says with the manager and without it (from API reads and the GCPolicy
// alone) agree — the same verdict (action, rule, propagation, dry-run) and
// the same words, which say what the collector then does.
//
// The objects asked about are held: an admission policy refuses the
// collector's writes to them, so that its attempt shows in its queue
// (which request it sent: a DELETE with its propagation, or a patch) while
// every explanation looks at a state that stays put. Then the test lets go
// and sees the collector carry the decision out.
func TestWhatTheCollectorDoesIsWhatEveryExplanationSays(t *testing.T) {
	ns, protectedNS := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	holdWrites(t, ns, protectedNS)
	// One who may read everything, the GCPolicy included: what the
	// plugin can learn without the manager is all there is to learn.
	who := cp.NewIdentity(t, ns, "differential", true, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}})
	d := &differential{who: who, kubeconfig: kubeconfig(t, who, ns)}
	framework.WaitPolicyInForce(t, cp.Client, "the manager should create the GCPolicy default")
	missing := func() metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: uuid.NewUUID()}
	}
	// ownersGone: a held object whose only owner never existed, which the
	// collector deletes with propagation (from) once it may.
	ownersGone := func(t *testing.T, name string, propagation metav1.DeletionPropagation, from decision.Source) {
		subject := cp.Create(t, framework.ConfigMaps, ns, name, held(), framework.OwnedBy(missing()))
		d.agree(t, subject, verdict{Action: decision.Delete, Reason: decision.ReasonOwnersGone, Propagation: propagation, PropagationFrom: from})
		release(t, subject)
		cp.WaitGone(t, "the collector deletes it once it may", subject)
	}

	t.Run("a solid owner", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "live-owner")
		subject := cp.Create(t, framework.ConfigMaps, ns, "kept", held(), framework.OwnedBy(owner.Ref(false)))
		d.agree(t, subject, verdict{Action: decision.Keep, Reason: decision.ReasonOwnerExists})
	})
	t.Run("a dangling owner", func(t *testing.T) {
		ownersGone(t, "orphaned", metav1.DeletePropagationBackground, decision.FromDefault)
	})
	t.Run("a solid and a dangling owner", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "remaining-owner")
		subject := cp.Create(t, framework.ConfigMaps, ns, "half-orphaned", held(), framework.OwnedBy(owner.Ref(false), missing()))
		d.agree(t, subject, verdict{Action: decision.RemoveReferences, Reason: decision.ReasonOwnerExists})
		release(t, subject)
		cp.WaitOwners(t, subject, "the collector removes the dangling reference once it may", owner.UID)
	})
	t.Run("a waiting owner", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "waiting-owner")
		subject := cp.Create(t, framework.ConfigMaps, ns, "blocking", held(), framework.OwnedBy(owner.Ref(true)))
		child := cp.Create(t, framework.ConfigMaps, ns, "blocking-child", framework.OwnedBy(subject.Ref(false)))
		manager.WaitObserved(t, owner, subject, child)
		cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
		d.agree(t, subject, verdict{Action: decision.Delete, Reason: decision.ReasonOwnerWaiting,
			Propagation: metav1.DeletePropagationForeground, PropagationFrom: decision.FromWaitingOwner})
		release(t, subject)
		cp.WaitGone(t, "the collector deletes it in the foreground, then its owner's deletion completes", child, subject, owner)
	})
	t.Run("an owner of a kind not served", func(t *testing.T) {
		ghost := metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "ghost", UID: uuid.NewUUID()}
		subject := cp.Create(t, framework.ConfigMaps, ns, "haunted", held(), framework.OwnedBy(ghost))
		d.agree(t, subject, verdict{Action: decision.Keep, Reason: decision.ReasonOwnerUnverifiable})
	})
	t.Run("a cluster-scoped object with an owner of a namespaced kind", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "namespaced-owner")
		clusterRoles := framework.Kind{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole"}
		subject := cp.Create(t, clusterRoles, "", ns+"-unverifiable", framework.OwnedBy(owner.Ref(false)))
		cp.DeleteOnCleanup(t, subject)
		d.agree(t, subject, verdict{Action: decision.Keep, Reason: decision.ReasonOwnerUnverifiable})
		cp.SurviveIntact(t, "an owner that cannot be verified is never a reason to delete", subject)
	})
	t.Run("protected by its annotation", func(t *testing.T) {
		subject := cp.Create(t, framework.ConfigMaps, ns, "annotated", held(), framework.Protected, framework.OwnedBy(missing()))
		d.agree(t, subject, verdict{Action: decision.Protect, Reason: decision.ReasonProtectedAnnotation})
		release(t, subject)
		cp.WaitOwners(t, subject, "the collector removes its references instead of deleting it")
	})
	t.Run("being deleted in the foreground", func(t *testing.T) {
		subject := cp.Create(t, framework.ConfigMaps, ns, "fg-owner")
		dependent := cp.CreateHeld(t, framework.ConfigMaps, ns, "fg-held", framework.OwnedBy(subject.Ref(true)))
		manager.WaitObserved(t, subject, dependent)
		cp.DeleteWith(t, subject, metav1.DeletePropagationForeground)
		cp.WaitDeleting(t, dependent, framework.HoldFinalizer, "the collector deletes the blocking dependent")
		hold(t, subject)
		d.agree(t, subject, verdict{Action: decision.WaitForDependents, Reason: decision.ReasonBlockingDependents})
		cp.RemoveFinalizer(t, dependent, framework.HoldFinalizer)
		cp.WaitGone(t, "the blocking dependent goes once its finalizer is removed", dependent)
		d.agree(t, subject, verdict{Action: decision.RemoveForegroundFinalizer, Reason: decision.ReasonNoBlockingDependents})
		release(t, subject)
		cp.WaitGone(t, "the collector removes its foregroundDeletion finalizer once it may", subject)
	})
	t.Run("being deleted with the orphan policy", func(t *testing.T) {
		subject := cp.Create(t, framework.ConfigMaps, ns, "orphaning-owner")
		child := cp.Create(t, framework.ConfigMaps, ns, "orphaned-child", held(), framework.OwnedBy(subject.Ref(false)))
		manager.WaitObserved(t, subject, child)
		cp.DeleteWith(t, subject, metav1.DeletePropagationOrphan)
		d.agree(t, subject, verdict{Action: decision.Orphan, Reason: decision.ReasonOrphanFinalizer})
		release(t, child)
		cp.WaitOwners(t, child, "the collector orphans it once it may")
		cp.WaitGone(t, "the orphaning deletion completes", subject)
	})
	t.Run("an ignored resource", func(t *testing.T) {
		events := framework.Kind{GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
		subject := cp.Create(t, events, ns, "an-event", framework.OwnedBy(missing()), func(u *unstructured.Unstructured) {
			u.Object["involvedObject"] = map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "x"}
			u.Object["reason"], u.Object["message"] = "Test", "an event"
		})
		d.agree(t, subject, verdict{Action: decision.Ignore, Reason: decision.ReasonIgnored})
		cp.SurviveIntact(t, "the collector never writes to an ignored resource", subject)
	})

	// A GCPolicy that protects a namespace and deletes ConfigMaps in the
	// foreground.
	restore := framework.WaitPolicyInForce(t, cp.Client, "the GCPolicy should be in force").Spec
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) { *s = restore })
	})
	foregroundConfigMaps := []ownergcv1alpha1.PropagationOverride{{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"}, Propagation: ownergcv1alpha1.PropagationForeground}}
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Protection.Namespaces = []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(protectedNS)}
		s.PropagationOverrides = foregroundConfigMaps
	})
	t.Run("protected by its namespace", func(t *testing.T) {
		subject := cp.Create(t, framework.ConfigMaps, protectedNS, "in-a-protected-namespace", held(), framework.OwnedBy(missing()))
		d.agree(t, subject, verdict{Action: decision.Protect, Reason: decision.ReasonProtectedNamespace})
		release(t, subject)
		cp.WaitOwners(t, subject, "the collector removes its references instead of deleting it")
	})
	t.Run("a propagation override", func(t *testing.T) {
		ownersGone(t, "overridden", metav1.DeletePropagationForeground, decision.FromOverride)
	})

	// The report: DryRun, a Foreground override for ConfigMaps, a
	// ConfigMap annotated protected whose owner is gone.
	d.dryRunBefore = map[string]float64{}
	for _, action := range dryRunActions {
		d.dryRunBefore[action] = testutil.ToFloat64(metrics.DryRunDecisions.WithLabelValues(action))
	}
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Protection.Namespaces = nil
		s.Mode = ownergcv1alpha1.ModeDryRun
	})
	t.Run("DryRun, protected by its annotation, an override", func(t *testing.T) {
		subject := cp.Create(t, framework.ConfigMaps, ns, "dry-annotated", held(), framework.Protected, framework.OwnedBy(missing()))
		d.agree(t, subject, verdict{Action: decision.Protect, Reason: decision.ReasonProtectedAnnotation, DryRun: true})
	})
	t.Run("DryRun, an override", func(t *testing.T) {
		subject := cp.Create(t, framework.ConfigMaps, ns, "dry-overridden", held(), framework.OwnedBy(missing()))
		d.agree(t, subject, verdict{Action: decision.Delete, Reason: decision.ReasonOwnersGone,
			Propagation: metav1.DeletePropagationForeground, PropagationFrom: decision.FromOverride, DryRun: true})
	})
}

// verdict is what the test compares of decisions.
type verdict struct {
	Action          decision.Action
	Reason          decision.Reason
	Propagation     metav1.DeletionPropagation
	PropagationFrom decision.Source
	DryRun          bool
	UnblockFirst    bool
	PolicyUnknown   bool
}

func verdictOf(d *decision.Decision) verdict {
	if d == nil {
		return verdict{Action: "(no verdict)"}
	}
	return verdict{Action: d.Action, Reason: d.Reason, Propagation: d.Propagation, PropagationFrom: d.PropagationFrom,
		DryRun: d.DryRun, UnblockFirst: d.UnblockFirst, PolicyUnknown: d.PolicyUnknown}
}

// differential asks about objects as who, who may read everything.
type differential struct {
	who        framework.Identity
	kubeconfig string
	// dryRunBefore are the collector's dry-run decisions counted before
	// the policy went DryRun, by action.
	dryRunBefore map[string]float64
}

// dryRunActions are the collector's dry-run actions of the decisions that
// write.
var dryRunActions = map[decision.Action]string{decision.Delete: "delete", decision.Protect: "removeReferences",
	decision.RemoveReferences: "removeReferences", decision.RemoveForegroundFinalizer: "removeFinalizer", decision.Orphan: "orphan"}

// whyAnswer is the plugin's JSON answer.
type whyAnswer struct {
	Source string `json:"source"`
	explain.Explanation
}

// agree waits until the manager's explanation of o gives the verdict
// want, then checks that the plugin, with the manager and without it,
// gives the same verdict in the same words, and that the collector does
// what they say.
func (d *differential) agree(t *testing.T, o framework.Object, want verdict) {
	t.Helper()
	var ex explain.Explanation
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		ex = d.explain(t, o)
		if got := verdictOf(ex.Verdict); got.Action != want.Action || got.Reason != want.Reason {
			return fmt.Errorf("the manager's verdict is %+v (%q)", got, ex.Decision)
		}
		return nil
	}, "the manager should explain %s as %s (%s)", o, want.Action, want.Reason)
	if got := verdictOf(ex.Verdict); got != want {
		t.Errorf("/explain: verdict %+v, want %+v", got, want)
	}

	args := []string{"why", o.GVR.Resource + "/" + o.Name}
	if o.Namespace != "" {
		args = append(args, "-n", o.Namespace)
	}
	unreachable := []string{"--server-url", "https://127.0.0.1:1", "--manager-insecure-skip-tls-verify"}
	for _, c := range []struct {
		what   string
		source string
		flags  []string
	}{{"why with the manager", "Manager", withManager()}, {"why without the manager", "API", unreachable}} {
		var a whyAnswer
		decode(t, mustRun(t, d.kubeconfig, append(append(args, c.flags...), "-o", "json")...), &a)
		if a.Source != c.source {
			t.Errorf("%s: explained by %q, want %q", c.what, a.Source, c.source)
		}
		if got := verdictOf(a.Verdict); got != want {
			t.Errorf("%s: verdict %+v, want %+v (%q)", c.what, got, want, a.Decision)
		}
		printed := decisionLine(t, mustRun(t, d.kubeconfig, append(args, c.flags...)...))
		// The manager names no owner whose access it cannot review (of
		// a kind not served): without it, the plugin names it.
		if c.source == "API" && ex.HiddenOwners > 0 {
			continue
		}
		if a.Decision != ex.Decision || printed != ex.Decision {
			t.Errorf("%s says %q (prints %q), /explain says %q", c.what, a.Decision, printed, ex.Decision)
		}
	}
	d.collectorDoes(t, o, want)
}

// explain asks the manager's /explain about o.
func (d *differential) explain(t *testing.T, o framework.Object) explain.Explanation {
	t.Helper()
	code, ex := manager.Explain(t, d.who, explain.Query(o.GVR, o.Namespace, o.Name).Encode())
	if code != 200 {
		t.Fatalf("/explain of %s answered %d", o, code)
	}
	return ex
}

// collectorDoes checks what the collector does with o against want: the
// request it tries (refused while o is held, and reported in its queue),
// or none — and then, in dry-run, that it counts the decision.
func (d *differential) collectorDoes(t *testing.T, o framework.Object, want verdict) {
	t.Helper()
	tried := func() string {
		m := heldRequest.FindStringSubmatch(d.explain(t, o).Queue.LastError)
		if m == nil {
			return ""
		}
		return m[1]
	}
	var expect string
	switch {
	case want.DryRun || !want.Action.Writes():
	case want.Action == decision.Delete:
		expect = "DELETE with propagation " + string(want.Propagation)
	default:
		expect = "UPDATE"
	}
	if expect != "" {
		framework.Eventually(t, framework.CascadeTimeout, func() error {
			if got := tried(); got != expect {
				return fmt.Errorf("the collector tried %q", got)
			}
			return nil
		}, "the explanations say %s: the collector should try %s on %s", want.Action, expect, o)
		return
	}
	framework.Consistently(t, framework.Quiet, func() error {
		if got := tried(); got != "" {
			return fmt.Errorf("the explanations say %s, and the collector tried %s", want.Action, got)
		}
		return nil
	}, "the collector should write nothing to %s", o)
	if want.DryRun {
		action := dryRunActions[want.Action]
		framework.Eventually(t, framework.CascadeTimeout, func() error {
			if n := testutil.ToFloat64(metrics.DryRunDecisions.WithLabelValues(action)); n <= d.dryRunBefore[action] {
				return fmt.Errorf("no dry-run decision %s counted", action)
			}
			return nil
		}, "in dry-run, the collector counts what it would do")
	}
}

// heldRequest finds, in an error of the collector, the request the
// admission policy of holdWrites refused.
var heldRequest = regexp.MustCompile(`held by the differential test: ([A-Z]+(?: with propagation \w+)?)`)

// decisionLine returns what the plugin printed as the decision.
func decisionLine(t *testing.T, r result) string {
	t.Helper()
	for _, l := range strings.Split(r.Stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "Decision:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no decision printed:\n%s", r)
	return ""
}

// heldLabel marks the ConfigMaps whose writes holdWrites refuses.
const heldLabel = "ownergc.test/held"

func held() framework.Option { return framework.WithLabels(map[string]string{heldLabel: "true"}) }

// hold labels o held.
func hold(t *testing.T, o framework.Object) {
	t.Helper()
	cp.Update(t, o, func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[heldLabel] = "true"
		u.SetLabels(l)
	})
}

// release lets the collector write to o again.
func release(t *testing.T, o framework.Object) {
	t.Helper()
	cp.Update(t, o, func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		delete(l, heldLabel)
		u.SetLabels(l)
	})
}

// holdWrites makes the API server refuse, in the namespaces, to delete a
// held ConfigMap or to change one that stays held — the collector's
// deletions and patches — saying which request it refused (a deletion with
// its propagation); labelling and releasing are allowed. It waits until
// the policy is in force.
func holdWrites(t *testing.T, namespaces ...string) {
	t.Helper()
	labelled := func(o string) string {
		return o + " != null && has(" + o + ".metadata.labels) && '" + heldLabel + "' in " + o + ".metadata.labels"
	}
	configMapPolicy{
		name: "hold-" + namespaces[0],
		ops:  []admissionregistrationv1.OperationType{admissionregistrationv1.Delete, admissionregistrationv1.Update},
		variables: []admissionregistrationv1.Variable{
			{Name: "heldBefore", Expression: labelled("oldObject")},
			{Name: "heldAfter", Expression: labelled("object")},
		},
		validation: admissionregistrationv1.Validation{
			Expression: "!variables.heldBefore || (request.operation == 'UPDATE' && !variables.heldAfter)",
			Message:    "held by the differential test: " + "refused",
			MessageExpression: "'held by the differential test: ' + request.operation + " +
				"(request.operation == 'DELETE' ? ' with propagation ' + string(request.options.propagationPolicy) : '')",
		},
		namespaces: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces}}},
		objects: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: heldLabel, Operator: metav1.LabelSelectorOpExists}}},
	}.enforce(t, func() error {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0], Name: "held-probe", Labels: map[string]string{heldLabel: "true"}}}
		create(t, probe)
		err := cp.Client.Delete(framework.Context(t), probe, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err == nil || !strings.Contains(err.Error(), "held by the differential test: DELETE with propagation Background") {
			return fmt.Errorf("deleting a held ConfigMap: %v", err)
		}
		return nil
	}, "the admission policy should hold ConfigMaps")
}
