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
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/explain"
)

func allowAll(explain.Object) explain.Access { return explain.Allowed }
func denyAll(explain.Object) explain.Access  { return explain.Denied }

// targetOf is the explain target of obj, a ConfigMap or a ClusterRole.
func targetOf(obj *metav1.PartialObjectMetadata) explain.Target {
	gv, _ := schema.ParseGroupVersion(obj.APIVersion)
	resource, namespaced := "configmaps", true
	if obj.Kind == "ClusterRole" {
		resource, namespaced = "clusterroles", false
	}
	return explain.Target{Resource: gv.WithResource(resource), Kind: gv.WithKind(obj.Kind), Namespaced: namespaced, Namespace: obj.Namespace, Name: obj.Name}
}

// An explanation reads through its own client, never the collector's, at
// most its reads; the owners it leaves unread are reported not checked, and
// then it never says that the object will be deleted.
func TestExplanationReadsThroughItsOwnClientWithinItsReads(t *testing.T) {
	h := newHarness(t)
	var opts []objOpt
	for i := range 4 {
		opts = append(opts, ownedBy(configMap(fmt.Sprint("gone-", i)), false)) // never observed, not on the server
	}
	dep := configMap("dep", opts...)
	h.observe(dep)

	ex := h.c.Explain(context.Background(), targetOf(dep), 3, allowAll)
	if len(h.api.calls) != 0 {
		t.Fatalf("the explanation used the collector's client: %v", h.api.calls)
	}
	if got := h.explainAPI.verbs(); len(got) != 3 {
		t.Fatalf("reads %v, want 3: the object's and two owners'", h.explainAPI.calls)
	}
	checked, unchecked := 0, 0
	for _, o := range ex.Owners {
		switch o.Status {
		case explain.OwnerDangling:
			checked++
		case explain.OwnerNotChecked:
			unchecked++
		}
	}
	if checked != 2 || unchecked != 2 || ex.NotChecked == nil || ex.NotChecked.Owners != 2 || !strings.Contains(ex.NotChecked.Message, "2 owners were not read") {
		t.Fatalf("owners %+v, not checked %+v: want 2 read and gone, 2 not checked and said so", ex.Owners, ex.NotChecked)
	}
	if !strings.HasPrefix(ex.Decision, "unknown: this answer did not read 2 of its owners") {
		t.Fatalf("decision %q: with owners not read, it must not say the object will be deleted", ex.Decision)
	}

	// With reads enough for every owner, it says what the collector does.
	ex = h.c.Explain(context.Background(), targetOf(dep), 5, allowAll)
	if ex.NotChecked != nil || !strings.HasPrefix(ex.Decision, "will be deleted") {
		t.Fatalf("with every owner read: not checked %+v, decision %q", ex.NotChecked, ex.Decision)
	}
}

// An owner reference whose name cannot be one path segment is explained,
// in words, as naming no object, without a read, whoever asks (the object
// states it; it tells nothing of another); nothing of the object the
// cleaned path would lead to appears.
func TestExplanationSaysWhyAReferenceNamesNoObject(t *testing.T) {
	h := newHarness(t)
	secret := object("v1", "Secret", "other", "token")
	secret.UID = "secret-uid"
	h.observe(secret)
	h.api.put("secrets", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "../../other/secrets/token", UID: secret.UID}})
	dep := configMap("dep", refNamed("v1", "Secret", "../../other/secrets/token", "ghost-uid"))
	h.observe(dep)

	ex := h.c.Explain(context.Background(), targetOf(dep), 10, denyAll)
	if len(ex.Owners) != 1 || ex.HiddenOwners != 0 {
		t.Fatalf("owners %+v (hidden %d): want the reference named", ex.Owners, ex.HiddenOwners)
	}
	if o := ex.Owners[0]; o.Status != explain.OwnerDangling || !strings.Contains(o.Reason, "cannot be one path segment") || !strings.Contains(o.Reason, "names no object") {
		t.Fatalf("owner %+v: want Dangling, saying that its name names no object", o)
	}
	if got := h.explainAPI.verbs(); len(got) != 1 {
		t.Fatalf("reads %v, want only the object's", h.explainAPI.calls)
	}
	data, _ := json.Marshal(ex)
	if strings.Contains(string(data), string(secret.UID)) {
		t.Fatalf("the explanation names the Secret: %s", data)
	}
	if !strings.HasPrefix(ex.Decision, "will be deleted") {
		t.Fatalf("decision %q: its only owner names no object", ex.Decision)
	}
}

// Related objects whose access was not reviewed are counted as hidden and
// reported not checked.
func TestRelatedObjectsNotReviewedAreCountedNotNamed(t *testing.T) {
	h := newHarness(t)
	owner := configMap("owner")
	h.observe(owner)
	for i := range 3 {
		h.observe(configMap(fmt.Sprint("dep-", i), ownedBy(owner, false)))
	}
	ex := h.c.Explain(context.Background(), targetOf(owner), 10, func(explain.Object) explain.Access { return explain.NotReviewed })
	if len(ex.Dependents) != 0 || ex.HiddenDependents != 3 || ex.NotChecked == nil || ex.NotChecked.Access != 3 ||
		!strings.Contains(ex.NotChecked.Message, "your access to 3 related objects was not reviewed") {
		t.Fatalf("dependents %+v (hidden %d), not checked %+v", ex.Dependents, ex.HiddenDependents, ex.NotChecked)
	}
}

// failOrphaning makes a ClusterRole "role" orphan the ConfigMaps of
// namespace ns that it owns, with every patch failing; it returns the
// owner after failures attempts.
func failOrphaning(t *testing.T, h *harness, failures int, dependents ...string) *metav1.PartialObjectMetadata {
	t.Helper()
	role := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role")
	h.observe(role)
	for _, name := range dependents {
		h.observe(configMap(name, ownedBy(role, false)))
	}
	h.api.fail = func(c call) error {
		if c.verb == "patch" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: c.resource}, c.name, errors.New("a webhook refuses"))
		}
		return nil
	}
	orphaning := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role", beingDeleted(), withFinalizers(metav1.FinalizerOrphanDependents))
	h.observe(orphaning)
	n := h.graph.Node(role.UID)
	for range failures {
		if err := h.c.processAttemptToOrphan(context.Background(), n); err == nil {
			t.Fatal("orphaning should fail")
		}
	}
	return orphaning
}

// The queue's last error of a cluster-scoped owner names its namespaced
// dependents; the explanation shows it only to a caller who may get them.
func TestExplanationShowsTheLastErrorOnlyWhereTheCallerMayGetWhatItNames(t *testing.T) {
	h := newHarness(t)
	role := failOrphaning(t, h, 1, "private-dependent")

	ex := h.c.Explain(context.Background(), targetOf(role), 10, func(o explain.Object) explain.Access {
		if o.Namespace != "" {
			return explain.Denied
		}
		return explain.Allowed
	})
	if ex.Queue.Failures != 1 || ex.Queue.LastError == "" || strings.Contains(ex.Queue.LastError, "private-dependent") {
		t.Fatalf("queue %+v: want the failure counted and its error, which names a dependent the caller may not get, left out", ex.Queue)
	}
	ex = h.c.Explain(context.Background(), targetOf(role), 10, allowAll)
	if !strings.Contains(ex.Queue.LastError, "private-dependent") || !strings.Contains(ex.Queue.LastError, "a webhook refuses") {
		t.Fatalf("queue %+v: a caller who may get the dependent sees the error", ex.Queue)
	}
}

// Events of a cluster-scoped object are recorded in namespace default, and
// read by whoever may read events there: they name no namespaced object.
func TestEventsOfAClusterScopedOwnerNameNoNamespacedObject(t *testing.T) {
	h := newHarness(t)
	role := failOrphaning(t, h, failureEventThreshold, "private-a", "private-b")
	child := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "child-role", ownedBy(role, false))
	h.observe(child)
	var got []string
	for len(h.recorder.Events) > 0 {
		got = append(got, <-h.recorder.Events)
	}
	if len(got) != 1 || !strings.Contains(got[0], ReasonCollectionFailing) || strings.Contains(got[0], "private-") ||
		!strings.Contains(got[0], "2 errors about objects not named here") {
		t.Fatalf("want one CollectionFailing event that counts the errors about namespaced dependents and names none, got %q", got)
	}

	start := role.DeletionTimestamp.Time
	h.c.scanBlocked(context.Background(), start.Add(time.Hour), time.Minute)
	if len(h.recorder.Events) != 1 {
		t.Fatalf("want one DeletionBlocked event, have %d", len(h.recorder.Events))
	}
	e := <-h.recorder.Events
	for _, want := range []string{ReasonDeletionBlocked, "3 dependents to be orphaned", "ClusterRole child-role", "2 in namespaces, not named", "failed 5 times"} {
		if !strings.Contains(e, want) {
			t.Errorf("DeletionBlocked %q does not say %q", e, want)
		}
	}
	if strings.Contains(e, "private-") || strings.Contains(e, "ns/") {
		t.Errorf("DeletionBlocked %q names a namespaced dependent", e)
	}
}

// A cluster-scoped owner deleted in the foreground: its DeletionBlocked
// event names the cluster-scoped blocking dependents and counts the
// namespaced ones.
func TestDeletionBlockedOfAClusterScopedOwnerCountsNamespacedDependents(t *testing.T) {
	h := newHarness(t)
	role := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role")
	h.observe(role,
		object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "held-role", ownedBy(role, true), withFinalizers("example.com/hold")),
		configMap("private-held", ownedBy(role, true)))
	start := time.Now()
	deleting := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "role", withFinalizers(metav1.FinalizerDeleteDependents))
	deleting.DeletionTimestamp = &metav1.Time{Time: start}
	h.observe(deleting)
	h.c.scanBlocked(context.Background(), start.Add(time.Hour), time.Minute)
	if len(h.recorder.Events) != 1 {
		t.Fatalf("want one DeletionBlocked event, have %d", len(h.recorder.Events))
	}
	e := <-h.recorder.Events
	for _, want := range []string{"2 blocking dependents", "ClusterRole held-role", "1 in namespaces, not named in an event of a cluster-scoped owner"} {
		if !strings.Contains(e, want) {
			t.Errorf("DeletionBlocked %q does not say %q", e, want)
		}
	}
	if strings.Contains(e, "private-held") || strings.Contains(e, "ns/") {
		t.Errorf("DeletionBlocked %q names a namespaced dependent", e)
	}
}
