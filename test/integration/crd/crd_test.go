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

package crd_test

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

// A CRD created while the manager runs is discovered and watched: custom
// resources of it are collected, as owners and as dependents.
func TestCustomResourcesOfACRDCreatedAfterStartAreCollected(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	gizmos, established := createCRD(t, "late", "Gizmo", "gizmos", apiextensionsv1.NamespaceScoped)

	crOwner := cp.Create(t, gizmos, ns, "owner-of-gizmo")
	crDep := cp.Create(t, gizmos, ns, "gizmo-of-gizmo", framework.OwnedBy(crOwner.Ref(false)))
	crOwnerOfCM := cp.Create(t, gizmos, ns, "owner-of-configmap")
	cmDep := cp.Create(t, framework.ConfigMaps, ns, "configmap-of-gizmo", framework.OwnedBy(crOwnerOfCM.Ref(false)))
	cmOwner := cp.Create(t, framework.ConfigMaps, ns, "owner-of-gizmo")
	crDepOfCM := cp.Create(t, gizmos, ns, "gizmo-of-configmap", framework.OwnedBy(cmOwner.Ref(false)))

	for _, o := range []framework.Object{crOwner, crOwnerOfCM, cmOwner} {
		cp.DeleteWith(t, o, metav1.DeletePropagationBackground)
	}
	for _, c := range []struct {
		dep  framework.Object
		what string
	}{
		{crDep, "custom resource owner, custom resource dependent"},
		{cmDep, "custom resource owner, ConfigMap dependent"},
		{crDepOfCM, "ConfigMap owner, custom resource dependent"},
	} {
		gone := cp.WaitGoneWithin(t, framework.CascadeTimeout, "its only owner was deleted", c.dep)
		t.Logf("%s: collected %s after the CRD was Established (design goal ~2s)", c.what, gone.Sub(established).Round(10*time.Millisecond))
	}

	// The kind stays watched: owners deleted now are seen through the watch.
	later := cp.Create(t, gizmos, ns, "later-owner")
	laterDeps := []framework.Object{
		cp.Create(t, gizmos, ns, "later-gizmo", framework.OwnedBy(later.Ref(false))),
		cp.Create(t, framework.ConfigMaps, ns, "later-configmap", framework.OwnedBy(later.Ref(true))),
	}
	keptThenCollected(t, later, laterDeps, "its owner exists", "its only owner was deleted")
}

// Orphaning a custom resource removes the references to it from its
// dependents (custom resources take no strategic merge patch: ownergc must
// fall back to a JSON merge patch) and then its orphan finalizer.
func TestOrphanDeletionOfACustomResourceKeepsItsDependents(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	doodads, _ := createCRD(t, "orphan", "Doodad", "doodads", apiextensionsv1.NamespaceScoped)
	owner := cp.Create(t, doodads, ns, "owner")
	other := cp.Create(t, doodads, ns, "other-owner")
	only := cp.Create(t, doodads, ns, "only-owner", framework.OwnedBy(owner.Ref(true)))
	two := cp.Create(t, doodads, ns, "two-owners", framework.OwnedBy(owner.Ref(false), other.Ref(false)))
	cm := cp.Create(t, framework.ConfigMaps, ns, "configmap", framework.OwnedBy(owner.Ref(true)))

	cp.DeleteWith(t, owner, metav1.DeletePropagationOrphan)
	cp.WaitGone(t, "its orphan finalizer should be removed once its dependents are orphaned", owner)
	cp.WaitOwners(t, only, "the orphaned dependent should lose its reference and live on")
	cp.WaitOwners(t, two, "the orphaned dependent should keep only its other owner", other.UID)
	cp.WaitOwners(t, cm, "the orphaned ConfigMap should lose its reference and live on")
	cp.Survive(t, "they were orphaned", only, two, cm)
}

// Deleting a custom resource in the foreground deletes its dependents
// first, waits for the blocking ones, then removes the foregroundDeletion
// finalizer.
func TestForegroundDeletionOfACustomResourceDeletesItsDependentsFirst(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	whatsits, _ := createCRD(t, "foreground", "Whatsit", "whatsits", apiextensionsv1.NamespaceScoped)
	owner := cp.Create(t, whatsits, ns, "owner")
	blocking := cp.Create(t, whatsits, ns, "blocking", framework.OwnedBy(owner.Ref(true)))
	held := cp.Create(t, whatsits, ns, "blocking-held", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	nonBlocking := cp.Create(t, whatsits, ns, "non-blocking", framework.OwnedBy(owner.Ref(false)))
	deletions := cp.WatchDeletions(t, whatsits, ns)

	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	cp.WaitGone(t, "its owner is deleted in the foreground", blocking)
	cp.WaitGone(t, "its owner is deleted in the foreground", nonBlocking)
	cp.WaitDeleting(t, held, framework.HoldFinalizer, "the held blocking dependent should be deleted (and stay, held by its finalizer)")
	cp.StayDeleting(t, "the owner must wait, with its foregroundDeletion finalizer, for its blocking dependent being deleted", metav1.FinalizerDeleteDependents, owner)

	cp.Release(t, held)
	cp.WaitGone(t, "its last blocking dependent is gone", owner)
	deletions.AssertDeletedBefore(t, framework.Names(blocking, held), owner.Name)
}

// Custom resources of a cluster-scoped CRD own namespaced ConfigMaps.
func TestClusterScopedCustomResourceOwnsConfigMaps(t *testing.T) {
	ns1 := framework.CreateNamespace(t, cp.Client)
	ns2 := framework.CreateNamespace(t, cp.Client)
	realms, _ := createCRD(t, "cluster", "Realm", "realms", apiextensionsv1.ClusterScoped)
	realm := cp.Create(t, realms, "", "realm-"+ns1)
	deps := []framework.Object{
		cp.Create(t, framework.ConfigMaps, ns1, "a", framework.OwnedBy(realm.Ref(false))),
		cp.Create(t, framework.ConfigMaps, ns1, "b", framework.OwnedBy(realm.Ref(true))),
		cp.Create(t, framework.ConfigMaps, ns2, "c", framework.OwnedBy(realm.Ref(false))),
	}
	keptThenCollected(t, realm, deps, "its cluster-scoped owner exists", "its cluster-scoped owner was deleted")
}

// Deleting a CRD deletes its custom resources (the API server does that);
// ownergc then collects their dependents.
func TestDeletingACRDCollectsTheDependentsOfItsCustomResources(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	spec := framework.CRD{Group: framework.UniqueGroup("doomed"), Kind: "Sprocket", Plural: "sprockets", Scope: apiextensionsv1.NamespaceScoped}
	sprockets, _ := cp.CreateCRD(t, spec)
	s1 := cp.Create(t, sprockets, ns, "s1")
	s2 := cp.Create(t, sprockets, ns, "s2")
	anchor := cp.Create(t, framework.ConfigMaps, ns, "anchor")
	deps := []framework.Object{
		cp.Create(t, framework.ConfigMaps, ns, "of-s1", framework.OwnedBy(s1.Ref(false))),
		cp.Create(t, framework.ConfigMaps, ns, "of-s2", framework.OwnedBy(s2.Ref(true))),
		cp.Create(t, framework.ConfigMaps, ns, "of-both", framework.OwnedBy(s1.Ref(false), s2.Ref(false))),
	}
	kept := cp.Create(t, framework.ConfigMaps, ns, "of-s1-and-anchor", framework.OwnedBy(s1.Ref(false), anchor.Ref(false)))
	cp.Survive(t, "its owner exists", deps[0])

	cp.DeleteCRD(t, spec)
	for _, d := range deps {
		cp.WaitGone(t, "its owners were deleted with their CRD", d)
	}
	cp.WaitOwners(t, kept, "the dangling reference should be removed and the dependent kept", anchor.UID)
	cp.Survive(t, "it still has a live owner", kept)
}

// A CRD deleted and re-created under the same name with another scope is
// watched with its new scope: cluster-scoped custom resources are collected,
// and a dependent of a live cluster-scoped owner is kept.
func TestCRDRecreatedWithAnotherScopeIsWatched(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	spec := framework.CRD{Group: framework.UniqueGroup("rescoped"), Kind: "Flange", Plural: "flanges", Scope: apiextensionsv1.NamespaceScoped}
	flanges, _ := cp.CreateCRD(t, spec)
	owner := cp.Create(t, flanges, ns, "owner")
	deps := []framework.Object{
		cp.Create(t, flanges, ns, "flange", framework.OwnedBy(owner.Ref(false))),
		cp.Create(t, framework.ConfigMaps, ns, "configmap", framework.OwnedBy(owner.Ref(false))),
	}
	leftover := cp.Create(t, flanges, ns, "leftover")
	ofLeftover := cp.Create(t, framework.ConfigMaps, ns, "of-leftover", framework.OwnedBy(leftover.Ref(false)))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	for _, d := range deps {
		cp.WaitGone(t, "its namespaced owner was deleted", d)
	}

	cp.DeleteCRD(t, spec)
	cp.WaitGone(t, "its owner was deleted with its CRD", ofLeftover)
	spec.Scope = apiextensionsv1.ClusterScoped
	flanges, _ = cp.CreateCRD(t, spec)

	live := cp.Create(t, flanges, "", "live-"+ns)
	ofLive := cp.Create(t, framework.ConfigMaps, ns, "of-live", framework.OwnedBy(live.Ref(false)))
	clusterOwner := cp.Create(t, flanges, "", "owner-"+ns)
	clusterDeps := []framework.Object{
		cp.Create(t, flanges, "", "flange-"+ns, framework.OwnedBy(clusterOwner.Ref(false))),
		cp.Create(t, framework.ConfigMaps, ns, "configmap-of-cluster-owner", framework.OwnedBy(clusterOwner.Ref(true))),
	}
	cp.Survive(t, "their cluster-scoped owners exist", ofLive, clusterDeps[0])
	cp.DeleteWith(t, clusterOwner, metav1.DeletePropagationBackground)
	for _, d := range clusterDeps {
		cp.WaitGone(t, "its cluster-scoped owner was deleted", d)
	}
	cp.Survive(t, "its cluster-scoped owner still exists", ofLive)
}

// An owner reference to a kind the API server does not serve is never a
// reason to delete: the dependent is kept, and looked at again (with
// exponential backoff) until the kind is served. Once it is, an owner that
// does not exist is confirmed absent and the dependent is collected.
func TestDependentOfAKindNotServedYetIsKeptUntilTheKindIsServed(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	spec := framework.CRD{Group: framework.UniqueGroup("unserved"), Kind: "Widget", Plural: "widgets", Scope: apiextensionsv1.NamespaceScoped}
	missing := framework.Object{Kind: spec.Resource(), Namespace: ns, Name: "never-created", UID: uuid.NewUUID()}
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(missing.Ref(false)))
	cp.Survive(t, "the kind of its owner is not served: its owner cannot be confirmed absent", dep)

	_, established := cp.CreateCRD(t, spec)
	gone := cp.WaitGoneWithin(t, 60*time.Second, "the kind of its owner is served now and the owner does not exist", dep)
	t.Logf("dependent collected %s after the CRD of its owner's kind was Established", gone.Sub(established).Round(10*time.Millisecond))
}

// Every change to a CRD asks ownergc for a rediscovery at once and a few
// follow-ups over the next seconds, since the API server publishes a
// resource shortly after its CRD changes. A burst of changes must not push
// those follow-ups away: when it does, a CRD created (or re-created) at the
// end of a burst is not watched until the slow safety-net rediscovery, and
// none of its custom resources is collected meanwhile. This test comes last
// in the file because, when it fails, it leaves discovery's follow-ups far
// away for whatever runs after it.
func TestRediscoveryFollowsUpAfterABurstOfCRDChanges(t *testing.T) {
	spec := framework.CRD{Group: framework.UniqueGroup("burst"), Kind: "Burst", Plural: "bursts", Scope: apiextensionsv1.NamespaceScoped}
	cp.CreateCRD(t, spec)
	lastRun := func() time.Time {
		if s := manager.Engine.Discovered(); s != nil {
			return s.Time
		}
		return time.Time{}
	}
	const changes = 8
	for i := range changes {
		before := lastRun()
		labelCRD(t, spec, "ownergc.test/burst", fmt.Sprint(i))
		framework.Eventually(t, 10*time.Second, func() error {
			if !lastRun().After(before) {
				return fmt.Errorf("no rediscovery since %s", before.Format(time.RFC3339Nano))
			}
			return nil
		}, "ownergc should rediscover after CRD change %d", i+1)
	}
	last := lastRun()
	framework.Eventually(t, 10*time.Second, func() error {
		if run := lastRun(); run.Sub(last) < 200*time.Millisecond {
			return fmt.Errorf("no follow-up rediscovery since the one the last change triggered (%s)", last.Format(time.RFC3339Nano))
		}
		return nil
	}, "a follow-up rediscovery should run within seconds of the last of %d CRD changes", changes)
}
