package crd_test

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

func owned(owners ...metav1.OwnerReference) []metav1.OwnerReference { return owners }

// A CRD created while the manager runs is discovered and watched: custom
// resources of it are collected, as owners and as dependents.
func TestCustomResourcesOfACRDCreatedAfterStartAreCollected(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	gizmos, established := createCRD(t, crdSpec{
		group: uniqueGroup("late"), kind: "Gizmo", plural: "gizmos", scope: apiextensionsv1.NamespaceScoped,
	})

	crOwner := create(t, gizmos, ns, "owner-of-gizmo", nil)
	crDep := create(t, gizmos, ns, "gizmo-of-gizmo", owned(crOwner.ref(false)))
	crOwnerOfCM := create(t, gizmos, ns, "owner-of-configmap", nil)
	cmDep := create(t, configMaps, ns, "configmap-of-gizmo", owned(crOwnerOfCM.ref(false)))
	cmOwner := create(t, configMaps, ns, "owner-of-gizmo", nil)
	crDepOfCM := create(t, gizmos, ns, "gizmo-of-configmap", owned(cmOwner.ref(false)))

	for _, o := range []object{crOwner, crOwnerOfCM, cmOwner} {
		deleteWith(t, o, metav1.DeletePropagationBackground)
	}
	for _, c := range []struct {
		dep  object
		what string
	}{
		{crDep, "custom resource owner, custom resource dependent"},
		{cmDep, "custom resource owner, ConfigMap dependent"},
		{crDepOfCM, "ConfigMap owner, custom resource dependent"},
	} {
		gone := waitGone(t, c.dep, cascadeTimeout, "its only owner was deleted")
		t.Logf("%s: collected %s after the CRD was Established (design goal ~2s)", c.what, gone.Sub(established).Round(10*time.Millisecond))
	}

	// The kind stays watched: owners deleted now are seen through the watch.
	later := create(t, gizmos, ns, "later-owner", nil)
	laterDeps := []object{
		create(t, gizmos, ns, "later-gizmo", owned(later.ref(false))),
		create(t, configMaps, ns, "later-configmap", owned(later.ref(true))),
	}
	survive(t, "its owner exists", laterDeps[0])
	deleteWith(t, later, metav1.DeletePropagationBackground)
	for _, d := range laterDeps {
		waitGone(t, d, cascadeTimeout, "its only owner was deleted")
	}
}

// Orphaning a custom resource removes the references to it from its
// dependents (custom resources take no strategic merge patch: ownergc must
// fall back to a JSON merge patch) and then its orphan finalizer.
func TestOrphanDeletionOfACustomResourceKeepsItsDependents(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	doodads, _ := createCRD(t, crdSpec{
		group: uniqueGroup("orphan"), kind: "Doodad", plural: "doodads", scope: apiextensionsv1.NamespaceScoped,
	})
	owner := create(t, doodads, ns, "owner", nil)
	other := create(t, doodads, ns, "other-owner", nil)
	only := create(t, doodads, ns, "only-owner", owned(owner.ref(true)))
	two := create(t, doodads, ns, "two-owners", owned(owner.ref(false), other.ref(false)))
	cm := create(t, configMaps, ns, "configmap", owned(owner.ref(true)))

	deleteWith(t, owner, metav1.DeletePropagationOrphan)
	waitGone(t, owner, cascadeTimeout, "its orphan finalizer should be removed once its dependents are orphaned")
	waitOwners(t, only, "the orphaned dependent should lose its reference and live on")
	waitOwners(t, two, "the orphaned dependent should keep only its other owner", other.uid)
	waitOwners(t, cm, "the orphaned ConfigMap should lose its reference and live on")
	survive(t, "they were orphaned", only, two, cm)
}

// Deleting a custom resource in the foreground deletes its dependents
// first, waits for the blocking ones, then removes the foregroundDeletion
// finalizer.
func TestForegroundDeletionOfACustomResourceDeletesItsDependentsFirst(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	whatsits, _ := createCRD(t, crdSpec{
		group: uniqueGroup("foreground"), kind: "Whatsit", plural: "whatsits", scope: apiextensionsv1.NamespaceScoped,
	})
	owner := create(t, whatsits, ns, "owner", nil)
	blocking := create(t, whatsits, ns, "blocking", owned(owner.ref(true)))
	held := create(t, whatsits, ns, "blocking-held", owned(owner.ref(true)), holdFinalizer)
	nonBlocking := create(t, whatsits, ns, "non-blocking", owned(owner.ref(false)))
	deletions := watchDeletions(t, whatsits, ns)

	deleteWith(t, owner, metav1.DeletePropagationForeground)
	waitGone(t, blocking, cascadeTimeout, "its owner is deleted in the foreground")
	waitGone(t, nonBlocking, cascadeTimeout, "its owner is deleted in the foreground")
	framework.Eventually(t, cascadeTimeout, func() error {
		cur, ok := get(t, held)
		if !ok {
			return errGone(held)
		}
		if cur.GetDeletionTimestamp() == nil {
			return errNotDeleting(held)
		}
		return nil
	}, "the held blocking dependent should be deleted (and stay, held by its finalizer)")
	framework.Consistently(t, quiet, func() error {
		cur, ok := get(t, owner)
		if !ok {
			return errGone(owner)
		}
		if !hasFinalizer(cur.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			return errNoForegroundFinalizer(owner, cur.GetFinalizers())
		}
		return nil
	}, "the owner must wait, with its foregroundDeletion finalizer, for its blocking dependent being deleted")

	removeFinalizer(t, held, holdFinalizer)
	waitGone(t, held, cascadeTimeout, "its hold finalizer was removed")
	waitGone(t, owner, cascadeTimeout, "its last blocking dependent is gone")
	deletions.assertDeletedBefore(t, []object{blocking, held}, owner)
}

// Custom resources of a cluster-scoped CRD own namespaced ConfigMaps.
func TestClusterScopedCustomResourceOwnsConfigMaps(t *testing.T) {
	ns1 := framework.CreateNamespace(t, k8s)
	ns2 := framework.CreateNamespace(t, k8s)
	realms, _ := createCRD(t, crdSpec{
		group: uniqueGroup("cluster"), kind: "Realm", plural: "realms", scope: apiextensionsv1.ClusterScoped,
	})
	realm := create(t, realms, "", "realm-"+ns1, nil)
	deps := []object{
		create(t, configMaps, ns1, "a", owned(realm.ref(false))),
		create(t, configMaps, ns1, "b", owned(realm.ref(true))),
		create(t, configMaps, ns2, "c", owned(realm.ref(false))),
	}
	survive(t, "its cluster-scoped owner exists", deps[0])
	deleteWith(t, realm, metav1.DeletePropagationBackground)
	for _, d := range deps {
		waitGone(t, d, cascadeTimeout, "its cluster-scoped owner was deleted")
	}
}

// Deleting a CRD deletes its custom resources (the API server does that);
// ownergc then collects their dependents.
func TestDeletingACRDCollectsTheDependentsOfItsCustomResources(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	spec := crdSpec{group: uniqueGroup("doomed"), kind: "Sprocket", plural: "sprockets", scope: apiextensionsv1.NamespaceScoped}
	sprockets, _ := createCRD(t, spec)
	s1 := create(t, sprockets, ns, "s1", nil)
	s2 := create(t, sprockets, ns, "s2", nil)
	anchor := create(t, configMaps, ns, "anchor", nil)
	deps := []object{
		create(t, configMaps, ns, "of-s1", owned(s1.ref(false))),
		create(t, configMaps, ns, "of-s2", owned(s2.ref(true))),
		create(t, configMaps, ns, "of-both", owned(s1.ref(false), s2.ref(false))),
	}
	kept := create(t, configMaps, ns, "of-s1-and-anchor", owned(s1.ref(false), anchor.ref(false)))
	survive(t, "its owner exists", deps[0])

	deleteCRD(t, spec)
	for _, d := range deps {
		waitGone(t, d, cascadeTimeout, "its owners were deleted with their CRD")
	}
	waitOwners(t, kept, "the dangling reference should be removed and the dependent kept", anchor.uid)
	survive(t, "it still has a live owner", kept)
}

// A CRD deleted and re-created under the same name with another scope is
// watched with its new scope: cluster-scoped custom resources are collected,
// and a dependent of a live cluster-scoped owner is kept.
func TestCRDRecreatedWithAnotherScopeIsWatched(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	spec := crdSpec{group: uniqueGroup("rescoped"), kind: "Flange", plural: "flanges", scope: apiextensionsv1.NamespaceScoped}
	flanges, _ := createCRD(t, spec)
	owner := create(t, flanges, ns, "owner", nil)
	deps := []object{
		create(t, flanges, ns, "flange", owned(owner.ref(false))),
		create(t, configMaps, ns, "configmap", owned(owner.ref(false))),
	}
	leftover := create(t, flanges, ns, "leftover", nil)
	ofLeftover := create(t, configMaps, ns, "of-leftover", owned(leftover.ref(false)))
	deleteWith(t, owner, metav1.DeletePropagationBackground)
	for _, d := range deps {
		waitGone(t, d, cascadeTimeout, "its namespaced owner was deleted")
	}

	deleteCRD(t, spec)
	waitGone(t, ofLeftover, cascadeTimeout, "its owner was deleted with its CRD")
	spec.scope = apiextensionsv1.ClusterScoped
	flanges, _ = createCRD(t, spec)

	live := create(t, flanges, "", "live-"+ns, nil)
	ofLive := create(t, configMaps, ns, "of-live", owned(live.ref(false)))
	clusterOwner := create(t, flanges, "", "owner-"+ns, nil)
	clusterDeps := []object{
		create(t, flanges, "", "flange-"+ns, owned(clusterOwner.ref(false))),
		create(t, configMaps, ns, "configmap-of-cluster-owner", owned(clusterOwner.ref(true))),
	}
	survive(t, "their cluster-scoped owners exist", ofLive, clusterDeps[0])
	deleteWith(t, clusterOwner, metav1.DeletePropagationBackground)
	for _, d := range clusterDeps {
		waitGone(t, d, cascadeTimeout, "its cluster-scoped owner was deleted")
	}
	survive(t, "its cluster-scoped owner still exists", ofLive)
}

// An owner reference to a kind the API server does not serve is never a
// reason to delete: the dependent is kept, and looked at again (with
// exponential backoff) until the kind is served. Once it is, an owner that
// does not exist is confirmed absent and the dependent is collected.
func TestDependentOfAKindNotServedYetIsKeptUntilTheKindIsServed(t *testing.T) {
	ns := framework.CreateNamespace(t, k8s)
	spec := crdSpec{group: uniqueGroup("unserved"), kind: "Widget", plural: "widgets", scope: apiextensionsv1.NamespaceScoped}
	missing := object{kind: spec.resource(), namespace: ns, name: "never-created", uid: types.UID(uuid.NewUUID())}
	dep := create(t, configMaps, ns, "dependent", owned(missing.ref(false)))
	survive(t, "the kind of its owner is not served: its owner cannot be confirmed absent", dep)

	_, established := createCRD(t, spec)
	gone := waitGone(t, dep, 60*time.Second, "the kind of its owner is served now and the owner does not exist")
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
	spec := crdSpec{group: uniqueGroup("burst"), kind: "Burst", plural: "bursts", scope: apiextensionsv1.NamespaceScoped}
	createCRD(t, spec)
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
