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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/policy"
)

// facts are the API reads about obj, with the defaults in force.
func facts(obj *listedObject, owners ...ownerLookup) apiFacts {
	return apiFacts{target: obj.ref(), resource: obj.resource.GroupResource(), obj: &metav1.PartialObjectMetadata{ObjectMeta: obj.meta},
		owners: owners, policy: policyView{policy: policy.Defaults()}}
}

func lookupOf(o *listedObject, status, reason string) ownerLookup {
	l := ownerLookup{reference: ownedBy(o, false, false), ref: o.ref(), status: status, reason: reason}
	if status == explain.OwnerSolid || status == explain.OwnerWaiting {
		l.obj = &metav1.PartialObjectMetadata{ObjectMeta: o.meta}
	}
	return l
}

func dependentsOf(owner *listedObject, objs ...*listedObject) []dependentEdge {
	return indexDependents(objs)[owner.meta.UID]
}

// A foreground deletion: each blocking dependent says why it remains.
func TestExplainFromAPIForegroundDeletion(t *testing.T) {
	owner := deleting(cm("owner", "o"), 10*time.Minute, metav1.FinalizerDeleteDependents)
	held := deleting(cm("held", "h", ownedBy(owner, false, true)), 9*time.Minute, "example.com/hold")
	nested := deleting(cm("nested", "n", ownedBy(owner, false, true)), 9*time.Minute, metav1.FinalizerDeleteDependents)
	late := cm("late", "l", ownedBy(owner, false, true))
	late.meta.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	waiting := cm("waiting", "w", ownedBy(owner, false, true))
	loose := cm("loose", "x", ownedBy(owner, false, false))
	f := facts(owner)
	f.dependents = dependentsOf(owner, held, nested, late, waiting, loose)
	r := explainFromAPI(f)

	remains := map[string]string{}
	for _, d := range r.Dependents {
		remains[d.Name] = d.Remains
	}
	for name, want := range map[string]string{
		"held":    "it carries finalizers example.com/hold",
		"nested":  "it is itself being deleted in the foreground and waits for its own dependents",
		"late":    "it was created after the deletion started",
		"waiting": "it is not being deleted yet: the collector should delete it (whether it tries and fails is not known without the manager)",
		"loose":   "", // it does not block
	} {
		if remains[name] != want {
			t.Errorf("%s remains: %q, want %q", name, remains[name], want)
		}
	}
	if want := "being deleted in the foreground: it waits until its blocking dependents are gone (4 listed, 0 hidden)"; r.Decision != want {
		t.Errorf("decision: %q, want %q", r.Decision, want)
	}
	if r.Source != SourceAPI || r.Graph != GraphUnknown || r.Deletion == nil || !r.Deletion.Foreground {
		t.Errorf("explanation: %+v", r)
	}
}

func TestExplainFromAPIDecisions(t *testing.T) {
	owner := cm("owner", "o")
	other := cm("other", "p")
	dep := cm("dep", "d", ownedBy(owner, true, true), ownedBy(other, false, false))
	single := cm("single", "s", ownedBy(owner, true, true))
	ghost := ownerLookup{ref: objectRef{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "ghost"}, status: explain.OwnerUnverifiable, reason: "its kind is not served"}

	withPolicy := func(f apiFacts, spec ownergcv1alpha1.GCPolicySpec) apiFacts {
		p, err := policy.FromSpec(&spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.policy = policyView{policy: p, fromObject: true}
		return f
	}
	unknownPolicy := func(f apiFacts) apiFacts {
		f.policy = policyView{unknown: "you may not get the GCPolicy default"}
		return f
	}
	incomplete := func(f apiFacts) apiFacts {
		f.incomplete = []string{"1 resources you may not list (secrets)"}
		return f
	}
	protected := cm("protected", "pr", ownedBy(owner, true, true))
	protected.meta.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
	dryRunForeground := ownergcv1alpha1.GCPolicySpec{Mode: ownergcv1alpha1.ModeDryRun, PropagationOverrides: []ownergcv1alpha1.PropagationOverride{
		{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"}, Propagation: ownergcv1alpha1.PropagationForeground}}}
	event := cm("an-event", "e")
	event.resource = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	orphaning := deleting(cm("orphaning", "or"), time.Minute, metav1.FinalizerOrphanDependents)
	finalized := deleting(cm("finalized", "fi"), time.Minute, "example.com/a", "example.com/b")
	waitingOwner := deleting(cm("waiting-owner", "wo"), time.Minute, metav1.FinalizerDeleteDependents)
	middle := cm("middle", "mi", ownedBy(waitingOwner, false, true))
	below := cm("below", "be", ownedBy(middle, false, true))
	withDependents := facts(middle, lookupOf(waitingOwner, explain.OwnerWaiting, "it is being deleted in the foreground"))
	withDependents.dependents = dependentsOf(middle, below)

	for _, c := range []struct {
		name string
		f    apiFacts
		want string
	}{
		{"no owners", facts(owner), "kept: it has no owner references, and the collector deletes only objects whose owners are gone"},
		{"an owner exists", facts(single, lookupOf(owner, explain.OwnerSolid, "it exists")), "kept: owner ConfigMap owner exists"},
		{"one owner exists, one is gone", facts(dep, lookupOf(owner, explain.OwnerSolid, "it exists"), lookupOf(other, explain.OwnerDangling, "no such object")),
			"kept: owner ConfigMap owner exists; ownergc removes its references to ConfigMap other"},
		{"all owners gone", facts(single, lookupOf(owner, explain.OwnerDangling, "no such object")),
			"will be deleted with propagation Background: all its owners are gone"},
		{"all owners gone, the GCPolicy says Foreground", withPolicy(facts(single, lookupOf(owner, explain.OwnerDangling, "no such object")), ownergcv1alpha1.GCPolicySpec{DefaultPropagation: ownergcv1alpha1.PropagationForeground}),
			"will be deleted with propagation Foreground: all its owners are gone"},
		{"all owners gone, the GCPolicy unknown", unknownPolicy(facts(single, lookupOf(owner, explain.OwnerDangling, "no such object"))),
			"will be deleted with propagation Background (unless the GCPolicy, which could not be read, says otherwise): all its owners are gone"},
		{"an owner that cannot be verified", facts(single, ghost, lookupOf(owner, explain.OwnerDangling, "no such object")),
			"kept: owner Ghost ghost cannot be verified; the collector never deletes on what it cannot verify"},
		{"an owner that cannot be read", facts(single, ownerLookup{ref: owner.ref(), status: OwnerUnknown, reason: "you may not get it"}),
			"unknown: this answer did not read 1 of its owners (ConfigMap owner), and the collector deletes it only once every owner is confirmed gone"},
		{"an owner waiting in the foreground, with dependents", withDependents,
			"will be deleted in the foreground: its owner ConfigMap waiting-owner is being deleted in the foreground"},
		{"ignored by default", facts(event), "left alone: its resource events is ignored by default (there is no GCPolicy default)"},
		{"ignored by the GCPolicy", withPolicy(facts(single, lookupOf(owner, explain.OwnerDangling, "")), ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Resource: "configmaps"}}}),
			"left alone: its resource configmaps is ignored by the GCPolicy"},
		{"not ignored by the GCPolicy", withPolicy(facts(event), ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{}}),
			"kept: it has no owner references, and the collector deletes only objects whose owners are gone"},
		{"ignored by default, the GCPolicy unknown", unknownPolicy(facts(event)),
			"left alone: its resource events is ignored by default (unless the GCPolicy, which could not be read, says otherwise)"},
		{"orphaning", facts(orphaning), "being deleted with the orphan policy: ownergc removes it from its dependents' owner references, then its orphan finalizer"},
		{"other finalizers", facts(finalized), "being deleted; nothing for the collector to do: it waits for its finalizers example.com/a, example.com/b, which whoever added them must remove"},
		// Issue 25: the GCPolicy in DryRun with a Foreground override for
		// ConfigMaps, a ConfigMap annotated protected whose owner is gone.
		{"protected, in DryRun, with an override", withPolicy(facts(protected, lookupOf(owner, explain.OwnerDangling, "no such object")), dryRunForeground),
			"protected (annotation ownergc.io/protected=true): ownergc would remove its references to its owners, which are gone, instead of deleting it; the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do"},
		{"an override, in DryRun", withPolicy(facts(single, lookupOf(owner, explain.OwnerDangling, "no such object")), dryRunForeground),
			"would be deleted with propagation Foreground (the GCPolicy's propagation for configmaps): all its owners are gone; the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do"},
		{"a protected namespace", withPolicy(facts(single, lookupOf(owner, explain.OwnerDangling, "no such object")), ownergcv1alpha1.GCPolicySpec{
			Protection: ownergcv1alpha1.Protection{Namespaces: []ownergcv1alpha1.NamespaceName{"ns"}}}),
			"protected (namespace ns is protected by the GCPolicy): ownergc removes its references to its owners, which are gone, instead of deleting it"},
		{"an owner waiting, dependents not all listed", incomplete(facts(middle, lookupOf(waitingOwner, explain.OwnerWaiting, "it is being deleted in the foreground"))),
			"unknown: its owner ConfigMap waiting-owner is being deleted in the foreground and its dependents could not all be listed: with dependents of its own it will be deleted in the foreground, without any with propagation Background"},
	} {
		r := explainFromAPI(c.f)
		if r.Decision != c.want {
			t.Errorf("%s: decision %q, want %q", c.name, r.Decision, c.want)
		}
		if r.Verdict == nil || r.Verdict.String() != r.Decision {
			t.Errorf("%s: verdict %+v does not say the decision", c.name, r.Verdict)
		}
	}
}

// The explanation says what it could not know.
func TestExplainFromAPIUnknowns(t *testing.T) {
	owner := cm("owner", "o")
	dep := cm("dep", "d", ownedBy(owner, false, false))
	f := facts(dep, ownerLookup{ref: owner.ref(), status: OwnerUnknown, reason: "you may not get it"})
	f.incomplete = []string{"2 resources you may not list (secrets, pods)"}
	f.policy = policyView{unknown: "you may not get the GCPolicy default"}
	got := strings.Join(explainFromAPI(f).Unknown, "\n")
	for _, want := range []string{
		"the collector's graph: ",
		"the collector's queue: ",
		"how the collector classifies the owners shown Unverifiable or Unknown here",
		"dependents in resources that could not be listed: 2 resources you may not list (secrets, pods)",
		"the GCPolicy in force (ignored resources, protection, propagation, mode), so the decision assumes its defaults: you may not get the GCPolicy default",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("unknowns lack %q:\n%s", want, got)
		}
	}
}

func TestRenderWhyFromTheManager(t *testing.T) {
	since := metav1.NewTime(now.Add(-90 * time.Second))
	r := &WhyResult{Source: SourceManager, Manager: "https://127.0.0.1:8443", Explanation: explain.Explanation{
		Object:   objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "owner", UID: "o"},
		Graph:    explain.StateObserved,
		Deletion: &explain.Deletion{Since: &since, Finalizers: []string{"foregroundDeletion"}, Foreground: true},
		Owners: []explain.Owner{{Object: objectRef{Kind: "Deployment", Name: "web"}, Controller: true, BlockOwnerDeletion: true,
			Status: explain.OwnerWaiting, Reason: "it is being deleted in the foreground and waits for its blocking dependents"}},
		HiddenOwners: 2,
		Dependents: []explain.Dependent{{Object: objectRef{Kind: "ConfigMap", Name: "held"}, Blocking: true, Remains: "it carries finalizers example.com/hold"},
			{Object: objectRef{Kind: "ConfigMap", Name: "loose"}}},
		HiddenDependents: 3,
		Queue:            explain.Queue{Failures: 2, LastError: "forbidden", Retries: 5},
		Decision:         "being deleted in the foreground: it waits until its blocking dependents are gone (1 listed, 3 hidden)",
	}, UnclassifiedOwners: []objectRef{{Kind: "Ghost", Name: "ghost"}}}
	var out strings.Builder
	if err := renderWhy(&out, r, now, false); err != nil {
		t.Fatal(err)
	}
	want := `Object:       ConfigMap ns/owner (uid o)
Explained by: the ownergc manager (https://127.0.0.1:8443)
Graph:        Observed (the collector watches its kind and has observed it)
Deletion:     being deleted for 90s (since 2026-05-01T11:58:30Z), in the foreground: it waits for its blocking dependents; finalizers: foregroundDeletion
Owners:       3
  Deployment/web [controller, blocking]: WaitingForDependents: it is being deleted in the foreground and waits for its blocking dependents
  Ghost/ghost: not classified for you: the manager names only the owners it can tell you may get
  and 1 owner you may not read
Dependents:   5 (1 blocking shown)
  ConfigMap/held [blocking]: remains: it carries finalizers example.com/hold
  ConfigMap/loose
  and 3 more you may not read (or beyond the first ones)
Queue:        2 failed attempts in a row; last error: forbidden; requeued 5 times with backoff
Decision:     being deleted in the foreground: it waits until its blocking dependents are gone (1 listed, 3 hidden)
`
	if out.String() != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestRenderWhyFromTheAPI(t *testing.T) {
	dep := cm("dep", "d")
	f := facts(dep, ownerLookup{ref: objectRef{Kind: "ConfigMap", Name: "gone"}, status: explain.OwnerDangling, reason: "no such object"})
	f.obj.OwnerReferences = []metav1.OwnerReference{{Kind: "ConfigMap", Name: "gone", UID: "g"}}
	r := explainFromAPI(f)
	r.ManagerError = "deployment ownergc-system/ownergc-controller-manager not found"
	var out strings.Builder
	if err := renderWhy(&out, &r, now, false); err != nil {
		t.Fatal(err)
	}
	want := `Object:       ConfigMap ns/dep (uid d)
Explained by: API reads alone, since the ownergc manager could not answer: deployment ownergc-system/ownergc-controller-manager not found
Graph:        Unknown (not known without the manager)
Deletion:     not being deleted
Owners:       1
  ConfigMap/gone: Dangling: no such object
Dependents:   none
Queue:        not known without the manager
Decision:     will be deleted with propagation Background: all its owners are gone
Not known without the manager:
  - the collector's graph: whether it watches this kind and has observed the object and its owners
  - the collector's queue: whether it is working on the object, its retries and last error (a deletion refused by a webhook, by a policy or by RBAC shows only there)
`
	if out.String() != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestUnclassifiedOwners(t *testing.T) {
	refs := []metav1.OwnerReference{{Kind: "A", Name: "a", UID: "a"}, {Kind: "B", Name: "b", UID: "b"}, {Kind: "B", Name: "b", UID: "b"}}
	got := unclassifiedOwners(refs, []explain.Owner{{Object: objectRef{UID: "a"}}})
	if len(got) != 1 || got[0].Name != "b" {
		t.Errorf("unclassified owners: %+v", got)
	}
}

func TestCheckOutput(t *testing.T) {
	for _, ok := range []string{"", "json", "yaml"} {
		if err := checkOutput(ok, "json", "yaml"); err != nil {
			t.Errorf("-o %q: %v", ok, err)
		}
	}
	if err := checkOutput("wide", "json", "yaml"); err == nil {
		t.Error("-o wide should be refused")
	}
}
