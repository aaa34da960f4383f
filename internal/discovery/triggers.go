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
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

var (
	crdResource        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Triggers watches CustomResourceDefinitions (their metadata) and
// APIServices (what their specs register) with followers of its own
// (follow.go), so that a policy that ignores those resources does not stop
// it, and asks its Discoverer for a rediscovery, with follow-ups, on every
// change (rediscover). It records the CRDs it sees deleted (their
// resources' objects are gone: Options.CRDDeleted) and lists the
// registered group-versions for the Discoverer (Options.APIServices). It
// runs on every replica, as the Discoverer does.
//
// Concurrency: each follower runs in a goroutine of its own and calls its
// handler from it; deleted is guarded by mu; the followers' objects are
// guarded by their own locks.
type Triggers struct {
	d           *Discoverer
	crds        *follower
	apiServices *follower

	mu sync.Mutex
	// deleted holds the names of the CRDs observed deleted and not
	// created again since.
	deleted map[string]bool
}

// apiServiceEntry is what the triggers keep of an APIService.
type apiServiceEntry struct {
	gv      schema.GroupVersion
	service bool
}

// NewWithTriggers returns a Discoverer whose rediscoveries CRD and APIService
// changes trigger, and the Triggers that watch them through mc (CRDs) and
// apiServices (NewAPIServiceClient). It sets opts.CRDDeleted and
// opts.APIServices. Both are manager runnables of their own. The followers
// read on their streaming lists' watches: mc and apiServices should ask
// for uncompressed answers (an API server compresses a streaming list's
// watch for as long as it lasts).
func NewWithTriggers(opts Options, mc metadata.Interface, apiServices APIServiceSource) (*Discoverer, *Triggers) {
	t := &Triggers{deleted: make(map[string]bool)}
	crds := mc.Resource(crdResource)
	t.crds = newFollower(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return crds.List(ctx, o) },
		crds.Watch, nil,
		func(c change, name string, changed time.Time) {
			switch c {
			case added, listed:
				t.setDeleted(name, false)
			case deleted:
				t.setDeleted(name, true)
			}
			t.rediscover(c, changed)
		})
	t.apiServices = newFollower(apiServices.List, apiServices.Watch, apiServiceOf,
		func(c change, _ string, changed time.Time) { t.rediscover(c, changed) })
	apiServicesListed := make(chan struct{})
	opts.CRDDeleted, opts.APIServices, opts.APIServicesListed = t.crdDeleted, t.listAPIServices, apiServicesListed
	t.d = New(opts)
	// The first discovery waits for the APIServices; one that ran before
	// they were listed (it waited too long) could not tell the API
	// server's own groups.
	t.apiServices.onSynced = func() {
		close(apiServicesListed)
		t.d.TriggerIfLocalUnknown()
	}
	return t.d, t
}

// publishedWithin bounds how long the API server takes to publish in
// discovery what a change of a CRD or APIService serves, with a margin for
// the clocks of the collector and the API server.
const publishedWithin = 5 * time.Minute

// rediscover asks for the rediscoveries a change calls for: one now and
// follow-ups over the next seconds, while the API server publishes what
// changed. An object of the followers' first list that last changed
// (lastChanged: created, or written by any manager, its status included)
// over publishedWithin ago is published already: it asks for a rediscovery
// only if the latest discovery started before it was surely published
// (the followers listed long after the first discovery). An engine that
// starts does not rediscover for the CRDs and APIServices its cluster had
// (a fleet engages many clusters at once), but once if its first discovery
// ran before the APIServices were listed (TriggerIfLocalUnknown).
func (t *Triggers) rediscover(c change, changed time.Time) {
	if c == listed && !changed.IsZero() {
		if published := changed.Add(publishedWithin); time.Now().After(published) {
			t.d.TriggerUnlessStartedSince(published)
			return
		}
	}
	t.d.TriggerWithFollowUps()
}

// apiServiceOf is the group-version an APIService registers and whether a
// backend service serves it.
func apiServiceOf(obj runtime.Object) any {
	s, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return apiServiceEntry{}
	}
	return apiServiceEntry{gv: schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}, service: s.Spec.Service != nil}
}

// Start watches CRDs and APIServices until ctx ends, asking for a
// rediscovery on every change; it returns once both followers have.
func (t *Triggers) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, f := range []*follower{t.crds, t.apiServices} {
		wg.Go(func() { f.run(ctx) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection: the triggers feed discovery, which runs on every
// replica.
func (t *Triggers) NeedLeaderElection() bool { return false }

func (t *Triggers) setDeleted(name string, deleted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if deleted {
		t.deleted[name] = true
	} else {
		delete(t.deleted, name)
	}
}

// crdDeleted reports whether the CRD of that name was observed deleted and
// not created again since.
func (t *Triggers) crdDeleted(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deleted[name]
}

// listAPIServices lists the registered group-versions and whether each has
// a backend service, from the APIService informer.
func (t *Triggers) listAPIServices(context.Context) (map[schema.GroupVersion]bool, error) {
	if !t.apiServices.synced() {
		return nil, errors.New("APIServices not listed yet")
	}
	out := make(map[schema.GroupVersion]bool)
	for _, v := range t.apiServices.values() {
		if e, ok := v.(apiServiceEntry); ok {
			out[e.gv] = e.service
		}
	}
	return out, nil
}
