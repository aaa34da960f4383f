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
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

func withPolicy(h *harness, change func(*policy.Policy)) {
	p := *policy.Defaults()
	change(&p)
	h.policy.Set(&p)
}

func protectedAnnotation() objOpt {
	return func(o *metav1.PartialObjectMetadata) {
		o.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
	}
}

// A protected object whose owners are gone is kept without its references
// to them, as an orphaning deletion of its owners would leave it.
func TestProtectedObjectLosesItsReferencesInsteadOfBeingDeleted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  func(*policy.Policy)
		depOpts []objOpt
	}{
		{"protected namespace", func(p *policy.Policy) { p.ProtectedNamespaces = []string{"ns"} }, nil},
		{"protected annotation", func(*policy.Policy) {}, []objOpt{protectedAnnotation()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			withPolicy(h, tc.policy)
			owner := configMap("owner")
			dep := configMap("dep", append(tc.depOpts, ownedBy(owner, false))...)
			h.observe(owner, dep)
			h.gone(owner)
			if errs := h.drain(); len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			expectVerbs(t, h, "patch")
			want := `{"metadata":{"uid":"configmap-dep","ownerReferences":[{"$patch":"delete","uid":"configmap-owner"}]}}`
			if got := h.api.calls[0].patch; got != want {
				t.Fatalf("patch %s, want %s", got, want)
			}
			if len(h.recorder.Events) != 1 || !strings.Contains(<-h.recorder.Events, "Normal "+ReasonProtected) {
				t.Fatal("want a Protected event")
			}
		})
	}
}

// In a foreground deletion a protected blocking dependent is not deleted:
// it loses its reference to the deleting owner, which then finishes.
func TestProtectedDependentOfAForegroundDeletionLetsItsOwnerFinish(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	dep := configMap("dep", protectedAnnotation(), ownedBy(owner, true))
	h.observe(owner, dep)
	h.observe(configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents)))
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, c := range h.api.calls {
		if c.verb == "delete" {
			t.Fatalf("the protected dependent was deleted: %v", h.api.calls)
		}
	}
	if len(h.api.calls) == 0 || h.api.calls[0].name != "dep" || !strings.Contains(h.api.calls[0].patch, `"$patch":"delete","uid":"configmap-owner"`) {
		t.Fatalf("want the dependent's reference to its deleting owner removed first: %v", h.api.calls)
	}
	// The patch, once observed, unblocks the owner.
	h.api.calls = nil
	h.observe(configMap("dep", protectedAnnotation()))
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "patch")
	if c := h.api.calls[0]; c.name != "owner" || !strings.Contains(c.patch, `"finalizers":[]`) {
		t.Fatalf("want the owner's foregroundDeletion finalizer removed: %v", c)
	}
}

// A propagation override for a resource is how its objects are deleted.
func TestPropagationOverrideForAResource(t *testing.T) {
	for _, tc := range []struct {
		name     string
		override policy.PropagationOverride
		want     metav1.DeletionPropagation
	}{
		{"resource", policy.PropagationOverride{GroupResource: schema.GroupResource{Resource: "configmaps"}, Propagation: metav1.DeletePropagationForeground}, metav1.DeletePropagationForeground},
		{"whole group", policy.PropagationOverride{GroupResource: schema.GroupResource{Resource: "*"}, Propagation: metav1.DeletePropagationOrphan}, metav1.DeletePropagationOrphan},
		{"other resource", policy.PropagationOverride{GroupResource: schema.GroupResource{Resource: "secrets"}, Propagation: metav1.DeletePropagationForeground}, metav1.DeletePropagationBackground},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			withPolicy(h, func(p *policy.Policy) { p.PropagationOverrides = []policy.PropagationOverride{tc.override} })
			owner := configMap("owner")
			h.observe(owner, configMap("dep", ownedBy(owner, false)))
			h.gone(owner)
			if errs := h.drain(); len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			expectVerbs(t, h, "delete")
			if p := h.api.calls[0].delete.PropagationPolicy; p == nil || *p != tc.want {
				t.Fatalf("deleted with %v, want %s", p, tc.want)
			}
		})
	}
}

func dryRunHarness(t *testing.T) *harness {
	h := newHarness(t)
	withPolicy(h, func(p *policy.Policy) { p.DryRun = true; p.ShadowGracePeriod = time.Minute })
	h.c.setDryRun(true)
	h.c.shadow.delay = 0
	return h
}

func drainVerdicts(h *harness) {
	for h.c.shadow.verdicts.Len() > 0 {
		v, _ := h.c.shadow.verdicts.Get()
		h.c.judgeDeletion(context.Background(), v)
		h.c.shadow.verdicts.Done(v)
	}
}

// In dry-run nothing is written; a decision another collector carries out
// is an agreement, one it does not within the grace period a
// disagreement, reported on the object.
func TestDryRunWritesNothingAndComparesWithAnotherCollector(t *testing.T) {
	h := dryRunHarness(t)
	owner, other := configMap("owner"), configMap("other")
	agreed := configMap("agreed", ownedBy(owner, false))
	ignored := configMap("ignored", ownedBy(owner, false))
	dangling := configMap("dangling", ownedBy(owner, false), ownedBy(other, false))
	h.observe(owner, other, agreed, ignored, dangling)
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(h.api.calls) != 0 {
		t.Fatalf("dry-run must write nothing (and, here, read nothing): %v", h.api.calls)
	}
	if d, r := len(h.c.shadow.deletes), len(h.c.shadow.pending); d != 2 || r != 1 {
		t.Fatalf("pending decisions: %d deletes and %d others, want two deletes and one reference removal", d, r)
	}
	// The other collector deletes one and removes the dangling reference.
	h.gone(agreed)
	h.observe(configMap("dangling", ownedBy(other, false)))
	drainVerdicts(h) // the deletion was decided already: judged once
	start := time.Now()
	h.c.resolvePending(context.Background(), start)
	if st := h.c.Shadow(); st.Agreed != 2 || st.Disagreed != 0 {
		t.Fatalf("after the other collector acted: %+v", st)
	}
	h.c.resolvePending(context.Background(), start.Add(2*time.Minute))
	st := h.c.Shadow()
	if st.Agreed != 2 || st.Disagreed != 1 || st.LastDisagreement == nil || st.LastDisagreement.Object.Name != "ignored" {
		t.Fatalf("after the grace period: %+v", st)
	}
	if len(h.recorder.Events) != 1 || !strings.Contains(<-h.recorder.Events, ReasonShadowDisagreement) {
		t.Fatal("want one ShadowDisagreement event")
	}
}

// A deletion someone else makes is judged: agreement when ownergc would
// have deleted the object too, disagreement when it would keep it while
// one of its owners is gone, and not counted when every owner lives (a
// user's or a controller's deletion).
func TestDryRunJudgesDeletionsOthersMake(t *testing.T) {
	h := dryRunHarness(t)
	gone, alive := configMap("gone"), configMap("alive")
	h.observe(gone, alive)
	onlyGone := configMap("only-gone", ownedBy(gone, false))
	both := configMap("both", ownedBy(gone, false), ownedBy(alive, false))
	onlyAlive := configMap("only-alive", ownedBy(alive, false))
	h.observe(onlyGone, both, onlyAlive)
	h.api.put("configmaps", alive)
	// The other collector is faster than ownergc's workers.
	h.c.attemptToDelete.ShutDown()
	h.gone(gone)
	h.gone(onlyGone)
	h.gone(both)
	h.gone(onlyAlive)
	drainVerdicts(h)
	st := h.c.Shadow()
	if st.Agreed != 1 || st.Disagreed != 1 || st.LastDisagreement == nil || st.LastDisagreement.Object.Name != "both" ||
		!strings.Contains(st.LastDisagreement.Message, "ownergc would keep it") {
		t.Fatalf("shadow: %+v (last %+v)", st, st.LastDisagreement)
	}
}

// In a fleet the deletions others make are judged on the workers the
// members share (the shadow's queue is a lane of them, as the collector's
// are), one at a time, and the judge holds no worker once done.
func TestDryRunJudgesOnTheSharedWorkers(t *testing.T) {
	h := newHarness(t)
	shared := workers.NewShared(0)
	h.c.shadow = newShadow(shared)
	h.c.shadow.delay = 0
	withPolicy(h, func(p *policy.Policy) { p.DryRun = true; p.ShadowGracePeriod = time.Minute })
	h.c.setDryRun(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.c.runShadow(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	gone, alive := configMap("gone"), configMap("alive")
	h.observe(gone, alive)
	onlyGone := configMap("only-gone", ownedBy(gone, false))
	both := configMap("both", ownedBy(gone, false), ownedBy(alive, false))
	h.observe(onlyGone, both)
	h.api.put("configmaps", alive)
	h.c.attemptToDelete.ShutDown() // the other collector is faster
	h.gone(gone)
	h.gone(onlyGone)
	h.gone(both)
	waitUntil(t, "both deletions judged", func() bool { st := h.c.Shadow(); return st.Agreed+st.Disagreed == 2 })
	if st := h.c.Shadow(); st.Agreed != 1 || st.Disagreed != 1 || st.LastDisagreement == nil || st.LastDisagreement.Object.Name != "both" {
		t.Fatalf("shadow: %+v (last %+v)", st, st.LastDisagreement)
	}
	waitUntil(t, "the judge gives its worker back", func() bool { return shared.Running() == 0 })
}

// waitUntil fails the test unless cond holds within 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The judgement is the decision model's: an object of a protected
// namespace that another collector deletes while its owner is gone is a
// disagreement, ownergc would keep it.
func TestDryRunJudgesDeletionsOfProtectedObjects(t *testing.T) {
	h := dryRunHarness(t)
	withPolicy(h, func(p *policy.Policy) {
		p.DryRun, p.ShadowGracePeriod, p.ProtectedNamespaces = true, time.Minute, []string{"ns"}
	})
	gone := configMap("gone")
	h.observe(gone)
	dep := configMap("dep", ownedBy(gone, false))
	h.observe(dep)
	h.c.attemptToDelete.ShutDown()
	h.gone(gone)
	h.gone(dep)
	drainVerdicts(h)
	st := h.c.Shadow()
	if st.Agreed != 0 || st.Disagreed != 1 || st.LastDisagreement == nil ||
		!strings.Contains(st.LastDisagreement.Message, "but ownergc would keep it: protected (namespace ns is protected by the GCPolicy)") {
		t.Fatalf("shadow: %+v (last %+v)", st, st.LastDisagreement)
	}
}

// countingLimiter counts the waits of a flowcontrol.RateLimiter.
type countingLimiter struct {
	flowcontrol.RateLimiter
	waits int
}

func (l *countingLimiter) Wait(context.Context) error { l.waits++; return nil }

// DryRun paces its decisions as the client's rate limit paces the writes
// they stand for: one wait per decision not carried out, none otherwise.
func TestDryRunDecisionsArePacedLikeWrites(t *testing.T) {
	h := dryRunHarness(t)
	limiter := &countingLimiter{}
	h.c.opts.DryRunLimiter = limiter
	owner, other := configMap("owner"), configMap("other")
	h.observe(owner, other,
		configMap("a", ownedBy(owner, false)),
		configMap("b", ownedBy(owner, false)),
		configMap("kept", ownedBy(other, false)),
		configMap("dangling", ownedBy(owner, false), ownedBy(other, false)))
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(h.api.calls) != 0 {
		t.Fatalf("DryRun wrote: %v", h.api.calls)
	}
	// Would delete a and b, would remove dangling's reference.
	if limiter.waits != 3 {
		t.Fatalf("%d waits, want 3 (one per decision not carried out)", limiter.waits)
	}
}

// A dry run of a large cascade holds one pending decision per dependent until
// another collector carries it out or the grace period ends: a pending
// deletion must cost a few dozen bytes, not a copy of the object's identity.
func TestPendingDeletionsAreSmall(t *testing.T) {
	h := dryRunHarness(t)
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	const n = 5000
	ids := make([]graph.Identity, n)
	for i := range ids {
		ids[i] = graph.Identity{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%d", i),
			UID: types.UID(fmt.Sprintf("%08d-aaaa-bbbb-cccc-dddddddddddd", i))}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, id := range ids {
		h.c.would(ctx, ActionDelete, "", id, metav1.DeletePropagationBackground)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := len(h.c.shadow.deletes); got != n {
		t.Fatalf("%d pending deletions, want %d", got, n)
	}
	// A map of 8192 slots of 24 bytes holds 5000 UIDs: about 40 bytes each.
	// (An entry with the whole identity and a time took about 265.)
	if per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n; per > 64 {
		t.Fatalf("a pending deletion retains %d bytes, want at most 64", per)
	}
	runtime.KeepAlive(ids)
}

// A pending deletion of an object whose kind stopped being served cannot be
// judged: it is neither an agreement nor a disagreement, whatever the time,
// until the kind is observed again.
func TestAPendingDeletionOfAnUnservedKindWaits(t *testing.T) {
	h := dryRunHarness(t)
	owner := configMap("owner")
	dep := configMap("dep", ownedBy(owner, false))
	h.observe(owner, dep)
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if n := len(h.c.shadow.deletes); n != 1 {
		t.Fatalf("%d pending deletions, want 1", n)
	}
	h.graph.RemoveKind(schema.GroupKind{Kind: "ConfigMap"}, graph.KindUnserved, h.c)
	h.c.resolvePending(context.Background(), time.Now().Add(time.Hour))
	if st := h.c.Shadow(); st.Agreed != 0 || st.Disagreed != 0 {
		t.Fatalf("an unobserved object's deletion was judged: %+v", st)
	}
	if n := len(h.c.shadow.deletes); n != 1 {
		t.Fatalf("%d pending deletions after the kind stopped being served, want it still pending", n)
	}
}
