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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/policy"
)

// What an explanation says the collector does with an object is what the
// collector does: in every state of the decision model, the explanation's
// verdict, asked before the collector works, names the requests the
// collector then sends about the object.
func TestExplanationAgreesWithWhatTheCollectorDoes(t *testing.T) {
	protect := func(p *policy.Policy) { p.ProtectedNamespaces = []string{"ns"} }
	override := func(p *policy.Policy) {
		p.PropagationOverrides = []policy.PropagationOverride{{GroupResource: schema.GroupResource{Resource: "configmaps"}, Propagation: metav1.DeletePropagationOrphan}}
	}
	dryRun := func(p *policy.Policy) { p.DryRun = true }
	for _, c := range []struct {
		name string
		// setUp builds the objects and returns the one asked about.
		setUp  func(h *harness) *metav1.PartialObjectMetadata
		policy func(*policy.Policy)
		want   decision.Action
	}{
		{"a solid owner", func(h *harness) *metav1.PartialObjectMetadata {
			owner := configMap("owner")
			subject := configMap("subject", ownedBy(owner, false))
			h.observe(owner, subject)
			return subject
		}, nil, decision.Keep},
		{"a dangling owner", subjectOfGoneOwner, nil, decision.Delete},
		{"a solid and a dangling owner", func(h *harness) *metav1.PartialObjectMetadata {
			alive, gone := configMap("alive"), configMap("gone")
			h.observe(alive, gone)
			subject := configMap("subject", ownedBy(alive, false), ownedBy(gone, false))
			h.observe(subject)
			h.gone(gone)
			return subject
		}, nil, decision.RemoveReferences},
		{"a waiting owner, dependents of its own", func(h *harness) *metav1.PartialObjectMetadata {
			owner := configMap("owner")
			subject := configMap("subject", ownedBy(owner, true))
			h.observe(owner, subject, configMap("child", ownedBy(subject, false)))
			h.observe(configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents)))
			return subject
		}, nil, decision.Delete},
		{"an owner of a kind not served", func(h *harness) *metav1.PartialObjectMetadata {
			subject := configMap("subject", ownedBy(object("nope.example.com/v1", "Ghost", "ns", "ghost"), false))
			h.observe(subject)
			return subject
		}, nil, decision.Keep},
		{"a cluster-scoped object owned by a namespaced kind", func(h *harness) *metav1.PartialObjectMetadata {
			subject := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "subject", ownedBy(configMap("owner"), false))
			h.observe(subject)
			return subject
		}, nil, decision.Keep},
		{"protected by its annotation", func(h *harness) *metav1.PartialObjectMetadata {
			owner := configMap("owner")
			subject := configMap("subject", ownedBy(owner, false), protectedAnnotation())
			h.observe(owner, subject)
			h.gone(owner)
			return subject
		}, nil, decision.Protect},
		{"protected by its namespace", subjectOfGoneOwner, protect, decision.Protect},
		{"a propagation override", subjectOfGoneOwner, override, decision.Delete},
		{"dry run", subjectOfGoneOwner, dryRun, decision.Delete},
		{"being deleted in the foreground, nothing blocks", func(h *harness) *metav1.PartialObjectMetadata {
			subject := configMap("subject", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
			h.observe(subject, configMap("loose", ownedBy(subject, false)))
			return subject
		}, nil, decision.RemoveForegroundFinalizer},
		{"being deleted in the foreground, a dependent blocks", func(h *harness) *metav1.PartialObjectMetadata {
			subject := configMap("subject", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
			h.observe(subject, configMap("held", ownedBy(subject, true), withFinalizers("example.com/hold")))
			return subject
		}, nil, decision.WaitForDependents},
		{"being deleted with the orphan policy", func(h *harness) *metav1.PartialObjectMetadata {
			subject := configMap("subject", beingDeleted(), withFinalizers(metav1.FinalizerOrphanDependents))
			h.observe(subject, configMap("child", ownedBy(subject, false)))
			return subject
		}, nil, decision.Orphan},
		{"being deleted, another finalizer", func(h *harness) *metav1.PartialObjectMetadata {
			owner := configMap("owner")
			subject := configMap("subject", ownedBy(owner, false), beingDeleted(), withFinalizers("example.com/hold"))
			h.observe(owner, subject)
			h.gone(owner)
			return subject
		}, nil, decision.WaitForFinalizers},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if c.policy != nil {
				withPolicy(h, c.policy)
			}
			subject := c.setUp(h)
			ex := h.c.Explain(context.Background(), targetOf(subject), 10, allowAll)
			v := ex.Verdict
			if v == nil || v.Action != c.want || ex.Decision != v.String() {
				t.Fatalf("explanation: verdict %+v, decision %q; want %s", v, ex.Decision, c.want)
			}
			h.drain()
			var about []call
			for _, call := range h.api.calls {
				if call.verb != "get" && (call.name == subject.Name || v.Action == decision.Orphan) {
					about = append(about, call)
				}
			}
			switch {
			case v.DryRun || !v.Action.Writes():
				if len(about) != 0 {
					t.Fatalf("the explanation says %q, the collector wrote %v", ex.Decision, about)
				}
			case v.Action == decision.Delete:
				if len(about) != 1 || about[0].verb != "delete" || *about[0].delete.PropagationPolicy != v.Propagation {
					t.Fatalf("the explanation says %q, the collector sent %v", ex.Decision, about)
				}
			case v.Action == decision.RemoveForegroundFinalizer:
				if len(about) != 1 || about[0].verb != "patch" || !strings.Contains(about[0].patch, `"finalizers":[]`) {
					t.Fatalf("the explanation says %q, the collector sent %v", ex.Decision, about)
				}
			case v.Action == decision.Orphan:
				if len(about) != 2 || about[0].name != "child" || about[1].name != subject.Name {
					t.Fatalf("the explanation says %q, the collector sent %v", ex.Decision, about)
				}
			default: // RemoveReferences, Protect
				if len(about) != 1 || about[0].verb != "patch" || !strings.Contains(about[0].patch, `"$patch":"delete"`) {
					t.Fatalf("the explanation says %q, the collector sent %v", ex.Decision, about)
				}
			}
		})
	}
}

// subjectOfGoneOwner is a ConfigMap "subject" whose only owner is gone.
func subjectOfGoneOwner(h *harness) *metav1.PartialObjectMetadata {
	owner := configMap("owner")
	subject := configMap("subject", ownedBy(owner, false))
	h.observe(owner, subject)
	h.gone(owner)
	return subject
}
