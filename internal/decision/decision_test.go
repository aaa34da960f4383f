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
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/policy"
)

var configMaps = schema.GroupResource{Resource: "configmaps"}

// input builds an Input about a ConfigMap of namespace ns with the
// defaults in force.
type input struct{ Input }

func object() *input {
	return &input{Input{Object: Object{Resource: configMaps, Namespace: "ns"}, Policy: policy.Defaults()}}
}

func (b *input) owner(kind, name string, state OwnerState) *input {
	b.Owners = append(b.Owners, Owner{Kind: kind, Name: name, UID: types.UID(name + "-uid"), State: state})
	return b
}

func (b *input) hidden(state OwnerState) *input {
	b.Owners = append(b.Owners, Owner{Kind: "Secret", Name: "private", UID: "private-uid", State: state, Hidden: true})
	return b
}

func (b *input) deleting(finalizers ...string) *input {
	b.Object.Deleting, b.Object.Finalizers = true, finalizers
	return b
}

func (b *input) finalizers(f ...string) *input {
	b.Object.Finalizers = f
	return b
}

func (b *input) annotated(key, value string) *input {
	b.Object.Annotations = map[string]string{key: value}
	return b
}

func (b *input) resource(gr schema.GroupResource) *input {
	b.Object.Resource = gr
	return b
}

func (b *input) dependents(d Dependents) *input {
	b.Dependents = func() Dependents { return d }
	return b
}

func (b *input) policy(t *testing.T, spec ownergcv1alpha1.GCPolicySpec) *input {
	t.Helper()
	p, err := policy.FromSpec(&spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.Policy = p
	return b
}

func (b *input) unknownPolicy() *input {
	b.Policy = nil
	return b
}

func TestDecide(t *testing.T) {
	dryRun := ownergcv1alpha1.GCPolicySpec{Mode: ownergcv1alpha1.ModeDryRun}
	foregroundForConfigMaps := ownergcv1alpha1.GCPolicySpec{PropagationOverrides: []ownergcv1alpha1.PropagationOverride{
		{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"}, Propagation: ownergcv1alpha1.PropagationForeground}}}
	protectedNS := ownergcv1alpha1.GCPolicySpec{Protection: ownergcv1alpha1.Protection{Namespaces: []ownergcv1alpha1.NamespaceName{"ns"}}}
	ignoresConfigMaps := ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Resource: "configmaps"}}}
	// The report: a protected ConfigMap whose owner is gone, with
	// the policy in DryRun and a Foreground override for ConfigMaps.
	reported := foregroundForConfigMaps
	reported.Mode = ownergcv1alpha1.ModeDryRun

	for _, c := range []struct {
		name  string
		in    *input
		want  Decision
		words string
	}{
		{"no owners", object(), Decision{Action: Keep, Reason: ReasonNoOwners},
			"kept: it has no owner references, and the collector deletes only objects whose owners are gone"},
		{"a solid owner", object().owner("ConfigMap", "a", OwnerSolid), Decision{Action: Keep, Reason: ReasonOwnerExists},
			"kept: owner ConfigMap a exists"},
		{"a solid owner, others gone and waiting", object().owner("ConfigMap", "w", OwnerWaiting).owner("ConfigMap", "a", OwnerSolid).owner("ConfigMap", "g", OwnerDangling),
			Decision{Action: RemoveReferences, Reason: ReasonOwnerExists, Remove: []types.UID{"g-uid", "w-uid"}},
			"kept: owner ConfigMap a exists; ownergc removes its references to ConfigMap g, ConfigMap w"},
		{"a solid owner, others not read", object().owner("ConfigMap", "a", OwnerSolid).owner("ConfigMap", "u", OwnerUnknown),
			Decision{Action: Keep, Reason: ReasonOwnerExists},
			"kept: owner ConfigMap a exists; ownergc removes its references to those of the owners this answer did not read that are gone"},
		{"an owner that cannot be verified beside a solid one", object().owner("ConfigMap", "a", OwnerSolid).owner("Ghost", "g", OwnerUnverifiable).owner("ConfigMap", "d", OwnerDangling),
			Decision{Action: Keep, Reason: ReasonOwnerUnverifiable},
			"kept: owner Ghost g cannot be verified; the collector never deletes on what it cannot verify"},
		{"an owner the reader may not read cannot be verified", object().hidden(OwnerUnverifiable),
			Decision{Action: Keep, Reason: ReasonOwnerUnverifiable},
			"kept: owner (an owner you may not read) cannot be verified; the collector never deletes on what it cannot verify"},
		{"an owner not read, the others gone", object().owner("ConfigMap", "g", OwnerDangling).owner("ConfigMap", "u", OwnerUnknown).hidden(OwnerUnknown),
			Decision{Action: Unknown, Reason: ReasonOwnersNotRead},
			"unknown: this answer did not read 2 of its owners (ConfigMap u, (an owner you may not read)), and the collector deletes it only once every owner is confirmed gone"},
		{"every owner gone", object().owner("ConfigMap", "g", OwnerDangling),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault},
			"will be deleted with propagation Background: all its owners are gone"},
		{"every owner gone, its orphan finalizer", object().owner("ConfigMap", "g", OwnerDangling).finalizers(metav1.FinalizerOrphanDependents),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationOrphan, PropagationFrom: FromOrphanFinalizer},
			"will be deleted with propagation Orphan (its orphan finalizer): all its owners are gone"},
		{"every owner gone, an override", object().owner("ConfigMap", "g", OwnerDangling).policy(t, foregroundForConfigMaps),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationForeground, PropagationFrom: FromOverride},
			"will be deleted with propagation Foreground (the GCPolicy's propagation for configmaps): all its owners are gone"},
		{"every owner gone, the override of another resource", object().owner("ConfigMap", "g", OwnerDangling).policy(t, foregroundForConfigMaps).resource(schema.GroupResource{Resource: "secrets"}),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault},
			"will be deleted with propagation Background: all its owners are gone"},
		{"every owner gone, in DryRun", object().owner("ConfigMap", "g", OwnerDangling).policy(t, dryRun),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault, DryRun: true},
			"would be deleted with propagation Background: all its owners are gone; the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do"},
		{"every owner gone, the policy not known", object().owner("ConfigMap", "g", OwnerDangling).unknownPolicy(),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault, PolicyUnknown: true},
			"will be deleted with propagation Background (unless the GCPolicy, which could not be read, says otherwise): all its owners are gone"},
		{"protected by its annotation", object().owner("ConfigMap", "g", OwnerDangling).annotated(ownergcv1alpha1.ProtectedAnnotation, "true"),
			Decision{Action: Protect, Reason: ReasonProtectedAnnotation, Remove: []types.UID{"g-uid"}},
			"protected (annotation ownergc.io/protected=true): ownergc removes its references to its owners, which are gone, instead of deleting it"},
		{"an annotation that does not protect", object().owner("ConfigMap", "g", OwnerDangling).annotated(ownergcv1alpha1.ProtectedAnnotation, "yes"),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault},
			"will be deleted with propagation Background: all its owners are gone"},
		{"protected by its namespace, an owner waiting", object().owner("ConfigMap", "w", OwnerWaiting).policy(t, protectedNS).dependents(Dependents{Count: 1}),
			Decision{Action: Protect, Reason: ReasonProtectedNamespace, Remove: []types.UID{"w-uid"}},
			"protected (namespace ns is protected by the GCPolicy): ownergc removes its references to its owners, which are gone or being deleted in the foreground, instead of deleting it"},
		{"the issue's report: protected, in DryRun, an override", object().owner("ConfigMap", "g", OwnerDangling).annotated(ownergcv1alpha1.ProtectedAnnotation, "true").policy(t, reported),
			Decision{Action: Protect, Reason: ReasonProtectedAnnotation, Remove: []types.UID{"g-uid"}, DryRun: true},
			"protected (annotation ownergc.io/protected=true): ownergc would remove its references to its owners, which are gone, instead of deleting it; the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do"},
		{"an owner waiting, dependents of its own", object().owner("ConfigMap", "w", OwnerWaiting).owner("ConfigMap", "g", OwnerDangling).dependents(Dependents{Count: 2}),
			Decision{Action: Delete, Reason: ReasonOwnerWaiting, Propagation: metav1.DeletePropagationForeground, PropagationFrom: FromWaitingOwner},
			"will be deleted in the foreground: its owner ConfigMap w is being deleted in the foreground"},
		{"an owner waiting, a dependent deleted in the foreground too", object().owner("ConfigMap", "w", OwnerWaiting).dependents(Dependents{Count: 1, DeletingDependents: true}),
			Decision{Action: Delete, Reason: ReasonOwnerWaiting, Propagation: metav1.DeletePropagationForeground, PropagationFrom: FromWaitingOwner, UnblockFirst: true},
			"will be deleted in the foreground: its owner ConfigMap w is being deleted in the foreground; one of its dependents is itself deleted in the foreground, so its references first stop blocking its owners"},
		{"an owner waiting, no dependents", object().owner("ConfigMap", "w", OwnerWaiting).dependents(Dependents{}),
			Decision{Action: Delete, Reason: ReasonOwnersGone, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault},
			"will be deleted with propagation Background: all its owners are gone"},
		{"an owner waiting, dependents not listed", object().owner("ConfigMap", "w", OwnerWaiting).dependents(Dependents{Incomplete: true}),
			Decision{Action: Unknown, Reason: ReasonDependentsNotListed, Propagation: metav1.DeletePropagationBackground, PropagationFrom: FromDefault},
			"unknown: its owner ConfigMap w is being deleted in the foreground and its dependents could not all be listed: with dependents of its own it will be deleted in the foreground, without any with propagation Background"},
		{"ignored by the GCPolicy", object().owner("ConfigMap", "g", OwnerDangling).policy(t, ignoresConfigMaps),
			Decision{Action: Ignore, Reason: ReasonIgnored},
			"left alone: its resource configmaps is ignored by the GCPolicy"},
		{"ignored by default", object().resource(schema.GroupResource{Resource: "events"}),
			Decision{Action: Ignore, Reason: ReasonIgnored},
			"left alone: its resource events is ignored by default (there is no GCPolicy default)"},
		{"ignored by default, the policy not known", object().resource(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}).unknownPolicy(),
			Decision{Action: Ignore, Reason: ReasonIgnored, PolicyUnknown: true},
			"left alone: its resource events.events.k8s.io is ignored by default (unless the GCPolicy, which could not be read, says otherwise)"},
		{"being deleted in the foreground, blocking dependents remain", object().deleting(metav1.FinalizerDeleteDependents).dependents(Dependents{Count: 4, Blocking: 3, HiddenBlocking: 1}),
			Decision{Action: WaitForDependents, Reason: ReasonBlockingDependents},
			"being deleted in the foreground: it waits until its blocking dependents are gone (2 listed, 1 hidden)"},
		{"being deleted in the foreground, none blocks", object().deleting(metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents).dependents(Dependents{Count: 2}),
			Decision{Action: RemoveForegroundFinalizer, Reason: ReasonNoBlockingDependents},
			"being deleted in the foreground: no blocking dependent remains, ownergc removes its foregroundDeletion finalizer"},
		{"being deleted in the foreground, in DryRun", object().deleting(metav1.FinalizerDeleteDependents).dependents(Dependents{}).policy(t, dryRun),
			Decision{Action: RemoveForegroundFinalizer, Reason: ReasonNoBlockingDependents, DryRun: true},
			"being deleted in the foreground: no blocking dependent remains, ownergc would remove its foregroundDeletion finalizer; the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do"},
		{"being deleted in the foreground, dependents not known", object().deleting(metav1.FinalizerDeleteDependents),
			Decision{Action: Unknown, Reason: ReasonDependentsNotListed},
			"unknown: being deleted in the foreground, it waits for its blocking dependents; none was found, but dependents in resources that could not be listed are not known; once none remains, ownergc removes its foregroundDeletion finalizer"},
		{"being deleted with the orphan policy", object().deleting(metav1.FinalizerOrphanDependents).owner("ConfigMap", "g", OwnerDangling),
			Decision{Action: Orphan, Reason: ReasonOrphanFinalizer},
			"being deleted with the orphan policy: ownergc removes it from its dependents' owner references, then its orphan finalizer"},
		{"being deleted, other finalizers", object().deleting("example.com/a", "example.com/b"),
			Decision{Action: WaitForFinalizers, Reason: ReasonFinalizers},
			"being deleted; nothing for the collector to do: it waits for its finalizers example.com/a, example.com/b, which whoever added them must remove"},
		{"being deleted, of an ignored resource", object().deleting(metav1.FinalizerDeleteDependents).policy(t, ignoresConfigMaps),
			Decision{Action: Ignore, Reason: ReasonIgnored},
			"left alone: its resource configmaps is ignored by the GCPolicy"},
		{"absent", &input{Input{Object: Object{Resource: configMaps, Absent: true, Referenced: true}}},
			Decision{Action: Absent, Reason: ReasonObjectAbsent, PolicyUnknown: true},
			"it does not exist; objects still name it as their owner, and are collected once the collector confirms it"},
		{"not read", &input{Input{Object: Object{Resource: configMaps, ReadError: "forbidden"}, Policy: policy.Defaults()}},
			Decision{Action: Unknown, Reason: ReasonObjectNotRead},
			"unknown: the object cannot be read: forbidden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.in.Input)
			if got.Action != c.want.Action || got.Reason != c.want.Reason || got.Propagation != c.want.Propagation ||
				got.PropagationFrom != c.want.PropagationFrom || got.UnblockFirst != c.want.UnblockFirst || got.DryRun != c.want.DryRun ||
				got.PolicyUnknown != c.want.PolicyUnknown || !slices.Equal(got.Remove, c.want.Remove) {
				t.Errorf("decision %+v, want %+v", got, c.want)
			}
			if s := got.String(); s != c.words {
				t.Errorf("words:\n  %s\nwant:\n  %s", s, c.words)
			}
		})
	}
}

// Decide asks for the dependents only when the decision depends on them,
// and once.
func TestDecideAsksForDependentsOnlyWhenNeeded(t *testing.T) {
	for _, c := range []struct {
		name string
		in   *input
		asks int
	}{
		{"every owner gone", object().owner("ConfigMap", "g", OwnerDangling), 0},
		{"a solid owner beside a waiting one", object().owner("ConfigMap", "a", OwnerSolid).owner("ConfigMap", "w", OwnerWaiting), 0},
		{"protected, an owner waiting", object().owner("ConfigMap", "w", OwnerWaiting).annotated(ownergcv1alpha1.ProtectedAnnotation, "true"), 0},
		{"an owner waiting", object().owner("ConfigMap", "w", OwnerWaiting), 1},
		{"being deleted in the foreground", object().deleting(metav1.FinalizerDeleteDependents), 1},
		{"being deleted with the orphan policy", object().deleting(metav1.FinalizerOrphanDependents), 0},
	} {
		asks := 0
		c.in.Dependents = func() Dependents { asks++; return Dependents{Count: 1} }
		Decide(c.in.Input)
		if asks != c.asks {
			t.Errorf("%s: asked for the dependents %d times, want %d", c.name, asks, c.asks)
		}
	}
}

// A decision never deletes on what is not known.
func TestDecideNeverDeletesOnWhatIsNotKnown(t *testing.T) {
	for _, unsure := range []OwnerState{OwnerUnverifiable, OwnerUnknown} {
		for _, others := range [][]OwnerState{nil, {OwnerDangling}, {OwnerWaiting}, {OwnerDangling, OwnerWaiting}} {
			in := object().owner("Ghost", "x", unsure).dependents(Dependents{Count: 1})
			for i, s := range others {
				in.owner("ConfigMap", string(rune('a'+i)), s)
			}
			if d := Decide(in.Input); d.Action.Writes() {
				t.Errorf("an owner %s beside %v: %s (%s)", unsure, others, d.Action, d)
			}
		}
	}
}

func TestOwnerFromRead(t *testing.T) {
	now := metav1.NewTime(time.Now())
	live := func(uid types.UID, deleting bool, finalizers ...string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid, Finalizers: finalizers}}
		if deleting {
			o.DeletionTimestamp = &now
		}
		return o
	}
	for _, c := range []struct {
		name  string
		found *metav1.PartialObjectMetadata
		want  OwnerState
	}{
		{"nothing there", nil, OwnerDangling},
		{"another object under its name", live("other", false), OwnerDangling},
		{"it exists", live("u", false), OwnerSolid},
		{"being deleted, other finalizers", live("u", true, "example.com/x"), OwnerSolid},
		{"being deleted in the foreground", live("u", true, metav1.FinalizerDeleteDependents), OwnerWaiting},
		{"the foregroundDeletion finalizer, not being deleted", live("u", false, metav1.FinalizerDeleteDependents), OwnerSolid},
	} {
		if got := OwnerFromRead("u", c.found); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPropagation(t *testing.T) {
	foreground := policy.Defaults()
	foreground.DefaultPropagation = metav1.DeletePropagationForeground
	orphan := policy.Defaults()
	orphan.DefaultPropagation = metav1.DeletePropagationOrphan
	unset := policy.Defaults()
	unset.DefaultPropagation = ""
	for _, c := range []struct {
		finalizers []string
		p          *policy.Policy
		want       metav1.DeletionPropagation
		from       Source
	}{
		{nil, policy.Defaults(), metav1.DeletePropagationBackground, FromDefault},
		{nil, unset, metav1.DeletePropagationBackground, FromDefault},
		{nil, foreground, metav1.DeletePropagationForeground, FromDefault},
		{nil, orphan, metav1.DeletePropagationOrphan, FromDefault},
		{[]string{"example.com/x", metav1.FinalizerOrphanDependents}, foreground, metav1.DeletePropagationOrphan, FromOrphanFinalizer},
		{[]string{metav1.FinalizerDeleteDependents}, orphan, metav1.DeletePropagationForeground, FromForegroundFinalizer},
		{[]string{metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents}, policy.Defaults(), metav1.DeletePropagationOrphan, FromOrphanFinalizer},
	} {
		got, from := Propagation(c.finalizers, c.p, configMaps)
		if got != c.want || from != c.from {
			t.Errorf("Propagation(%v, default %q) = %s from %s, want %s from %s", c.finalizers, c.p.DefaultPropagation, got, from, c.want, c.from)
		}
	}
}

func TestPermit(t *testing.T) {
	p, err := policy.FromSpec(&ownergcv1alpha1.GCPolicySpec{Mode: ownergcv1alpha1.ModeDryRun,
		Protection: ownergcv1alpha1.Protection{Namespaces: []ownergcv1alpha1.NamespaceName{"kube-system"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	protected := map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
	for _, c := range []struct {
		p           *policy.Policy
		namespace   string
		annotations map[string]string
		want        Permission
	}{
		{policy.Defaults(), "default", nil, Permitted},
		{policy.Defaults(), "default", protected, ProtectedByAnnotation},
		{p, "kube-system", nil, ProtectedByNamespace},
		{p, "kube-system", protected, ProtectedByAnnotation},
		{p, "default", nil, DryRun},
		{p, "", nil, DryRun},
	} {
		if got := Permit(c.p, c.namespace, c.annotations); got != c.want {
			t.Errorf("Permit(dry run %v, %q, %v) = %q, want %q", c.p.DryRun, c.namespace, c.annotations, got, c.want)
		}
	}
}
