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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/policy"
)

func expectVerbs(t *testing.T, h *harness, want ...string) {
	t.Helper()
	if got := h.api.verbs(); !slices.Equal(got, want) {
		t.Fatalf("requests: got %v, want %v (calls: %v)", got, want, h.api.calls)
	}
}

func TestWideCascadeCostsOneRequestPerCollectedObject(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	h.observe(owner)
	const n = 50
	deps := make([]*metav1.PartialObjectMetadata, n)
	for i := range deps {
		deps[i] = configMap(fmt.Sprint("dep-", i), ownedBy(owner, false))
		h.observe(deps[i])
	}
	if errs := h.drain(); len(errs) > 0 || len(h.api.calls) > 0 {
		t.Fatalf("nothing should happen while the owner lives: errs=%v calls=%v", errs, h.api.calls)
	}

	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(h.api.calls) != n {
		t.Fatalf("want exactly %d requests (one DELETE per dependent), got %d: %v", n, len(h.api.calls), h.api.calls)
	}
	for _, c := range h.api.calls {
		if c.verb != "delete" {
			t.Fatalf("unexpected %s", c)
		}
		pre := c.delete.Preconditions
		if pre == nil || pre.UID == nil || pre.ResourceVersion == nil || *pre.ResourceVersion != "7" || !strings.HasSuffix(string(*pre.UID), c.name) {
			t.Fatalf("delete of %s lacks UID and resourceVersion preconditions: %+v", c.name, pre)
		}
		if p := c.delete.PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
			t.Fatalf("delete of %s used propagation %v, want Background", c.name, p)
		}
	}
}

func TestDanglingReferenceIsRemovedWhenALiveOwnerRemains(t *testing.T) {
	h := newHarness(t)
	alive, gone := configMap("alive"), configMap("gone")
	h.observe(alive, gone)
	dep := configMap("dep", ownedBy(alive, false), ownedBy(gone, false))
	h.observe(dep)

	h.gone(gone)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "patch")
	c := h.api.calls[0]
	want := `{"metadata":{"uid":"configmap-dep","ownerReferences":[{"$patch":"delete","uid":"configmap-gone"}]}}`
	if c.patchType != types.StrategicMergePatchType || c.patch != want {
		t.Fatalf("patch: %s %s, want strategic merge %s", c.patchType, c.patch, want)
	}
}

func TestVirtualOwnerIsVerifiedOnceThenRemembered(t *testing.T) {
	h := newHarness(t)
	missing := configMap("missing") // never observed, not on the server
	a := configMap("a", ownedBy(missing, false))
	b := configMap("b", ownedBy(missing, false))
	h.observe(a, b)
	if h.graph.VirtualLen() != 1 {
		t.Fatalf("want one virtual node for the unobserved owner, have %d", h.graph.VirtualLen())
	}
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	// One live read confirms the owner is absent; both dependents are then
	// deleted from the absent-owner cache, without reading it again.
	expectVerbs(t, h, "get", "delete", "delete")
	if h.graph.VirtualLen() != 0 {
		t.Fatal("confirmed-absent virtual node must leave the graph")
	}
}

func TestVirtualOwnerThatExistsKeepsItsDependents(t *testing.T) {
	h := newHarness(t)
	unwatched := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer")
	h.api.put("clusterroles", unwatched) // exists, but its kind is not watched
	dep := configMap("dep", ownedBy(unwatched, false))
	h.observe(dep)
	errs := h.drain()
	if len(errs) != 1 || !errors.Is(errs[0], errRequeue) {
		t.Fatalf("an existing virtual owner is looked at again later; errors: %v", errs)
	}
	expectVerbs(t, h, "get")
	if h.api.calls[0].namespace != "" {
		t.Fatalf("cluster-scoped owner read in namespace %q", h.api.calls[0].namespace)
	}
}

func TestConflictLooksAgainAndRetriesWithoutResourceVersionWhenOwnersAreUnchanged(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	dep := configMap("dep", ownedBy(owner, false))
	h.observe(owner, dep)
	h.api.put("configmaps", func() *metav1.PartialObjectMetadata {
		live := dep.DeepCopy()
		live.ResourceVersion = "8" // changed by someone, owners unchanged
		return live
	}())
	deletes := 0
	h.api.fail = func(c call) error {
		if c.verb == "delete" {
			deletes++
			if deletes == 1 {
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, c.name, errors.New("precondition failed"))
			}
		}
		return nil
	}
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "delete", "get", "delete")
	if pre := h.api.calls[2].delete.Preconditions; pre.UID == nil || pre.ResourceVersion != nil {
		t.Fatalf("retry must keep the UID precondition and drop the resourceVersion one: %+v", pre)
	}
}

func TestConflictWithChangedOwnersDecidesAgain(t *testing.T) {
	h := newHarness(t)
	owner, adopter := configMap("owner"), configMap("adopter")
	dep := configMap("dep", ownedBy(owner, false))
	h.observe(owner, adopter, dep)
	adopted := dep.DeepCopy()
	adopted.ResourceVersion = "8"
	ownedBy(adopter, false)(adopted)
	h.api.put("configmaps", adopted)
	h.api.fail = func(c call) error {
		if c.verb == "delete" {
			return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, c.name, errors.New("precondition failed"))
		}
		return nil
	}
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	// The live object has a live owner now: keep it, drop the dangling ref.
	expectVerbs(t, h, "delete", "get", "patch")
}

func TestCustomResourcesFallBackToJSONMergePatchOnce(t *testing.T) {
	h := newHarness(t)
	alive := object("example.com/v1", "Widget", "ns", "alive")
	gone := object("example.com/v1", "Widget", "ns", "gone")
	h.observe(alive, gone)
	d1 := object("example.com/v1", "Widget", "ns", "d1", ownedBy(alive, false), ownedBy(gone, true))
	d2 := object("example.com/v1", "Widget", "ns", "d2", ownedBy(alive, false), ownedBy(gone, true))
	h.observe(d1, d2)
	h.api.fail = func(c call) error {
		if c.patchType == types.StrategicMergePatchType {
			return apierrors.NewGenericServerResponse(415, "patch", schema.GroupResource{}, c.name, "strategic merge patch is not supported", 0, false)
		}
		return nil
	}
	h.gone(gone)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "patch", "patch", "patch")
	if h.api.calls[1].patchType != types.MergePatchType || h.api.calls[2].patchType != types.MergePatchType {
		t.Fatalf("after one refusal, patches must be JSON merge patches: %v", h.api.calls)
	}
	want := `{"metadata":{"uid":"widget-d2","resourceVersion":"7","ownerReferences":[{"apiVersion":"example.com/v1","kind":"Widget","name":"alive","uid":"widget-alive","blockOwnerDeletion":false}]}}`
	if got := h.api.calls[2].patch; got != want {
		t.Fatalf("merge patch: %s, want %s", got, want)
	}
}

func TestForegroundDeletionFinishesWhenBlockingDependentsAreGone(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	blocking := configMap("blocking", ownedBy(owner, true))
	loose := configMap("loose", ownedBy(owner, false))
	h.observe(owner, blocking, loose)

	deleting := configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
	h.observe(deleting)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "delete", "delete") // both dependents; the owner waits
	h.api.calls = nil

	h.gone(loose)
	if errs := h.drain(); len(errs) > 0 || len(h.api.calls) > 0 {
		t.Fatalf("a non-blocking dependent does not hold the owner, but the blocking one still does: %v %v", errs, h.api.calls)
	}
	h.gone(blocking)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "patch")
	want := `{"metadata":{"uid":"configmap-owner","resourceVersion":"7","finalizers":[]}}`
	if c := h.api.calls[0]; c.patchType != types.MergePatchType || c.patch != want {
		t.Fatalf("finalizer removal: %s %s, want %s", c.patchType, c.patch, want)
	}
}

func TestDependentWithItsOwnDependentsIsDeletedInTheForeground(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	mid := configMap("mid", ownedBy(owner, true))
	leaf := configMap("leaf", ownedBy(mid, true))
	h.observe(owner, mid, leaf)
	h.observe(configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents)))
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "delete")
	if p := h.api.calls[0].delete.PropagationPolicy; h.api.calls[0].name != "mid" || *p != metav1.DeletePropagationForeground {
		t.Fatalf("mid must be deleted in the foreground: %v %v", h.api.calls[0], *p)
	}
}

func TestOrphaningRemovesTheOwnerThenItsFinalizer(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	other := configMap("other")
	d1 := configMap("d1", ownedBy(owner, true))
	d2 := configMap("d2", ownedBy(owner, false), ownedBy(other, false))
	h.observe(owner, other, d1, d2)
	h.observe(configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerOrphanDependents)))
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "patch", "patch", "patch")
	var orphaned []string
	for _, c := range h.api.calls[:2] {
		if !strings.Contains(c.patch, `{"$patch":"delete","uid":"configmap-owner"}`) {
			t.Fatalf("orphaning patch %s", c.patch)
		}
		orphaned = append(orphaned, c.name)
	}
	slices.Sort(orphaned)
	if !slices.Equal(orphaned, []string{"d1", "d2"}) || h.api.calls[2].name != "owner" || !strings.Contains(h.api.calls[2].patch, `"finalizers":[]`) {
		t.Fatalf("want both dependents orphaned, then the owner's finalizer removed: %v", h.api.calls)
	}
}

// A deletion that waits for its dependents completes only once no object of
// a kind not watched (a dormant monitor's) can have been missed: while one
// is listed again, the owner keeps its finalizer.
func TestForegroundAndOrphaningWaitForDormantKindsToBeConfirmedEmpty(t *testing.T) {
	for _, tc := range []struct {
		name      string
		finalizer string
		// verbs are the calls made before the finalizer is removed.
		verbs []string
	}{
		{"foreground", metav1.FinalizerDeleteDependents, nil},
		{"orphan", metav1.FinalizerOrphanDependents, []string{"patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			owner := configMap("owner")
			h.observe(owner)
			if tc.finalizer == metav1.FinalizerOrphanDependents {
				h.observe(configMap("dep", ownedBy(owner, false)))
			}
			waking := true
			h.cache.dormant = func() error {
				if waking {
					return fmt.Errorf("%w: example.com/v1/widgets", monitor.ErrDormantWaking)
				}
				return nil
			}
			h.observe(configMap("owner", beingDeleted(), withFinalizers(tc.finalizer)))
			errs := h.drain()
			if len(errs) != 1 || !errors.Is(errs[0], errWaitForSync) {
				t.Fatalf("while a dormant kind is listed again, the deletion must wait for it as for a kind's sync: %v", errs)
			}
			expectVerbs(t, h, tc.verbs...)
			if h.cache.confirms != 1 {
				t.Fatalf("dormant kinds confirmed %d times, want once", h.cache.confirms)
			}

			waking = false
			h.api.calls = nil
			// The item is looked at again, as the worker would after
			// waitForSyncDelay.
			if tc.finalizer == metav1.FinalizerOrphanDependents {
				h.c.attemptToOrphan.Add(h.graph.Node(owner.UID))
			} else {
				h.c.attemptToDelete.Add(h.graph.Node(owner.UID))
			}
			if errs := h.drain(); len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if n := len(h.api.calls); n == 0 || h.api.calls[n-1].name != "owner" || !strings.Contains(h.api.calls[n-1].patch, `"finalizers":[]`) {
				t.Fatalf("once the dormant kinds are confirmed empty, the finalizer must be removed: %v", h.api.calls)
			}
		})
	}
}

// An owner the graph has not observed, found to exist by a live read, has
// its kind woken if it is dormant, so that the owner's deletion is observed
// as it happens; its dependent is left alone.
func TestAnUnobservedOwnerFoundLiveWakesItsKind(t *testing.T) {
	h := newHarness(t)
	owner := object("example.com/v1", "Widget", "ns", "owner")
	h.api.put("widgets", owner)
	dep := configMap("dep", ownedBy(owner, false))
	h.observe(dep)
	errs := h.drain()
	for _, err := range errs {
		if !quiet(err) {
			t.Fatalf("errors: %v", errs)
		}
	}
	expectVerbs(t, h, "get")
	want := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	if !slices.Contains(h.cache.woken, want) {
		t.Fatalf("kinds woken: %v, want %v", h.cache.woken, want)
	}
}

func TestIgnoredResourcesAreNeverWritten(t *testing.T) {
	h := newHarness(t)
	p, err := policy.FromSpec(&ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Resource: "configmaps"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.policy.Set(p)
	owner := configMap("owner")
	dep := configMap("dep", ownedBy(owner, false))
	h.observe(owner, dep)
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h)
}

func TestClusterScopedDependentOfNamespacedOwnerIsNeverCollected(t *testing.T) {
	h := newHarness(t)
	missing := configMap("missing")
	role := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role", ownedBy(missing, false))
	h.observe(role)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, c := range h.api.calls {
		if c.verb != "get" {
			t.Fatalf("cluster-scoped dependent of a namespaced owner must never be written: %v", h.api.calls)
		}
	}
	select {
	case e := <-h.recorder.Events:
		if !strings.Contains(e, ReasonOwnerRefInvalidNamespace) {
			t.Fatalf("event: %s", e)
		}
	default:
		t.Fatal("want an OwnerRefInvalidNamespace event")
	}
}

func TestOwnerOfAnUnservedKindIsNeverAReasonToDelete(t *testing.T) {
	h := newHarness(t)
	ghost := object("nope.example.com/v1", "Ghost", "ns", "ghost")
	dep := configMap("dep", ownedBy(ghost, false))
	h.observe(dep)
	errs := h.drain()
	var ns *notServedError
	if len(errs) == 0 || !errors.As(errs[0], &ns) {
		t.Fatalf("want a not-served error to retry with backoff, got %v", errs)
	}
	expectVerbs(t, h)
}

// The informer may have stored an object's being-deleted version before its
// monitor updated the graph: the collector must decide from the cached
// object, and must still finish the foreground deletion afterwards.
func TestCacheAheadOfTheGraphIsTrusted(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	mid := configMap("mid", ownedBy(owner, true))
	h.observe(owner, mid)
	// mid is being deleted in the foreground in the cache; the graph still
	// has the old version.
	deleting := configMap("mid", ownedBy(owner, true), beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
	h.cache.objects[cacheKey(schema.GroupKind{Kind: "ConfigMap"}, "ns", "mid")] = deleting
	h.api.put("configmaps", deleting)
	h.gone(owner)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	// No second DELETE: mid has no blocking dependents, so its foreground
	// deletion is finished by removing the finalizer.
	expectVerbs(t, h, "patch")
	if !strings.Contains(h.api.calls[0].patch, `"finalizers":[]`) {
		t.Fatalf("want the foregroundDeletion finalizer removed, got %s", h.api.calls[0].patch)
	}
}

func TestDeletionsThatKeepFailingAreReportedOnce(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	dep := configMap("dep", ownedBy(owner, false))
	h.observe(owner, dep)
	h.api.fail = func(c call) error {
		if c.verb == "delete" {
			return apierrors.NewInternalError(errors.New("etcd is unhappy"))
		}
		return nil
	}
	h.gone(owner)
	n := h.graph.Node(dep.UID)
	for i := 0; i < failureEventThreshold+2; i++ {
		if err := h.c.processAttemptToDelete(context.Background(), n); err == nil {
			t.Fatal("the delete should fail")
		}
	}
	var got []string
	for len(h.recorder.Events) > 0 {
		got = append(got, <-h.recorder.Events)
	}
	if len(got) != 1 || !strings.Contains(got[0], "Warning "+ReasonCollectionFailing) || !strings.Contains(got[0], "etcd is unhappy") {
		t.Fatalf("want exactly one CollectionFailing warning naming the error, got %q", got)
	}
}

// A collector built but never started (its manager failed first) still
// lets its queues' goroutines go when closed.
func TestCloseShutsDownTheQueuesOfACollectorThatNeverStarted(t *testing.T) {
	h := newHarness(t)
	h.c.Close()
	h.c.Close() // twice is fine
	for name, q := range map[string]interface{ ShuttingDown() bool }{
		AttemptToDeleteQueue: h.c.attemptToDelete, AttemptToOrphanQueue: h.c.attemptToOrphan, "shadow verdicts": h.c.shadow.verdicts,
	} {
		if !q.ShuttingDown() {
			t.Errorf("queue %s still runs after Close", name)
		}
	}
}
