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

package dormant_test

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/test/framework"
)

// dormantKind creates a namespaced CRD of its own, with no object, and
// waits until the collector has listed it and stopped watching it.
func dormantKind(t *testing.T) framework.Kind {
	t.Helper()
	k, _ := cp.CreateCRD(t, framework.CRD{Group: framework.UniqueGroup("dormant"), Kind: "Widget", Plural: "widgets", Scope: apiextensionsv1.NamespaceScoped})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := manager.Engine.KindState(k.GroupKind()); !st.Dormant {
			return fmt.Errorf("kind state %+v", st)
		}
		return nil
	}, "a kind with no object should go dormant once listed")
	return k
}

// requireWoken fails the test unless the kind is watched again: what the
// test asserted was decided with the kind's objects in view.
func requireWoken(t *testing.T, k framework.Kind) {
	t.Helper()
	if st := manager.Engine.KindState(k.GroupKind()); st.Dormant || !st.Watched {
		t.Fatalf("kind state %+v: the collector should have found the kind's object, and watched it again", st)
	}
}

// An owner deleted with the orphan policy while a kind with no object
// (not watched) gets a dependent of it: before the orphan finalizer is
// removed, the collector checks the kind again, finds the dependent and
// orphans it; the dependent is never collected.
func TestAnOrphanedDependentOfADormantKindIsOrphanedNotCollected(t *testing.T) {
	t.Parallel()
	widgets := dormantKind(t)
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	widget := cp.Create(t, widgets, ns, "widget", framework.OwnedBy(owner.Ref(true)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationOrphan)
	cp.WaitGone(t, "ownergc should orphan its dependents, then remove its orphan finalizer", owner)
	cp.WaitOwners(t, widget, "its only owner was deleted with the orphan policy")
	cp.SurviveIntact(t, "an orphaned object is not collected", widget)
	requireWoken(t, widgets)
}

// An owner deleted in the foreground waits for a blocking dependent of a
// kind that had no object (not watched) when it was created: the collector
// checks the kind before it removes the foregroundDeletion finalizer, finds
// the dependent, deletes it, and lets the owner go only once it is gone.
func TestAForegroundDeletionWaitsForABlockingDependentOfADormantKind(t *testing.T) {
	t.Parallel()
	widgets := dormantKind(t)
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	held := cp.CreateHeld(t, widgets, ns, "held", framework.OwnedBy(owner.Ref(true)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	cp.WaitHeldDeleting(t, held, "ownergc should delete the blocking dependent of an owner deleted in the foreground")
	cp.StayDeleting(t, "its blocking dependent still exists", metav1.FinalizerDeleteDependents, owner)
	requireWoken(t, widgets)

	cp.Release(t, held)
	cp.WaitGone(t, "its last blocking dependent is gone", owner)
}

// A dependent whose owner is of a dormant kind is not collected while the
// owner exists: the graph has not observed the owner, which a live read
// finds; that read wakes the owner's kind, so that the owner's deletion is
// observed as it happens and the dependent collected. (Not parallel: the
// other tests' deletions check every dormant kind, which would wake this
// one first.)
func TestAnOwnerOfADormantKindFoundLiveWakesItsKind(t *testing.T) {
	widgets := dormantKind(t)
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, widgets, ns, "owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(owner.Ref(false)))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if st := manager.Engine.KindState(widgets.GroupKind()); !st.Watched || !st.Synced {
			return fmt.Errorf("kind state %+v", st)
		}
		return nil
	}, "reading the dependent's owner live should wake its kind (the periodic check is an hour away)")
	manager.WaitObserved(t, owner, dep)
	cp.SurviveIntact(t, "its owner exists", dep)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its only owner was deleted", dep)
}

// The engine reports its dormant kinds: monitored, not syncing. (The
// other tests, run in parallel, add kinds of their own, which sync for a
// moment: the engine is synced once they have.)
func TestDormantKindsAreReportedAsMonitored(t *testing.T) {
	t.Parallel()
	dormantKind(t)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		st := manager.Engine.Status()
		if st.Dormant == 0 || st.Dormant > st.Monitored || !st.Synced {
			return fmt.Errorf("engine status: %d dormant of %d monitored, synced %v, syncing %v", st.Dormant, st.Monitored, st.Synced, st.Syncing)
		}
		return nil
	}, "the engine should count its dormant kinds among the monitored ones, and be synced with them")
}
