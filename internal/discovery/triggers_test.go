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
	"fmt"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

func apiService(group, version string, service bool) apiregistrationv1.APIService {
	a := apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group, ResourceVersion: "1"},
		Spec:       apiregistrationv1.APIServiceSpec{Group: group, Version: version},
	}
	if service {
		a.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "backend"}
	}
	return a
}

// fakeAPIServices is an APIServiceSource of fixed APIServices, listed as
// NewAPIServiceClient lists them (typed); its watches send nothing.
type fakeAPIServices []apiregistrationv1.APIService

func (f fakeAPIServices) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return &apiregistrationv1.APIServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: f}, nil
}

func (f fakeAPIServices) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// eventually polls check every 10 ms for 10 seconds.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The triggers record the CRDs observed deleted (until created again), list
// the APIServices with their backend services, and ask for a rediscovery on
// every change of either.
func TestTriggersRecordDeletedCRDsAndListAPIServices(t *testing.T) {
	crd := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
	}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypeWithName(crd.GroupVersionKind(), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(crdResource.GroupVersion().WithKind("CustomResourceDefinitionList"), &metav1.PartialObjectMetadataList{})
	mc := metadatafake.NewSimpleMetadataClient(scheme, crd)
	apiServices := fakeAPIServices{apiService("", "v1", false), apiService("metrics.example.com", "v1beta1", true)}
	d, tr := NewWithTriggers(Options{Client: newFake()}, mc, apiServices)
	// The fake clients ignore sendInitialEvents: list them by LIST.
	tr.crds.noStreaming, tr.apiServices.noStreaming = true, true
	if _, err := tr.listAPIServices(t.Context()); err == nil {
		t.Error("APIServices listed before the informer synced")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- tr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	want := map[schema.GroupVersion]bool{{Version: "v1"}: false, {Group: "metrics.example.com", Version: "v1beta1"}: true}
	eventually(t, "the APIServices should be listed", func() error {
		got, err := d.opts.APIServices(t.Context())
		if err != nil || !maps.Equal(got, want) {
			return fmt.Errorf("listed %v (%v), want %v", got, err, want)
		}
		return nil
	})
	eventually(t, "the CRD's addition should trigger a rediscovery", func() error {
		if len(d.trigger) == 0 {
			return fmt.Errorf("no rediscovery asked for")
		}
		return nil
	})
	<-d.trigger

	crds := mc.Resource(crdResource)
	if err := crds.Delete(t.Context(), crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the CRD should be recorded deleted", func() error {
		if !d.opts.CRDDeleted(crd.Name) || len(d.trigger) == 0 {
			return fmt.Errorf("deleted %v, rediscovery asked for %v", d.opts.CRDDeleted(crd.Name), len(d.trigger) > 0)
		}
		return nil
	})
	if d.opts.CRDDeleted("gadgets.example.com") {
		t.Error("a CRD never seen is reported deleted")
	}
	<-d.trigger
	if err := mc.Tracker().Add(crd.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the CRD created again should no longer be deleted", func() error {
		if d.opts.CRDDeleted(crd.Name) || len(d.trigger) == 0 {
			return fmt.Errorf("deleted %v, rediscovery asked for %v", d.opts.CRDDeleted(crd.Name), len(d.trigger) > 0)
		}
		return nil
	})
}

// A CRD or APIService of the first list that last changed long ago (created,
// or written by any manager) asks for no rediscovery when the latest
// discovery started after it was surely published, or none started yet (the
// first one will see it), and for one when the latest started before; one
// that changed moments ago, or any change observed after the first list,
// asks for follow-ups too.
func TestTriggersAskForFollowUpsOnlyWhatMayNotBePublishedYet(t *testing.T) {
	now := time.Now()
	old := now.Add(-3 * publishedWithin)
	for _, tc := range []struct {
		name string
		c    change
		// changed is the object's last change; started the latest
		// discovery's start (zero: none yet).
		changed, started  time.Time
		rediscovery, more bool
	}{
		{name: "listed, published long ago, no discovery yet", c: listed, changed: old},
		{name: "listed, published long ago, discovered since", c: listed, changed: old, started: now.Add(-time.Second)},
		{name: "listed, published long ago, discovered before", c: listed, changed: old, started: old.Add(time.Minute), rediscovery: true},
		{name: "listed, changed moments ago", c: listed, changed: now, started: now, rediscovery: true, more: true},
		{name: "listed, last change unknown", c: listed, started: now, rediscovery: true, more: true},
		{name: "added", c: added, changed: old, started: now, rediscovery: true, more: true},
		{name: "modified", c: modified, changed: old, started: now, rediscovery: true, more: true},
		{name: "deleted", c: deleted, started: now, rediscovery: true, more: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Triggers{d: New(Options{Client: newFake()})}
			if !tc.started.IsZero() {
				tr.d.started.Store(tc.started.UnixNano())
			}
			tr.rediscover(tc.c, tc.changed)
			if got := len(tr.d.trigger) == 1; got != tc.rediscovery {
				t.Errorf("rediscovery asked for: %v, want %v", got, tc.rediscovery)
			}
			if got := tr.d.followUps > 0; got != tc.more {
				t.Errorf("follow-ups asked for: %v, want %v", got, tc.more)
			}
		})
	}
}

// Once the APIServices are listed, a discovery that ran before (and so
// could not tell which groups the API server serves itself) is run again,
// once; none is asked for when no discovery has started yet, or when the
// latest one knew them.
func TestListedAPIServicesRediscoverOnlyWhatDidNotKnowThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		// started: a discovery started; snapshot: what the latest
		// finished one knew (nil: none finished).
		started     bool
		snapshot    *Snapshot
		rediscovery bool
	}{
		{name: "no discovery yet"},
		{name: "the first discovery running", started: true, rediscovery: true},
		{name: "a discovery without them", started: true, snapshot: &Snapshot{}, rediscovery: true},
		{name: "a discovery with them", started: true, snapshot: &Snapshot{localKnown: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Options{Client: newFake()})
			if tc.started {
				d.started.Store(time.Now().UnixNano())
			}
			if tc.snapshot != nil {
				d.snapshot.Store(tc.snapshot)
			}
			d.TriggerIfLocalUnknown()
			if got := len(d.trigger) == 1; got != tc.rediscovery {
				t.Errorf("rediscovery asked for: %v, want %v", got, tc.rediscovery)
			}
		})
	}
	// The triggers call it once their APIService follower has listed.
	d, tr := NewWithTriggers(Options{Client: newFake()}, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), fakeAPIServices{})
	d.started.Store(time.Now().UnixNano())
	d.snapshot.Store(&Snapshot{})
	if tr.apiServices.onSynced == nil {
		t.Fatal("the APIService follower's first list asks for nothing")
	}
	tr.apiServices.onSynced()
	if len(d.trigger) != 1 {
		t.Error("the APIService follower's first list did not ask its Discoverer for a rediscovery")
	}
}

// What a CRD's metadata says of its last change: its creation, or a later
// write of any manager (its status: Established, a new version served).
func TestLastChangedIsTheLatestOfCreationAndManagedFields(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}
	if got := lastChanged(m); !got.Equal(created) {
		t.Errorf("no managed fields: %v, want the creation %v", got, created)
	}
	status := created.Add(3 * time.Hour)
	m.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Time: ptr.To(metav1.NewTime(created.Add(time.Hour)))},
		{Manager: "kube-apiserver", Subresource: "status", Time: ptr.To(metav1.NewTime(status))},
		{Manager: "no-time"},
	}
	if got := lastChanged(m); !got.Equal(status) {
		t.Errorf("%v, want the status update %v", got, status)
	}
}
