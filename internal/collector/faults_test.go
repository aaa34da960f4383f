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
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/monitor"
)

var (
	widgetKind = schema.GroupKind{Group: "example.com", Kind: "Widget"}
)

// A kind re-watched at another version re-lists into an empty cache. Work
// on its objects that finds them missing from the cache meanwhile is kept
// until the list is in, then decided as before.
func TestCacheMissWhileTheKindRelistsKeepsTheWork(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	dep := object("example.com/v1", "Widget", "ns", "dep", ownedBy(owner, false))
	h.observe(owner, dep)

	// The Widget monitor restarts: empty cache, not synced.
	delete(h.cache.objects, cacheKey(widgetKind, "ns", "dep"))
	h.cache.states[widgetKind] = monitor.KindState{Watched: true, Since: time.Now()}
	h.gone(owner)
	errs := h.drain()
	if len(errs) != 1 || !errors.Is(errs[0], errWaitForSync) {
		t.Fatalf("a cache miss while the kind re-lists must wait for the list, got %v", errs)
	}
	expectVerbs(t, h)

	// The list is in.
	h.cache.objects[cacheKey(widgetKind, "ns", "dep")] = dep
	delete(h.cache.states, widgetKind)
	if err := h.c.processAttemptToDelete(context.Background(), h.graph.Node(dep.UID)); err != nil {
		t.Fatalf("after the list: %v", err)
	}
	expectVerbs(t, h, "delete")
}

// A kind whose list fails for good (a conversion webhook that is down) is
// not waited for forever: once it is reported failing, work on its objects
// reads them live, as it does for a kind that takes longer than the sync
// timeout to list.
func TestKindThatCannotBeListedIsReadLive(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state monitor.KindState
	}{
		{"failing", monitor.KindState{Watched: true, Failing: true, Since: time.Now()}},
		{"listing for longer than the sync timeout", monitor.KindState{Watched: true, Since: time.Now().Add(-time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// A ConfigMap owned by a Widget that does not exist, and one
			// owned by a Widget that does.
			missing := object("example.com/v1", "Widget", "ns", "missing")
			present := object("example.com/v1", "Widget", "ns", "present")
			h.api.put("widgets", present)
			h.cache.states[widgetKind] = tc.state
			a := configMap("a", ownedBy(missing, false))
			b := configMap("b", ownedBy(present, false))
			h.observe(a, b)
			errs := h.drain()
			if len(errs) != 1 || !errors.Is(errs[0], errRequeue) {
				t.Fatalf("want the existing owner looked at again later, got %v", errs)
			}
			deleted := h.api.deleted()
			if len(deleted) != 1 || deleted[0] != "a" {
				t.Fatalf("deleted %v, want only a (its owner does not exist); calls %v", deleted, h.api.calls)
			}
		})
	}
	t.Run("still listing", func(t *testing.T) {
		h := newHarness(t)
		missing := object("example.com/v1", "Widget", "ns", "missing")
		h.cache.states[widgetKind] = monitor.KindState{Watched: true, Since: time.Now()}
		h.observe(configMap("a", ownedBy(missing, false)))
		errs := h.drain()
		if len(errs) != 1 || !errors.Is(errs[0], errWaitForSync) {
			t.Fatalf("an owner of a kind still being listed waits for the list, got %v", errs)
		}
		expectVerbs(t, h)
	})
}

// Until it starts (a standby replica), the collector takes no work and
// records no events; when it starts it finds all the work the graph holds.
func TestStandbyQueuesNothingAndFindsAllWorkWhenItLeads(t *testing.T) {
	h := newHarness(t)
	h.c.leading.Store(false)
	owner := configMap("owner")
	fg := configMap("fg")
	elsewhere := object("v1", "ConfigMap", "other", "elsewhere")
	deps := []*metav1.PartialObjectMetadata{
		configMap("dep-1", ownedBy(owner, false)),
		configMap("dep-2", ownedBy(owner, false)),
		configMap("fgdep", ownedBy(fg, true)),
		configMap("badns", ownedBy(elsewhere, false)),
	}
	h.observe(owner, fg, elsewhere)
	h.observe(deps...)
	h.gone(owner)
	h.observe(configMap("fg", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents)))
	h.observe(configMap("orphaner", beingDeleted(), withFinalizers(metav1.FinalizerOrphanDependents)))
	if d, o := h.c.QueueLengths(); d != 0 || o != 0 {
		t.Fatalf("a standby must queue nothing, queues hold %d and %d", d, o)
	}
	if len(h.recorder.Events) != 0 {
		t.Fatalf("a standby must record no events, got %q", <-h.recorder.Events)
	}

	h.c.leading.Store(true)
	h.graph.Resync(h.c)
	if d, o := h.c.QueueLengths(); d != 5 || o != 1 {
		t.Fatalf("after promotion: queues hold %d and %d, want 5 (dep-1, dep-2, fg, fgdep, badns) and 1 (orphaner)", d, o)
	}
	if len(h.recorder.Events) != 1 || !strings.Contains(<-h.recorder.Events, ReasonOwnerRefInvalidNamespace) {
		t.Fatal("after promotion the invalid namespace reference must be reported once")
	}
}

// Dependents that name one owner UID by several coordinates: each verified
// absence moves the virtual node to the next coordinates, with backoff.
func TestVirtualOwnerKeptUnderOtherCoordinatesIsRetriedWithBackoff(t *testing.T) {
	h := newHarness(t)
	a := configMap("a", ownedBy(object("v1", "ConfigMap", "ns", "first"), false))
	b := configMap("b", ownedBy(object("v1", "Secret", "ns", "second"), false))
	// Same owner UID, two kinds.
	b.OwnerReferences[0].UID = a.OwnerReferences[0].UID
	h.observe(a, b)
	n, _ := h.c.attemptToDelete.Get()
	h.c.attemptToDelete.Done(n)
	if err := h.c.processAttemptToDelete(context.Background(), n); !errors.Is(err, errRequeue) {
		t.Fatalf("a virtual node kept under other coordinates must be retried with backoff, got %v", err)
	}
}

// The API server keeps several references to one owner UID. Every one is
// classified, and a dangling owner's references all go.
func TestDuplicateReferencesToAnAbsentOwnerAreAllRemoved(t *testing.T) {
	h := newHarness(t)
	alive, gone := configMap("alive"), configMap("gone")
	h.observe(alive, gone)
	dep := configMap("dep", ownedBy(alive, false), ownedBy(gone, false), ownedBy(gone, true))
	h.observe(dep)
	h.gone(gone)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "patch")
	want := `{"metadata":{"uid":"configmap-dep","ownerReferences":[{"$patch":"delete","uid":"configmap-gone"},{"$patch":"delete","uid":"configmap-gone"}]}}`
	if got := h.api.calls[0].patch; got != want {
		t.Fatalf("patch %s, want %s", got, want)
	}
}

// An owner reference at a version that cannot be mapped to a served
// resource is never a reason to delete, even when the owner's coordinates
// were recorded absent at a served version.
func TestUnservedVersionOfAKnownAbsentOwnerIsNeverAReasonToDelete(t *testing.T) {
	h := newHarness(t)
	h.graph.AbsentOwners().Add(graph.Identity{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "ns", Name: "w", UID: "widget-w"})
	ref := metav1.OwnerReference{APIVersion: "example.com/v9", Kind: "Widget", Name: "w", UID: "widget-w"}
	dep := configMap("dep", func(o *metav1.PartialObjectMetadata) { o.OwnerReferences = []metav1.OwnerReference{ref} })
	h.observe(dep)
	errs := h.drain()
	var ns *notServedError
	if len(errs) == 0 || !errors.As(errs[0], &ns) {
		t.Fatalf("want a not-served error to retry with backoff, got %v", errs)
	}
	expectVerbs(t, h)
}

// Deleting a CRD deletes its objects, and its resource leaves discovery
// before the collector has looked at every dependent of them. A dependent
// whose owners were all observed deleted is collected although their kind
// can no longer be mapped; one with an owner never confirmed absent is kept.
func TestOwnersObservedDeletedAreGoneAfterTheirKindLeavesDiscovery(t *testing.T) {
	h := newHarness(t)
	s1 := object("example.com/v1", "Widget", "ns", "s1")
	s2 := object("example.com/v1", "Widget", "ns", "s2")
	s3 := object("example.com/v1", "Widget", "ns", "s3")
	h.observe(s1, s2, s3)
	both := configMap("of-both", ownedBy(s1, false), ownedBy(s2, false))
	unconfirmed := configMap("of-s1-and-s3", ownedBy(s1, false), ownedBy(s3, false))
	h.observe(both, unconfirmed)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors while the owners exist: %v", errs)
	}
	h.gone(s1)
	h.gone(s2)
	// The resource leaves discovery, and s3 is never observed deleted: the
	// monitor stopped first, so only its node's observation is gone.
	delete(h.cache.served, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	h.graph.RemoveKind(widgetKind, graph.KindUnserved, h.c)
	errs := h.drain()
	if len(errs) == 0 {
		t.Fatal("want of-s1-and-s3 kept with a not-served error (s3 cannot be verified), got none")
	}
	for _, err := range errs {
		var ns *notServedError
		if !errors.As(err, &ns) {
			t.Fatalf("want only not-served errors (of-s1-and-s3 and s3's unobserved node wait for the kind), got %v", errs)
		}
	}
	deleted := h.api.deleted()
	if len(deleted) != 1 || deleted[0] != "of-both" {
		t.Fatalf("deleted %v, want only of-both (both owners observed deleted); calls %v", deleted, h.api.calls)
	}
}

// The same when the absent-owner cache has forgotten the owners (a CRD
// deleted with more objects than it holds): the graph still knows that the
// owners the dependent referenced were confirmed absent, also after the
// dependent changes.
func TestOwnersForgottenByTheAbsentOwnerCacheAreGoneAfterTheirKindLeavesDiscovery(t *testing.T) {
	h := newHarness(t)
	s1 := object("example.com/v1", "Widget", "ns", "s1")
	s2 := object("example.com/v1", "Widget", "ns", "s2")
	h.observe(s1, s2)
	dep := configMap("dep", ownedBy(s1, false), ownedBy(s2, false))
	h.observe(dep)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors while the owners exist: %v", errs)
	}
	h.gone(s1)
	h.gone(s2)
	for i := range 200 { // more than the harness's cache holds
		h.graph.AbsentOwners().Add(graph.Identity{Kind: "Filler", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i))})
	}
	delete(h.cache.served, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	// The dependent changes meanwhile (a label, say: same references).
	changed := dep.DeepCopy()
	changed.ResourceVersion = "8"
	changed.OwnerReferences = append(changed.OwnerReferences, changed.OwnerReferences[0])
	h.observe(changed)
	if o := h.graph.Owner(s1.UID); o.Known {
		t.Fatalf("an owner confirmed absent must not come back as a virtual node: %+v", o)
	}
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	expectVerbs(t, h, "delete")

	// A reference the graph has not observed is never taken for gone.
	h2 := newHarness(t)
	w := object("example.com/v1", "Widget", "ns", "w")
	delete(h2.cache.served, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	h2.observe(configMap("dep"))
	h2.cache.objects[cacheKey(schema.GroupKind{Kind: "ConfigMap"}, "ns", "dep")] = configMap("dep", ownedBy(w, false))
	if err := h2.c.processAttemptToDelete(context.Background(), h2.graph.Node("configmap-dep")); err == nil {
		t.Fatal("an owner of an unserved kind that the graph never linked must not be taken for gone")
	}
	expectVerbs(t, h2)

	// A reference that names the gone owner's UID by other coordinates
	// afterwards (another kind, not served) is not taken for gone: the
	// owner was confirmed absent only where it was looked for.
	h3 := newHarness(t)
	s3 := object("example.com/v1", "Widget", "ns", "s3")
	h3.observe(s3)
	renamed := configMap("renamed", ownedBy(s3, false))
	h3.observe(renamed)
	h3.gone(s3)
	if errs := h3.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	h3.api.calls = nil
	h3.api.put("configmaps", renamed) // deleted by the fake: back for the next step
	again := renamed.DeepCopy()
	again.OwnerReferences[0].Kind = "Gadget"
	again.ResourceVersion = "9"
	h3.observe(again)
	for _, err := range h3.drain() {
		var ns *notServedError
		if !errors.As(err, &ns) {
			t.Fatalf("want only not-served errors, got %v", err)
		}
	}
	expectVerbs(t, h3)
}

// A cluster-scoped object naming an owner observed in a namespace is left
// alone, and the event says so.
func TestClusterScopedDependentOfAnObservedNamespacedOwnerIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	h.observe(owner)
	role := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role", ownedBy(owner, false))
	h.observe(role)
	if errs := h.drain(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, c := range h.api.calls {
		if c.verb != "get" {
			t.Fatalf("the cluster-scoped dependent must never be written: %v", h.api.calls)
		}
	}
	if len(h.recorder.Events) == 0 {
		t.Fatal("want an OwnerRefInvalidNamespace event")
	}
	e := <-h.recorder.Events
	if !strings.Contains(e, ReasonOwnerRefInvalidNamespace) || !strings.Contains(e, "left alone") || strings.Contains(e, "treated as absent") {
		t.Fatalf("event %q must say the object is left alone", e)
	}
}

// notServedPath is the error a request to a path the API server does not
// serve (a version it stopped serving) comes back with: a 404 that is not
// a status about the object.
func notServedPath(c call) error {
	return apierrors.NewGenericServerResponse(404, c.verb, schema.GroupResource{Resource: c.resource}, c.name, "404 page not found", 0, true)
}

// A 404 from a path that is not served says nothing about the object: an
// owner read that way is not absent, and a dependent deleted that way is
// not gone.
func TestA404ForAPathThatIsNotServedIsNotAbsence(t *testing.T) {
	t.Run("owner read", func(t *testing.T) {
		h := newHarness(t)
		owner := configMap("owner") // exists, not observed
		h.api.put("configmaps", owner)
		h.api.fail = func(c call) error {
			if c.verb == "get" {
				return notServedPath(c)
			}
			return nil
		}
		h.observe(configMap("dep", ownedBy(owner, false)))
		errs := h.drain()
		if len(errs) == 0 {
			t.Fatal("want an error to retry")
		}
		for _, c := range h.api.calls {
			if c.verb != "get" {
				t.Fatalf("nothing may be written when the owner cannot be read: %v", h.api.calls)
			}
		}
	})
	t.Run("dependent deleted", func(t *testing.T) {
		h := newHarness(t)
		owner := configMap("owner")
		dep := configMap("dep", ownedBy(owner, false))
		h.observe(owner, dep)
		h.api.fail = func(c call) error {
			if c.verb == "delete" {
				return notServedPath(c)
			}
			return nil
		}
		h.gone(owner)
		if errs := h.drain(); len(errs) != 1 {
			t.Fatalf("the delete that reached no object must be retried, got errors %v", errs)
		}
	})
}

// A foreground deletion that lasts longer than the threshold is reported
// on the owner, naming the blocking dependent and why it remains; its end
// is reported too.
func TestBlockedForegroundDeletionIsReported(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	held := configMap("held", ownedBy(owner, true))
	loose := configMap("loose", ownedBy(owner, false))
	h.observe(owner, held, loose)
	start := time.Now()
	deleting := configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
	deleting.DeletionTimestamp = &metav1.Time{Time: start}
	h.observe(deleting)
	// The blocking dependent is being deleted too, held by a finalizer.
	heldDeleting := configMap("held", ownedBy(owner, true), beingDeleted(), withFinalizers("example.com/hold"))
	h.observe(heldDeleting)

	h.c.scanBlocked(context.Background(), start.Add(time.Second), time.Minute)
	if b := h.c.BlockedDeletions(); b.Count != 0 || len(h.recorder.Events) != 0 {
		t.Fatalf("nothing is blocked before the threshold: %+v, %d events", b, len(h.recorder.Events))
	}
	h.c.scanBlocked(context.Background(), start.Add(2*time.Minute), time.Minute)
	b := h.c.BlockedDeletions()
	if b.Count != 1 || b.Oldest == nil || b.Oldest.Owner.Name != "owner" || !b.Oldest.Since.Equal(start) || b.Oldest.Resource != "v1/configmaps" {
		t.Fatalf("blocked deletions: %+v", b)
	}
	if len(h.recorder.Events) != 1 {
		t.Fatalf("want one DeletionBlocked event, have %d", len(h.recorder.Events))
	}
	e := <-h.recorder.Events
	for _, want := range []string{"Warning " + ReasonDeletionBlocked, "1 blocking dependents", "ConfigMap ns/held", "finalizers example.com/hold"} {
		if !strings.Contains(e, want) {
			t.Fatalf("event %q does not say %q", e, want)
		}
	}
	if strings.Contains(e, "loose") {
		t.Fatalf("event %q names a dependent that does not block", e)
	}
	h.c.scanBlocked(context.Background(), start.Add(3*time.Minute), time.Minute)
	if len(h.recorder.Events) != 0 {
		t.Fatalf("reported again before the report interval: %q", <-h.recorder.Events)
	}

	h.gone(heldDeleting)
	h.gone(deleting)
	h.c.scanBlocked(context.Background(), start.Add(4*time.Minute), time.Minute)
	if b := h.c.BlockedDeletions(); b.Count != 0 || b.Oldest != nil {
		t.Fatalf("after the deletion finished: %+v", b)
	}
	if len(h.recorder.Events) != 1 || !strings.Contains(<-h.recorder.Events, "Normal "+ReasonDeletionUnblocked) {
		t.Fatal("want one DeletionUnblocked event")
	}
}
