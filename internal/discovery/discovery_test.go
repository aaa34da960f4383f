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

package discovery

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// fakeClient answers ServerGroupsAndResources from fields the test sets.
type fakeClient struct {
	*fakediscovery.FakeDiscovery
	groups []*metav1.APIGroup
	lists  []*metav1.APIResourceList
	failed map[schema.GroupVersion]error
	// down fails that many discoveries whole, as an unreachable API server
	// does.
	down atomic.Int32
}

func (f *fakeClient) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	if f.down.Add(-1) >= 0 {
		return nil, nil, errors.New("connection refused")
	}
	if len(f.failed) > 0 {
		return f.groups, f.lists, &discovery.ErrGroupDiscoveryFailed{Groups: f.failed}
	}
	return f.groups, f.lists, nil
}

var all = []string{"create", "delete", "get", "list", "patch", "update", "watch"}

func group(name string, versions ...string) *metav1.APIGroup {
	g := &metav1.APIGroup{Name: name, PreferredVersion: metav1.GroupVersionForDiscovery{Version: versions[0]}}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: schema.GroupVersion{Group: name, Version: v}.String(), Version: v})
	}
	return g
}

func list(gv string, resources ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: resources}
}

func newFake() *fakeClient {
	return &fakeClient{
		FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}},
		groups:        []*metav1.APIGroup{group("", "v1"), group("example.com", "v2", "v1")},
		lists: []*metav1.APIResourceList{
			list("v1",
				metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
				metav1.APIResource{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: all},
				metav1.APIResource{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}}),
			list("example.com/v2", metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all}),
			list("example.com/v1",
				metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
				metav1.APIResource{Name: "gadgets", Kind: "Gadget", Verbs: all}),
		},
	}
}

func names(rs []Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, FormatGVR(r.GroupVersionResource))
	}
	return out
}

func TestWatchableResourcesArePreferredVersionsOfDeletableResources(t *testing.T) {
	d := New(Options{Client: newFake()})
	d.RunOnce(context.Background())
	got := names(d.Snapshot().Watchable)
	// gadgets exist only in example.com/v1: taken from there.
	want := []string{"v1/configmaps", "example.com/v1/gadgets", "example.com/v2/widgets"}
	if !slices.Equal(got, want) {
		t.Fatalf("watchable %v, want %v", got, want)
	}
	if gvr, namespaced, err := d.ResourceFor(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); err != nil || !namespaced || gvr.Version != "v1" {
		t.Fatalf("every served version maps: %v %v %v", gvr, namespaced, err)
	}
	var notServed *NotServedError
	if _, _, err := d.ResourceFor(schema.GroupVersionKind{Group: "nope", Version: "v1", Kind: "Ghost"}); !errors.As(err, &notServed) {
		t.Fatalf("unserved kind: %v", err)
	}
	for gk, want := range map[schema.GroupKind]bool{
		{Group: "example.com", Kind: "Gadget"}: true, // at a version that is not the group's preferred one
		{Kind: "ConfigMap"}:                    true,
		{Group: "nope", Kind: "Ghost"}:         false,
	} {
		if got := d.Snapshot().ServesKind(gk); got != want {
			t.Errorf("ServesKind(%v) = %t, want %t", gk, got, want)
		}
	}
}

func TestFailedGroupKeepsItsResourcesAndIsReported(t *testing.T) {
	f := newFake()
	d := New(Options{Client: f})
	var changes []Change
	d.Subscribe(func(c Change) { changes = append(changes, c) })
	d.RunOnce(context.Background())

	gv := schema.GroupVersion{Group: "example.com", Version: "v2"}
	f.failed = map[schema.GroupVersion]error{gv: errors.New("stale GroupVersion discovery")}
	f.lists = f.lists[:1:1]
	f.lists = append(f.lists, list("example.com/v1",
		metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
		metav1.APIResource{Name: "gadgets", Kind: "Gadget", Verbs: all}))
	d.RunOnce(context.Background())
	s := d.Snapshot()
	if !slices.Contains(names(s.Watchable), "example.com/v2/widgets") {
		t.Fatalf("resources of a failing group-version must be kept: %v", names(s.Watchable))
	}
	if len(s.Failed) != 1 || s.Failed[0].GroupVersion != gv {
		t.Fatalf("failures: %+v", s.Failed)
	}
	if len(changes) != 2 || len(changes[1].Removed) != 0 {
		t.Fatalf("want a change that reports the failure and removes nothing: %+v", changes)
	}

	f.failed = nil
	f.lists = f.lists[:1]
	d.RunOnce(context.Background())
	last := changes[len(changes)-1]
	if len(last.Snapshot.Failed) != 0 || len(last.Removed) != 2 {
		t.Fatalf("after the group is gone: failed %v, removed %+v", last.Snapshot.Failed, last.Removed)
	}
}

func TestOnlyAnObservedCRDDeletionMeansDeleted(t *testing.T) {
	f := newFake()
	deleted := map[string]bool{}
	d := New(Options{Client: f, CRDDeleted: func(name string) bool { return deleted[name] }})
	var last Change
	d.Subscribe(func(c Change) { last = c })
	d.RunOnce(context.Background())

	// gadgets leave discovery while their CRD is not known deleted: a
	// group switched off, or a discovery answer that omitted them.
	f.lists = f.lists[:2]
	d.RunOnce(context.Background())
	if len(last.Removed) != 1 || last.Removed[0].Resource.Resource != "gadgets" || last.Removed[0].Deleted {
		t.Fatalf("a resource that left discovery without its CRD being deleted must be removed, not deleted: %+v", last.Removed)
	}
	// Then the CRD deletion is observed: reported again, deleted.
	deleted["gadgets.example.com"] = true
	d.RunOnce(context.Background())
	if len(last.Removed) != 1 || last.Removed[0].Resource.Resource != "gadgets" || !last.Removed[0].Deleted {
		t.Fatalf("after its CRD deletion is observed: removed %+v, want gadgets deleted", last.Removed)
	}
	last = Change{}
	d.RunOnce(context.Background())
	if last.Snapshot != nil {
		t.Fatalf("nothing changed, yet subscribers were told: %+v", last.Removed)
	}

	// A CRD observed deleted when its resource leaves discovery.
	deleted["widgets.example.com"] = true
	f.lists = f.lists[:1]
	d.RunOnce(context.Background())
	if len(last.Removed) != 1 || last.Removed[0].Resource.Resource != "widgets" || !last.Removed[0].Deleted {
		t.Fatalf("removed: %+v, want widgets deleted", last.Removed)
	}
}

// A built-in resource has no CRD: leaving discovery never means deleted.
func TestBuiltInResourceLeavingDiscoveryIsNeverDeleted(t *testing.T) {
	f := newFake()
	d := New(Options{Client: f, CRDDeleted: func(string) bool { return true }})
	var last Change
	d.Subscribe(func(c Change) { last = c })
	d.RunOnce(context.Background())
	f.lists = f.lists[1:]
	d.RunOnce(context.Background())
	if len(last.Removed) != 1 || last.Removed[0].Resource.Resource != "configmaps" || last.Removed[0].Deleted {
		t.Fatalf("removed: %+v, want configmaps removed, not deleted", last.Removed)
	}
}

func TestUnservedVersionsResolveOnlyInLocalHealthyGroups(t *testing.T) {
	widgetV0 := schema.GroupVersionKind{Group: "example.com", Version: "v0", Kind: "Widget"}
	for _, tc := range []struct {
		name     string
		services map[schema.GroupVersion]bool
		err      error
		failed   bool
		want     string // resolved version, "" for not served
	}{
		{name: "local group", services: map[schema.GroupVersion]bool{{Group: "example.com", Version: "v1"}: false, {Group: "example.com", Version: "v2"}: false}, want: "v2"},
		{name: "a version of the group is aggregated", services: map[schema.GroupVersion]bool{{Group: "example.com", Version: "v1"}: false, {Group: "example.com", Version: "v2"}: true}},
		{name: "APIServices unknown", err: errors.New("forbidden")},
		{name: "no APIService for the group", services: map[schema.GroupVersion]bool{{Version: "v1"}: false}},
		{name: "discovery of the group fails", services: map[schema.GroupVersion]bool{{Group: "example.com", Version: "v1"}: false, {Group: "example.com", Version: "v2"}: false}, failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.failed {
				f.failed = map[schema.GroupVersion]error{{Group: "example.com", Version: "v3"}: errors.New("stale GroupVersion discovery")}
			}
			d := New(Options{Client: f, APIServices: func(context.Context) (map[schema.GroupVersion]bool, error) { return tc.services, tc.err }})
			d.RunOnce(context.Background())
			gvr, _, err := d.ResourceFor(widgetV0)
			var notServed *NotServedError
			switch {
			case tc.want == "" && !errors.As(err, &notServed):
				t.Fatalf("want %s unresolved (not served), got %v %v", widgetV0, gvr, err)
			case tc.want != "" && (err != nil || gvr.Version != tc.want || gvr.Resource != "widgets"):
				t.Fatalf("want %s resolved to example.com/%s/widgets, got %v %v", widgetV0, tc.want, gvr, err)
			}
			// A served version always maps to itself.
			if gvr, _, err := d.ResourceFor(widgetV0.GroupKind().WithVersion("v1")); err != nil || gvr.Version != "v1" {
				t.Fatalf("served version: %v %v", gvr, err)
			}
		})
	}
}

// A discovery that fails whole (the API server does not answer) is run
// again after FailedResync, not after the resync period: nothing else may
// ask for one (the triggers ask for none for what their cluster had before
// the first discovery started).
func TestAFailedDiscoveryIsRetriedSoon(t *testing.T) {
	c := newFake()
	c.down.Store(2)
	d := New(Options{Client: c, Resync: time.Hour, FailedResync: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := time.Now()
	go func() { _ = d.Start(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); d.Snapshot() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no discovery succeeded within 10s after two that failed whole")
		}
	}
	if started := time.Unix(0, d.started.Load()); started.Before(before) {
		t.Errorf("the latest discovery's start %v is not recorded (the test began at %v)", started, before)
	}
}

// The first discovery waits until the APIServices are listed, so that it
// knows the API server's own groups and need not run again once they are
// (a fleet engaging many clusters ran two discoveries for each); where
// they are never listed it runs after APIServicesWait, without them.
func TestTheFirstDiscoveryWaitsForTheAPIServices(t *testing.T) {
	waitForSnapshot := func(t *testing.T, d *Discoverer, within time.Duration) *Snapshot {
		t.Helper()
		for deadline := time.Now().Add(within); d.Snapshot() == nil; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no discovery within %s", within)
			}
		}
		return d.Snapshot()
	}
	t.Run("listed", func(t *testing.T) {
		listed := make(chan struct{})
		var served atomic.Bool
		d := New(Options{Client: newFake(), Resync: time.Hour, APIServicesListed: listed, APIServicesWait: time.Hour,
			APIServices: func(context.Context) (map[schema.GroupVersion]bool, error) {
				if !served.Load() {
					return nil, errors.New("APIServices not listed yet")
				}
				return map[schema.GroupVersion]bool{{Version: "v1"}: false}, nil
			}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = d.Start(ctx) }()
		// Bounded: a discovery that did not wait starts at once.
		time.Sleep(200 * time.Millisecond)
		if d.started.Load() != 0 {
			t.Fatal("the first discovery started before the APIServices were listed")
		}
		served.Store(true)
		close(listed)
		if s := waitForSnapshot(t, d, 10*time.Second); !s.localKnown {
			t.Error("the first discovery, run once the APIServices were listed, does not know the API server's own groups")
		}
	})
	t.Run("never listed", func(t *testing.T) {
		d := New(Options{Client: newFake(), Resync: time.Hour, APIServicesListed: make(chan struct{}), APIServicesWait: 50 * time.Millisecond,
			APIServices: func(context.Context) (map[schema.GroupVersion]bool, error) {
				return nil, errors.New("apiservices is forbidden")
			}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = d.Start(ctx) }()
		if s := waitForSnapshot(t, d, 10*time.Second); s.localKnown {
			t.Error("a discovery without the APIServices claims to know the API server's own groups")
		}
	})
}

// The safety-net rediscovery comes after Resync and up to a fifth more, at
// random: the clusters a fleet engages together do not rediscover together.
func TestTheSafetyNetRediscoveryIsSpreadOverAFifthOfItsPeriod(t *testing.T) {
	d := New(Options{Client: newFake(), Resync: 5 * time.Minute})
	seen := map[time.Duration]bool{}
	for range 100 {
		got := d.resyncAfter()
		if got < 5*time.Minute || got > 6*time.Minute {
			t.Fatalf("the rediscovery comes after %s, want between 5m and 6m", got)
		}
		seen[got] = true
	}
	if len(seen) < 50 {
		t.Fatalf("100 rediscoveries were scheduled at %d distinct waits: the clusters engaged together would rediscover together", len(seen))
	}
}

func TestFollowUpsBackOffAndStartOverOnEveryTrigger(t *testing.T) {
	d := New(Options{Client: newFake(), Resync: time.Hour})
	if got := d.nextFollowUp(); got != time.Hour {
		t.Fatalf("without a trigger the next rediscovery is the resync, got %s", got)
	}
	d.TriggerWithFollowUps()
	var got []time.Duration
	for range 5 {
		got = append(got, d.nextFollowUp())
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, time.Hour}
	if !slices.Equal(got, want) {
		t.Fatalf("follow-ups %v, want %v", got, want)
	}
	// A burst of triggers must not push the follow-ups back.
	for range 10 {
		d.TriggerWithFollowUps()
		d.nextFollowUp()
	}
	d.TriggerWithFollowUps()
	if got := d.nextFollowUp(); got != 250*time.Millisecond {
		t.Fatalf("after a burst the first follow-up is %s, want 250ms", got)
	}
}
