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

package expiry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

func TestSchedule(t *testing.T) {
	s := newSchedule()
	t0 := time.Unix(1000, 0)
	k := func(n string) key { return key{uid: types.UID(n), name: n} }
	if !s.set(k("b"), t0.Add(2*time.Second)) {
		t.Error("the first entry moves the earliest time")
	}
	if s.set(k("c"), t0.Add(3*time.Second)) {
		t.Error("a later entry does not move the earliest time")
	}
	if !s.set(k("a"), t0.Add(time.Second)) {
		t.Error("an earlier entry moves the earliest time")
	}
	s.set(k("c"), t0) // moved earlier
	s.remove("b")
	s.remove("absent")
	if next, _ := s.next(); !next.Equal(t0) || s.len() != 2 {
		t.Errorf("next %v, %d entries; want %v and 2", next, s.len(), t0)
	}
	var got []string
	for _, d := range s.due(t0.Add(10 * time.Second)) {
		got = append(got, d.name)
	}
	if !slices.Equal(got, []string{"c", "a"}) || s.len() != 0 {
		t.Errorf("due: %v, %d left; want [c a] and none", got, s.len())
	}
	if _, ok := s.next(); ok {
		t.Error("an empty schedule has a next time")
	}
}

var configMaps = discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Deletable: true}

// fakeDiscovery serves ConfigMaps, Secrets and Namespaces.
type fakeDiscovery struct{ *fakediscovery.FakeDiscovery }

func (fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	verbs := []string{"delete", "get", "list", "watch"}
	return []*metav1.APIGroup{{Name: "", PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "v1", Version: "v1"},
			Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "v1", Version: "v1"}}}},
		[]*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
			{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: verbs},
			{Name: "namespaces", Kind: "Namespace", Verbs: verbs},
		}}}, nil
}

// deletion is one DELETE the collector sent.
type deletion struct {
	resource, namespace, name string
	opts                      metav1.DeleteOptions
	at                        time.Time
	// onShared: a shared worker ran then (harness.shared).
	onShared bool
}

// harness runs the collector on a graph the test observes into, against a
// fake API that records deletions.
type harness struct {
	t      *testing.T
	graph  *graph.Graph
	policy *policy.Store
	e      *Engine
	client *metadatafake.FakeMetadataClient
	events *events.FakeRecorder

	mu        sync.Mutex
	deletions []deletion
	objects   map[string]*graph.Object
	// refuse, when set, answers a deletion with an error.
	refuse func(name string) error
	// shared, when set, are the workers the collector takes its workers
	// from, as a fleet's member's does (harness.share).
	shared *workers.Shared
}

func newHarness(t *testing.T, spec ownergcv1alpha1.GCPolicySpec, namespaces ...runtime.Object) *harness {
	t.Helper()
	d := discovery.New(discovery.Options{Client: fakeDiscovery{&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}}})
	d.RunOnce(context.Background())
	p, err := policy.FromSpec(&spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"}, &metav1.PartialObjectMetadataList{})
	h := &harness{t: t, graph: graph.New(16), policy: policy.NewPendingStore(), events: events.NewFakeRecorder(100),
		client: metadatafake.NewSimpleMetadataClient(scheme, namespaces...), objects: map[string]*graph.Object{}}
	h.policy.Set(p)
	h.client.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		del := a.(clienttesting.DeleteActionImpl)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.refuse != nil {
			if err := h.refuse(del.Name); err != nil {
				return true, nil, err
			}
		}
		h.deletions = append(h.deletions, deletion{resource: del.Resource.Resource, namespace: del.Namespace, name: del.Name, opts: del.DeleteOptions, at: time.Now(),
			onShared: h.shared != nil && h.shared.Running() > 0})
		// The monitors observe the deletion.
		if o, ok := h.objects[del.Namespace+"/"+del.Name]; ok {
			gone := *o
			h.graph.ObserveDeleted(&gone, nopSink{})
			h.e.Observed(configMaps, &gone, true)
		}
		return true, nil, nil
	})
	h.e = New(Options{Graph: h.graph, Policy: h.policy, Discovery: d, Client: h.client, Recorder: h.events, Workers: 2})
	return h
}

// share has the collector take its workers from shared, as a fleet's
// member's does; call it before start.
func (h *harness) share(shared *workers.Shared) {
	h.shared = shared
	h.e.opts.Shared = shared
}

// start runs the collector, as the leader, until the test ends, and waits
// until it has scanned the graph.
func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.e.Start(ctx)
	}()
	h.t.Cleanup(func() { cancel(); <-done })
	h.waitFor("the collector to take the policy", func() bool { return h.e.kicksHandled.Load() > 0 })
	if h.policy.Get().Collectors.Expiry.Enabled {
		h.waitFor("the collector to scan the graph", func() bool { return h.e.Status().Synced })
	}
}

// waitFor waits, a bounded time, until cond holds.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; deletions %v, status %+v", what, h.deleted(), h.e.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var uids int

// observe observes a ConfigMap (or a Namespace, for ns "") with the
// annotations, created at created, into the graph, as a monitor does.
func (h *harness) observe(ns, name string, created time.Time, annotations ...string) *graph.Object {
	h.t.Helper()
	uids++
	o := &graph.Object{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("uid-%d", uids)),
		ResourceVersion: fmt.Sprint(uids), Created: created}
	res := configMaps
	if ns == "" {
		o.Kind = "Namespace"
		res = discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace", Deletable: true}
	}
	for i := 0; i+1 < len(annotations); i += 2 {
		switch annotations[i] {
		case ownergcv1alpha1.TTLAnnotation:
			o.Expiry.TTL, o.Expiry.HasTTL = annotations[i+1], true
		case ownergcv1alpha1.ExpiresAnnotation:
			o.Expiry.Expires, o.Expiry.HasExpires = annotations[i+1], true
		case ownergcv1alpha1.ProtectedAnnotation:
			o.Protected = annotations[i+1] == "true"
		}
	}
	h.again(res, o)
	return o
}

// again observes o again (changed).
func (h *harness) again(res discovery.Resource, o *graph.Object) {
	h.mu.Lock()
	h.objects[o.Namespace+"/"+o.Name] = o
	h.mu.Unlock()
	h.graph.Observe(o, nopSink{})
	h.e.Observed(res, o, false)
}

func (h *harness) deleted() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, d := range h.deletions {
		out = append(out, d.name)
	}
	return out
}

func (h *harness) deletion(name string) (deletion, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.deletions {
		if d.name == name {
			return d, true
		}
	}
	return deletion{}, false
}

// events returns the events recorded so far.
func (h *harness) recorded() []string {
	var out []string
	for {
		select {
		case ev := <-h.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

type nopSink struct{}

func (nopSink) AttemptToDelete(*graph.Node)                       {}
func (nopSink) AttemptToOrphan(*graph.Node)                       {}
func (nopSink) InvalidOwnerNamespace(_, _ graph.Identity)         {}
func (nopSink) DeletionObserved(graph.Identity, []graph.OwnerRef) {}
func (nopSink) ReferenceRemoved(graph.Identity, graph.OwnerRef)   {}

func enabled(change func(*ownergcv1alpha1.ExpiryCollector)) ownergcv1alpha1.GCPolicySpec {
	spec := ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{Expiry: ownergcv1alpha1.ExpiryCollector{Enabled: true}}}
	if change != nil {
		change(&spec.Collectors.Expiry)
	}
	return spec
}

// An object whose time has passed is deleted with its UID and
// resourceVersion as preconditions and the policy's propagation; one whose
// time is to come is deleted at its time, not before.
func TestAnObjectIsDeletedAtItsTime(t *testing.T) {
	h := newHarness(t, enabled(nil))
	h.start()
	past := h.observe("ns", "past", time.Now().Add(-time.Hour), ownergcv1alpha1.TTLAnnotation, "30m")
	at := time.Now().Add(400 * time.Millisecond)
	h.observe("ns", "soon", time.Now(), ownergcv1alpha1.ExpiresAnnotation, at.UTC().Format(time.RFC3339Nano))
	h.observe("ns", "later", time.Now(), ownergcv1alpha1.TTLAnnotation, "7d")
	h.observe("ns", "plain", time.Now())

	h.waitFor("the expired object's deletion", func() bool { _, ok := h.deletion("past"); return ok })
	d, _ := h.deletion("past")
	if d.resource != "configmaps" || d.namespace != "ns" || *d.opts.Preconditions.UID != past.UID ||
		*d.opts.Preconditions.ResourceVersion != past.ResourceVersion || *d.opts.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("deleted %+v with %+v, want configmaps ns/past with its UID, resourceVersion and Background", d, d.opts)
	}
	if _, ok := h.deletion("soon"); ok && time.Now().Before(at) {
		t.Fatal("deleted before its time")
	}
	h.waitFor("the deletion at its time", func() bool { _, ok := h.deletion("soon"); return ok })
	if d, _ := h.deletion("soon"); d.at.Before(at) || d.at.Sub(at) > time.Second {
		t.Errorf("deleted at %v, %v after its time %v: want within a second, not before", d.at, d.at.Sub(at), at)
	}
	if got := h.deleted(); !slices.Equal(got, []string{"past", "soon"}) {
		t.Errorf("deleted %v, want past and soon only", got)
	}
	if st := h.e.Status(); st.Deleted != 2 || st.Scheduled != 1 {
		t.Errorf("status %+v, want 2 deleted and 1 (later) scheduled", st)
	}
}

// In a fleet, the collector deletes on the workers the members share, and
// once disabled it holds none of them.
func TestExpiryTakesItsWorkersFromTheSharedOnes(t *testing.T) {
	h := newHarness(t, enabled(nil))
	shared := workers.NewShared(0)
	h.share(shared)
	h.start()
	h.observe("ns", "past", time.Now().Add(-time.Hour), ownergcv1alpha1.TTLAnnotation, "30m")
	h.waitFor("the expired object's deletion", func() bool { _, ok := h.deletion("past"); return ok })
	if d, _ := h.deletion("past"); !d.onShared {
		t.Fatal("the object was deleted while no shared worker ran")
	}
	p, err := policy.FromSpec(&ownergcv1alpha1.GCPolicySpec{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	h.policy.Set(p)
	h.waitFor("the collector to stop", func() bool { return !h.e.Status().Running })
	if n := shared.Running(); n != 0 {
		t.Fatalf("%d shared workers run once expiry is disabled, want none", n)
	}
}

// An annotation that cannot be read gets one InvalidExpiry event, naming
// the value and the forms accepted, and deletes nothing.
func TestAnUnreadableAnnotationIsReportedOnceAndNeverDeletes(t *testing.T) {
	h := newHarness(t, enabled(nil))
	h.start()
	o := h.observe("ns", "bad", time.Now().Add(-time.Hour), ownergcv1alpha1.TTLAnnotation, "7days")
	h.waitFor("the InvalidExpiry report", func() bool { return h.e.Status().Invalid == 1 })
	h.again(configMaps, o)             // observed again, unchanged: not reported again
	time.Sleep(100 * time.Millisecond) // nothing to wait for: the report would come at once
	evs := h.recorded()
	if len(evs) != 1 || !strings.Contains(evs[0], "Warning InvalidExpiry") || !strings.Contains(evs[0], `ownergc.io/ttl="7days"`) ||
		!strings.Contains(evs[0], "such as 36h") {
		t.Errorf("events %q, want one InvalidExpiry naming the value and the forms accepted", evs)
	}
	if got := h.deleted(); len(got) != 0 || h.e.Status().Invalid != 1 {
		t.Errorf("deleted %v, invalid %d; want nothing deleted, one invalid", got, h.e.Status().Invalid)
	}
}

// Nothing is deleted, and each decision is reported once, where the policy
// says so: DryRun, protection, expiry disabled.
func TestWhatThePolicyForbidsIsNotDeleted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   ownergcv1alpha1.GCPolicySpec
		annot  []string
		dryRun int64
	}{
		{name: "dry run", spec: func() ownergcv1alpha1.GCPolicySpec { s := enabled(nil); s.Mode = ownergcv1alpha1.ModeDryRun; return s }(), dryRun: 1},
		{name: "protected namespace", spec: func() ownergcv1alpha1.GCPolicySpec {
			s := enabled(nil)
			s.Protection.Namespaces = []ownergcv1alpha1.NamespaceName{"ns"}
			return s
		}()},
		{name: "protected object", spec: enabled(nil), annot: []string{ownergcv1alpha1.ProtectedAnnotation, "true"}},
		{name: "disabled", spec: ownergcv1alpha1.GCPolicySpec{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.spec)
			h.start()
			o := h.observe("ns", "due", time.Now().Add(-time.Hour), append([]string{ownergcv1alpha1.TTLAnnotation, "1m"}, tc.annot...)...)
			if tc.dryRun > 0 {
				h.waitFor("the DryRun decision", func() bool { return h.e.Status().DryRunDeletions == tc.dryRun })
				h.again(configMaps, o)
			}
			time.Sleep(200 * time.Millisecond) // nothing must happen: give it the time to
			if got := h.deleted(); len(got) != 0 {
				t.Errorf("deleted %v", got)
			}
			if got := h.e.Status().DryRunDeletions; got != tc.dryRun {
				t.Errorf("%d dry-run deletions, want %d", got, tc.dryRun)
			}
		})
	}
}

// A standby schedules nothing; the leader, once it starts, finds in the
// graph everything due and deletes it.
func TestANewLeaderFindsEverythingDue(t *testing.T) {
	h := newHarness(t, enabled(nil))
	for i := range 20 {
		h.observe("ns", fmt.Sprintf("due-%d", i), time.Now().Add(-time.Hour), ownergcv1alpha1.TTLAnnotation, "1m")
	}
	h.observe("ns", "later", time.Now(), ownergcv1alpha1.TTLAnnotation, "1h")
	if st := h.e.Status(); st.Scheduled != 0 || st.Running {
		t.Fatalf("a standby schedules: %+v", st)
	}
	h.start()
	h.waitFor("every due object's deletion", func() bool { return len(h.deleted()) == 20 })
	if st := h.e.Status(); st.Scheduled != 1 {
		t.Errorf("status %+v, want the later one scheduled", st)
	}
}

// An annotation removed or extended before its time: nothing is deleted.
// An object changed after the decision fails the precondition and is
// decided again from its new version.
func TestChangesBeforeTheDeletionAreDecidedAgain(t *testing.T) {
	h := newHarness(t, enabled(nil))
	h.start()
	soon := func() string { return time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano) }
	removed := h.observe("ns", "removed", time.Now(), ownergcv1alpha1.ExpiresAnnotation, soon())
	extended := h.observe("ns", "extended", time.Now(), ownergcv1alpha1.ExpiresAnnotation, soon())
	removed.Expiry, removed.ResourceVersion = graph.ExpiryAnnotations{}, "1001"
	h.again(configMaps, removed)
	extended.Expiry.Expires, extended.ResourceVersion = time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "1002"
	h.again(configMaps, extended)

	// Changed after the decision: the DELETE's precondition fails; the
	// change, observed, extends it.
	h.mu.Lock()
	h.refuse = func(name string) error {
		if name == "raced" {
			return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, fmt.Errorf("the resourceVersion changed"))
		}
		return nil
	}
	h.mu.Unlock()
	raced := h.observe("ns", "raced", time.Now().Add(-time.Hour), ownergcv1alpha1.TTLAnnotation, "1m")
	h.waitFor("the refused deletion", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.refuse != nil && len(h.client.Actions()) > 0
	})
	raced.Expiry.TTL, raced.ResourceVersion = "7d", "1003"
	h.again(configMaps, raced)
	time.Sleep(time.Second) // past the removed and extended times
	if got := h.deleted(); len(got) != 0 {
		t.Errorf("deleted %v, want nothing", got)
	}
	if st := h.e.Status(); st.Scheduled != 2 {
		t.Errorf("status %+v, want extended and raced scheduled", st)
	}
}

// warnBefore: a Warning event ExpiresSoon, once, before the object's time.
func TestExpiresSoonIsRecordedOnce(t *testing.T) {
	h := newHarness(t, enabled(func(e *ownergcv1alpha1.ExpiryCollector) { e.WarnBefore = &metav1.Duration{Duration: time.Hour} }))
	h.start()
	o := h.observe("ns", "soon", time.Now(), ownergcv1alpha1.TTLAnnotation, "30m")
	h.waitFor("the ExpiresSoon event", func() bool {
		for _, ev := range h.recorded() {
			if strings.Contains(ev, "Warning ExpiresSoon") && strings.Contains(ev, "by annotation ownergc.io/ttl=30m") {
				return true
			}
		}
		return false
	})
	h.again(configMaps, o)
	time.Sleep(100 * time.Millisecond) // a second warning would come at once
	if evs := h.recorded(); len(evs) != 0 {
		t.Errorf("warned again: %q", evs)
	}
	if got := h.deleted(); len(got) != 0 {
		t.Errorf("deleted %v before its time", got)
	}
}

// Rules: by namespace name, by the labels of the namespace (a Namespace by
// its own), the first that matches; the labels followed live.
func TestRulesSelectByNamespace(t *testing.T) {
	preview := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "preview", Labels: map[string]string{"env": "preview"}}}
	prod := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}}
	rule := func(resource string, names []ownergcv1alpha1.NamespaceName, sel *metav1.LabelSelector) ownergcv1alpha1.ExpiryRule {
		return ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: resource}, Namespaces: names,
			NamespaceSelector: sel, After: metav1.Duration{Duration: time.Minute}}
	}
	h := newHarness(t, enabled(func(e *ownergcv1alpha1.ExpiryCollector) {
		e.Rules = []ownergcv1alpha1.ExpiryRule{
			rule("configmaps", []ownergcv1alpha1.NamespaceName{"ci"}, nil),
			rule("configmaps", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"env": "preview"}}),
			rule("namespaces", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"env": "preview"}}),
		}
	}), preview, prod)
	old := time.Now().Add(-time.Hour)
	h.observe("ci", "by-name", old)
	h.observe("preview", "by-label", old)
	h.observe("prod", "not-selected", old)
	h.observe("prod", "annotated", time.Now(), ownergcv1alpha1.TTLAnnotation, "1h")
	h.observe("", "preview", old)
	h.observe("", "prod", old)
	h.start()
	h.waitFor("the selected objects' deletions", func() bool { return len(h.deleted()) == 3 })
	got := h.deleted()
	slices.Sort(got)
	if !slices.Equal(got, []string{"by-label", "by-name", "preview"}) {
		t.Errorf("deleted %v, want by-label, by-name and the Namespace preview", got)
	}
	if st := h.e.Status(); st.Scheduled != 1 || !strings.Contains(st.Watches, "Namespaces") {
		t.Errorf("status %+v, want the annotated one scheduled, and the Namespaces' labels watched", st)
	}
	// prod labelled env=preview: its objects are selected now.
	prod.Labels = map[string]string{"env": "preview"}
	if _, err := h.client.Resource(namespacesGVR).(metadatafake.MetadataClient).UpdateFake(prod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the newly selected objects' deletions", func() bool { return len(h.deleted()) == 5 })
}
