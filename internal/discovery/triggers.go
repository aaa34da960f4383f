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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
)

var (
	crdResource        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Triggers watches CustomResourceDefinitions (their metadata) and
// APIServices (whole objects, for their backend service) in informers of
// its own, so that a policy that ignores those resources does not stop it,
// and asks its Discoverer for a rediscovery, with follow-ups, on every
// change. It records the CRDs it sees deleted (their resources' objects are
// gone: Options.CRDDeleted) and lists the registered group-versions for the
// Discoverer (Options.APIServices). It runs on every replica, as the
// Discoverer does.
//
// Concurrency: the informers call the handlers from their own goroutines;
// deleted is guarded by mu; the informers' stores are safe for concurrent
// reads.
type Triggers struct {
	d           *Discoverer
	crds        toolscache.SharedIndexInformer
	apiServices toolscache.SharedIndexInformer
	factories   []interface{ Start(<-chan struct{}) }

	mu sync.Mutex
	// deleted holds the names of the CRDs observed deleted and not
	// created again since.
	deleted map[string]bool
}

// NewWithTriggers returns a Discoverer whose rediscoveries CRD and APIService
// changes trigger, and the Triggers that watch them through mc (CRDs) and
// dyn (APIServices). It sets opts.CRDDeleted and opts.APIServices. Both are
// manager runnables of their own.
func NewWithTriggers(opts Options, mc metadata.Interface, dyn dynamic.Interface) (*Discoverer, *Triggers) {
	metaInformers := metadatainformer.NewSharedInformerFactory(mc, 0)
	dynInformers := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	t := &Triggers{
		crds:        metaInformers.ForResource(crdResource).Informer(),
		apiServices: dynInformers.ForResource(apiServiceResource).Informer(),
		factories:   []interface{ Start(<-chan struct{}) }{metaInformers, dynInformers},
		deleted:     make(map[string]bool),
	}
	opts.CRDDeleted, opts.APIServices = t.crdDeleted, t.listAPIServices
	t.d = New(opts)
	return t.d, t
}

// Start watches CRDs and APIServices until ctx ends, asking for a
// rediscovery on every change.
func (t *Triggers) Start(ctx context.Context) error {
	trigger := func(any) { t.d.TriggerWithFollowUps() }
	if _, err := t.crds.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			t.setDeleted(nameOf(o), false)
			trigger(o)
		},
		UpdateFunc: func(_, o any) { trigger(o) },
		DeleteFunc: func(o any) {
			t.setDeleted(nameOf(o), true)
			trigger(o)
		},
	}); err != nil {
		return err
	}
	if _, err := t.apiServices.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    trigger,
		UpdateFunc: func(_, o any) { trigger(o) },
		DeleteFunc: trigger,
	}); err != nil {
		return err
	}
	for _, f := range t.factories {
		f.Start(ctx.Done())
	}
	<-ctx.Done()
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

func nameOf(o any) string {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		return tomb.Key
	}
	if m, ok := o.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

// listAPIServices lists the registered group-versions and whether each has
// a backend service, from the APIService informer.
func (t *Triggers) listAPIServices(context.Context) (map[schema.GroupVersion]bool, error) {
	if !t.apiServices.HasSynced() {
		return nil, errors.New("APIServices not listed yet")
	}
	out := make(map[schema.GroupVersion]bool)
	for _, item := range t.apiServices.GetStore().List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
		service, _, _ := unstructured.NestedMap(u.Object, "spec", "service")
		out[schema.GroupVersion{Group: group, Version: version}] = service != nil
	}
	return out, nil
}
