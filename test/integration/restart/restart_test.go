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

package restart_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"

	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/test/framework"
)

// Owners deleted while no collector runs are handled once one starts: the
// dependents of an owner deleted in the background are collected, an owner
// deleted with the orphan policy has its dependents orphaned and goes away,
// and an owner deleted in the foreground goes away after its dependents.
func TestOwnersDeletedWhileDownAreHandledAfterStart(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)

	bgOwner := cp.Create(t, framework.ConfigMaps, ns, "background-owner")
	bgDeps := cp.CreateMany(t, framework.ConfigMaps, ns, "background-dep", 3, framework.OwnedBy(bgOwner.Ref(false)))
	bgGrandchild := cp.Create(t, framework.ConfigMaps, ns, "background-grandchild", framework.OwnedBy(bgDeps[0].Ref(false)))

	orOwner := cp.Create(t, framework.ConfigMaps, ns, "orphan-owner")
	orOther := cp.Create(t, framework.ConfigMaps, ns, "orphan-other-owner")
	orDeps := cp.CreateMany(t, framework.ConfigMaps, ns, "orphan-dep", 3, framework.OwnedBy(orOwner.Ref(true)))
	orTwoOwners := cp.Create(t, framework.ConfigMaps, ns, "orphan-dep-of-two", framework.OwnedBy(orOwner.Ref(false), orOther.Ref(false)))

	fgOwner := cp.Create(t, framework.ConfigMaps, ns, "foreground-owner")
	fgBlocking := cp.CreateMany(t, framework.ConfigMaps, ns, "foreground-blocking", 3, framework.OwnedBy(fgOwner.Ref(true)))
	fgNonBlocking := cp.Create(t, framework.ConfigMaps, ns, "foreground-non-blocking", framework.OwnedBy(fgOwner.Ref(false)))

	cp.DeleteWith(t, bgOwner, metav1.DeletePropagationBackground)
	cp.DeleteWith(t, orOwner, metav1.DeletePropagationOrphan)
	cp.DeleteWith(t, fgOwner, metav1.DeletePropagationForeground)

	// Nobody collects while ownergc is down.
	cp.WaitGone(t, "the API server deletes an owner without finalizers at once", bgOwner)
	cp.MustBeDeleting(t, orOwner, metav1.FinalizerOrphanDependents)
	cp.MustBeDeleting(t, fgOwner, metav1.FinalizerDeleteDependents)
	cp.MustExist(t, "no collector runs", bgDeps...)
	cp.MustExist(t, "no collector runs", orDeps...)
	cp.MustExist(t, "no collector runs", fgBlocking...)
	cp.MustExist(t, "no collector runs", bgGrandchild, orTwoOwners, fgNonBlocking)

	deletions := cp.WatchDeletions(t, framework.ConfigMaps, ns)
	cp.StartManager(t, framework.ManagerOptions{})

	t.Run("background", func(t *testing.T) {
		for _, d := range bgDeps {
			cp.WaitGone(t, "its owner was deleted while ownergc was down", d)
		}
		cp.WaitGone(t, "its owner was collected", bgGrandchild)
	})
	t.Run("orphan", func(t *testing.T) {
		cp.WaitGone(t, "its dependents are orphaned, then its orphan finalizer is removed", orOwner)
		for _, d := range orDeps {
			cur, ok := cp.Get(t, d)
			if !ok {
				t.Fatalf("orphaned dependent %s was deleted", d.Name)
			}
			if got := framework.OwnerUIDs(cur); len(got) != 0 {
				t.Errorf("orphaned dependent %s still has owners %v", d.Name, got)
			}
		}
		cur, ok := cp.Get(t, orTwoOwners)
		if !ok {
			t.Fatalf("orphaned dependent %s was deleted", orTwoOwners.Name)
		}
		if got := framework.OwnerUIDs(cur); !slices.Equal(got, []types.UID{orOther.UID}) {
			t.Errorf("orphaned dependent %s has owners %v, want only %s", orTwoOwners.Name, got, orOther.UID)
		}
		cp.Survive(t, "they were orphaned", append(orDeps, orTwoOwners)...)
	})
	t.Run("foreground", func(t *testing.T) {
		for _, d := range fgBlocking {
			cp.WaitGone(t, "its owner is deleted in the foreground", d)
		}
		cp.WaitGone(t, "its owner is deleted in the foreground", fgNonBlocking)
		cp.WaitGone(t, "its blocking dependents are gone", fgOwner)
		deletions.AssertDeletedBefore(t, framework.Names(fgBlocking...), fgOwner.Name)
	})
}

// A manager stopped in the middle of a cascade leaves the rest of it to the
// next manager. The first manager's client is throttled so that the cascade
// takes several seconds and is certainly interrupted.
func TestCascadeInterruptedByAStopIsFinishedByTheNextManager(t *testing.T) {
	const dependents = 300
	ns := framework.CreateNamespace(t, cp.Client)
	const depLabel = "ownergc.test/dependent=true"
	depLabels := map[string]string{"ownergc.test/dependent": "true"}

	first := cp.StartManager(t, framework.ManagerOptions{QPS: 25, Burst: 25})
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	cp.CreateMany(t, framework.ConfigMaps, ns, "dependent", dependents, framework.OwnedBy(owner.Ref(false)), framework.WithLabels(depLabels))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)

	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if n := cp.Count(t, framework.ConfigMaps, ns, depLabel); n == dependents {
			return fmt.Errorf("all %d dependents still exist", n)
		}
		return nil
	}, "the first manager should start collecting the dependents")
	first.Stop()
	remaining := cp.Count(t, framework.ConfigMaps, ns, depLabel)
	t.Logf("%d of %d dependents remain after the first manager stopped", remaining, dependents)
	if remaining == 0 {
		t.Fatalf("the first manager collected every dependent before it stopped: nothing was left in flight")
	}

	start := time.Now()
	cp.StartManager(t, framework.ManagerOptions{})
	framework.Eventually(t, 60*time.Second, func() error {
		if n := cp.Count(t, framework.ConfigMaps, ns, depLabel); n > 0 {
			return fmt.Errorf("%d dependents remain", n)
		}
		return nil
	}, "the second manager should collect the dependents left over")
	t.Logf("the second manager collected the %d remaining dependents within %s of its start", remaining, time.Since(start).Round(10*time.Millisecond))
}

// An aggregated API whose backend is missing does not keep ownergc from
// becoming ready: it is reported as failed, every other resource is
// collected, and the failure clears once the APIService is deleted.
func TestReadyDespiteAFailingAggregatedAPI(t *testing.T) {
	broken := schema.GroupVersion{Group: "broken.example.com", Version: "v1"}
	removeAPIService := cp.CreateBrokenAPIService(t, broken)
	// Precondition: the API server reports the group-version as failing
	// discovery before ownergc starts.
	framework.Eventually(t, 30*time.Second, func() error {
		_, _, err := cp.Clientset.Discovery().ServerGroupsAndResources()
		var gdf *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &gdf) {
			if _, ok := gdf.Groups[broken]; ok {
				return nil
			}
		}
		return fmt.Errorf("discovery does not report %s as failing yet (error: %v)", broken, err)
	}, "the API server should report the broken APIService")

	start := time.Now()
	m := cp.StartManager(t, framework.ManagerOptions{})
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("ownergc took %s to become ready, want at most 60s", took)
	} else {
		t.Logf("ownergc became ready in %s despite the failing APIService", took.Round(10*time.Millisecond))
	}
	framework.Eventually(t, 30*time.Second, func() error {
		if !listsFailure(m.Engine.Status().Failed, broken) {
			return fmt.Errorf("status lists failures %s", framework.DescribeFailures(m.Engine.Status().Failed))
		}
		return nil
	}, "the status should list %s as failed", broken)
	if err := m.Engine.GraphSyncedCheck(nil); err != nil {
		t.Errorf("ownergc is not ready while %s fails: %v", broken, err)
	}

	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(owner.Ref(false)))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its owner was deleted; a failing aggregated API must not hold up other resources", dep)

	removeAPIService()
	framework.Eventually(t, 30*time.Second, func() error {
		if f := m.Engine.Status().Failed; len(f) > 0 {
			return fmt.Errorf("status still lists failures %s", framework.DescribeFailures(f))
		}
		return nil
	}, "the failure should clear once the APIService is deleted")
	if err := m.Engine.GraphSyncedCheck(nil); err != nil {
		t.Errorf("ownergc is not ready after the APIService was deleted: %v", err)
	}
}

func listsFailure(failed []monitor.Failure, gv schema.GroupVersion) bool {
	return slices.ContainsFunc(failed, func(f monitor.Failure) bool {
		return f.Group == gv.Group && f.Version == gv.Version
	})
}
