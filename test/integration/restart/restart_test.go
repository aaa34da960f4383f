package restart_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	ns := framework.CreateNamespace(t, k8s)

	bgOwner := configMap(t, ns, "background-owner", nil, nil)
	bgDeps := configMaps(t, ns, "background-dep", 3, owned(ref(bgOwner, false)), nil)
	bgGrandchild := configMap(t, ns, "background-grandchild", owned(ref(bgDeps[0], false)), nil)

	orOwner := configMap(t, ns, "orphan-owner", nil, nil)
	orOther := configMap(t, ns, "orphan-other-owner", nil, nil)
	orDeps := configMaps(t, ns, "orphan-dep", 3, owned(ref(orOwner, true)), nil)
	orTwoOwners := configMap(t, ns, "orphan-dep-of-two", owned(ref(orOwner, false), ref(orOther, false)), nil)

	fgOwner := configMap(t, ns, "foreground-owner", nil, nil)
	fgBlocking := configMaps(t, ns, "foreground-blocking", 3, owned(ref(fgOwner, true)), nil)
	fgNonBlocking := configMap(t, ns, "foreground-non-blocking", owned(ref(fgOwner, false)), nil)

	deleteWith(t, bgOwner, metav1.DeletePropagationBackground)
	deleteWith(t, orOwner, metav1.DeletePropagationOrphan)
	deleteWith(t, fgOwner, metav1.DeletePropagationForeground)

	// Nobody collects while ownergc is down.
	waitGone(t, bgOwner, "the API server deletes an owner without finalizers at once")
	beingDeletedWith(t, orOwner, metav1.FinalizerOrphanDependents)
	beingDeletedWith(t, fgOwner, metav1.FinalizerDeleteDependents)
	mustExist(t, "no collector runs", bgDeps...)
	mustExist(t, "no collector runs", orDeps...)
	mustExist(t, "no collector runs", fgBlocking...)
	mustExist(t, "no collector runs", bgGrandchild, orTwoOwners, fgNonBlocking)

	deletions := watchDeletions(t, ns)
	startManager(t, framework.ManagerOptions{})

	t.Run("background", func(t *testing.T) {
		for _, d := range bgDeps {
			waitGone(t, d, "its owner was deleted while ownergc was down")
		}
		waitGone(t, bgGrandchild, "its owner was collected")
	})
	t.Run("orphan", func(t *testing.T) {
		waitGone(t, orOwner, "its dependents are orphaned, then its orphan finalizer is removed")
		for _, d := range orDeps {
			cur, ok := get(t, d)
			if !ok {
				t.Fatalf("orphaned dependent %s was deleted", d.Name)
			}
			if got := ownerUIDs(cur); len(got) != 0 {
				t.Errorf("orphaned dependent %s still has owners %v", d.Name, got)
			}
		}
		cur, ok := get(t, orTwoOwners)
		if !ok {
			t.Fatalf("orphaned dependent %s was deleted", orTwoOwners.Name)
		}
		if got := ownerUIDs(cur); !slices.Equal(got, []types.UID{orOther.UID}) {
			t.Errorf("orphaned dependent %s has owners %v, want only %s", orTwoOwners.Name, got, orOther.UID)
		}
		survive(t, "they were orphaned", append(orDeps, orTwoOwners)...)
	})
	t.Run("foreground", func(t *testing.T) {
		for _, d := range fgBlocking {
			waitGone(t, d, "its owner is deleted in the foreground")
		}
		waitGone(t, fgNonBlocking, "its owner is deleted in the foreground")
		waitGone(t, fgOwner, "its blocking dependents are gone")
		assertDeletedBefore(t, deletions, fgBlocking, fgOwner)
	})
}

// A manager stopped in the middle of a cascade leaves the rest of it to the
// next manager. The first manager's client is throttled so that the cascade
// takes several seconds and is certainly interrupted.
func TestCascadeInterruptedByAStopIsFinishedByTheNextManager(t *testing.T) {
	const dependents = 300
	ns := framework.CreateNamespace(t, k8s)
	depLabels := map[string]string{"ownergc.test/dependent": "true"}

	_, stop := startManager(t, framework.ManagerOptions{QPS: 25, Burst: 25})
	owner := configMap(t, ns, "owner", nil, nil)
	configMaps(t, ns, "dependent", dependents, owned(ref(owner, false)), depLabels)
	deleteWith(t, owner, metav1.DeletePropagationBackground)

	framework.Eventually(t, cascadeTimeout, func() error {
		if n := countConfigMaps(t, ns, depLabels); n == dependents {
			return fmt.Errorf("all %d dependents still exist", n)
		}
		return nil
	}, "the first manager should start collecting the dependents")
	stop()
	remaining := countConfigMaps(t, ns, depLabels)
	t.Logf("%d of %d dependents remain after the first manager stopped", remaining, dependents)
	if remaining == 0 {
		t.Fatalf("the first manager collected every dependent before it stopped: nothing was left in flight")
	}

	start := time.Now()
	startManager(t, framework.ManagerOptions{})
	framework.Eventually(t, 60*time.Second, func() error {
		if n := countConfigMaps(t, ns, depLabels); n > 0 {
			return fmt.Errorf("%d dependents remain", n)
		}
		return nil
	}, "the second manager should collect the dependents left over")
	t.Logf("the second manager collected the %d remaining dependents within %s of its start", remaining, time.Since(start).Round(10*time.Millisecond))
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// An aggregated API whose backend is missing does not keep ownergc from
// becoming ready: it is reported as failed, every other resource is
// collected, and the failure clears once the APIService is deleted.
func TestReadyDespiteAFailingAggregatedAPI(t *testing.T) {
	broken := schema.GroupVersion{Group: "broken.example.com", Version: "v1"}
	name := broken.Version + "." + broken.Group
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group":                 broken.Group,
			"version":               broken.Version,
			"service":               map[string]any{"namespace": "default", "name": "nope", "port": int64(443)},
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(1000),
			"versionPriority":       int64(15),
		},
	}}
	if _, err := dyn.Resource(apiServices).Create(ctx(t), svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating APIService %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := dyn.Resource(apiServices).Delete(ctx(t), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting APIService %s: %v", name, err)
		}
	})
	// Precondition: the API server reports the group-version as failing
	// discovery before ownergc starts.
	framework.Eventually(t, 30*time.Second, func() error {
		_, _, err := disc.ServerGroupsAndResources()
		var gdf *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &gdf) {
			if _, ok := gdf.Groups[broken]; ok {
				return nil
			}
		}
		return fmt.Errorf("discovery does not report %s as failing yet (error: %v)", broken, err)
	}, "the API server should report the broken APIService")

	start := time.Now()
	m, _ := startManager(t, framework.ManagerOptions{})
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("ownergc took %s to become ready, want at most 60s", took)
	} else {
		t.Logf("ownergc became ready in %s despite the failing APIService", took.Round(10*time.Millisecond))
	}
	framework.Eventually(t, 30*time.Second, func() error {
		if !listsFailure(m.Engine.Status().Failed, broken) {
			return fmt.Errorf("status lists failures %s", describeFailures(m.Engine.Status().Failed))
		}
		return nil
	}, "the status should list %s as failed", broken)
	if err := m.Engine.GraphSyncedCheck(nil); err != nil {
		t.Errorf("ownergc is not ready while %s fails: %v", broken, err)
	}

	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil, nil)
	dep := configMap(t, ns, "dependent", owned(ref(owner, false)), nil)
	deleteWith(t, owner, metav1.DeletePropagationBackground)
	waitGone(t, dep, "its owner was deleted; a failing aggregated API must not hold up other resources")

	if err := dyn.Resource(apiServices).Delete(ctx(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting APIService %s: %v", name, err)
	}
	framework.Eventually(t, 30*time.Second, func() error {
		if f := m.Engine.Status().Failed; len(f) > 0 {
			return fmt.Errorf("status still lists failures %s", describeFailures(f))
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

func describeFailures(failed []monitor.Failure) string {
	if len(failed) == 0 {
		return "(none)"
	}
	var parts []string
	for _, f := range failed {
		parts = append(parts, fmt.Sprintf("%s/%s/%s: %s", f.Group, f.Version, f.Resource, f.Message))
	}
	return strings.Join(parts, "; ")
}
