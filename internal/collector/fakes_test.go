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

package collector

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/policy"
)

// call is one request the collector made.
type call struct {
	verb, resource, namespace, name string
	patchType                       types.PatchType
	patch                           string
	delete                          metav1.DeleteOptions
}

func (c call) String() string { return c.verb + " " + c.resource + " " + c.namespace + "/" + c.name }

// fakeAPI is a metadata client that records calls and answers from live
// objects (absent means NotFound) or from a scripted error.
type fakeAPI struct {
	mu    sync.Mutex
	calls []call
	live  map[string]*metav1.PartialObjectMetadata // resource/ns/name
	// fail, when set, may return an error for a call.
	fail func(call) error
}

func newFakeAPI() *fakeAPI { return &fakeAPI{live: map[string]*metav1.PartialObjectMetadata{}} }

func liveKey(resource, ns, name string) string { return resource + "/" + ns + "/" + name }

func (f *fakeAPI) put(resource string, obj *metav1.PartialObjectMetadata) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[liveKey(resource, obj.Namespace, obj.Name)] = obj
}

func (f *fakeAPI) record(c call) (*metav1.PartialObjectMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	if f.fail != nil {
		if err := f.fail(c); err != nil {
			return nil, err
		}
	}
	obj, ok := f.live[liveKey(c.resource, c.namespace, c.name)]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: c.resource}, c.name)
	}
	if c.verb == "delete" {
		delete(f.live, liveKey(c.resource, c.namespace, c.name))
	}
	return obj, nil
}

// deleted returns the names of the objects deleted, in order.
func (f *fakeAPI) deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if c.verb == "delete" {
			out = append(out, c.name)
		}
	}
	return out
}

func (f *fakeAPI) verbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.verb
	}
	return out
}

func (f *fakeAPI) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return &fakeResource{api: f, resource: gvr.Resource}
}

type fakeResource struct {
	api       *fakeAPI
	resource  string
	namespace string
}

func (r *fakeResource) Namespace(ns string) metadata.ResourceInterface {
	return &fakeResource{api: r.api, resource: r.resource, namespace: ns}
}

func (r *fakeResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*metav1.PartialObjectMetadata, error) {
	return r.api.record(call{verb: "get", resource: r.resource, namespace: r.namespace, name: name})
}

func (r *fakeResource) Delete(_ context.Context, name string, opts metav1.DeleteOptions, _ ...string) error {
	_, err := r.api.record(call{verb: "delete", resource: r.resource, namespace: r.namespace, name: name, delete: opts})
	return err
}

func (r *fakeResource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*metav1.PartialObjectMetadata, error) {
	return r.api.record(call{verb: "patch", resource: r.resource, namespace: r.namespace, name: name, patchType: pt, patch: string(data)})
}

func (r *fakeResource) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	panic("not used by the collector")
}

func (r *fakeResource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	panic("not used by the collector")
}

func (r *fakeResource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	panic("not used by the collector")
}

// fakeCache plays the shared metadata cache and discovery.
type fakeCache struct {
	mu      sync.Mutex
	objects map[string]*metav1.PartialObjectMetadata // group/Kind/ns/name
	watched map[schema.GroupKind]bool
	// states overrides the state of a kind's monitor (default: synced
	// when watched).
	states map[schema.GroupKind]monitor.KindState
	served map[schema.GroupVersionKind]fakeResourceInfo
	// dormant, when set, answers ConfirmDormantEmpty; confirms counts its
	// calls.
	dormant  func() error
	confirms int
	// woken are the kinds WakeKind was called for.
	woken []schema.GroupKind
}

type fakeResourceInfo struct {
	resource   string
	namespaced bool
}

func newFakeCache() *fakeCache {
	return &fakeCache{
		objects: map[string]*metav1.PartialObjectMetadata{},
		watched: map[schema.GroupKind]bool{},
		states:  map[schema.GroupKind]monitor.KindState{},
		served: map[schema.GroupVersionKind]fakeResourceInfo{
			{Version: "v1", Kind: "ConfigMap"}:                                       {"configmaps", true},
			{Version: "v1", Kind: "Secret"}:                                          {"secrets", true},
			{Group: "example.com", Version: "v1", Kind: "Widget"}:                    {"widgets", true},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}: {"clusterroles", false},
		},
	}
}

func cacheKey(gk schema.GroupKind, ns, name string) string {
	return gk.Group + "/" + gk.Kind + "/" + ns + "/" + name
}

func (c *fakeCache) Cached(gk schema.GroupKind, ns, name string) (*metav1.PartialObjectMetadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[cacheKey(gk, ns, name)]
	return o, ok
}

func (c *fakeCache) Kind(gk schema.GroupKind) monitor.KindState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.states[gk]; ok {
		return st
	}
	return monitor.KindState{Watched: c.watched[gk], Synced: c.watched[gk]}
}

func (c *fakeCache) ConfirmDormantEmpty(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.confirms++
	if c.dormant != nil {
		return c.dormant()
	}
	return nil
}

func (c *fakeCache) WakeKind(gk schema.GroupKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.woken = append(c.woken, gk)
}

func (c *fakeCache) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	r, ok := c.served[gvk]
	if !ok {
		return schema.GroupVersionResource{}, false, fmt.Errorf("kind %s is not served", gvk)
	}
	return gvk.GroupVersion().WithResource(r.resource), r.namespaced, nil
}

// harness is a collector wired to fakes, driven step by step: observe
// objects into the graph, then drain the queues synchronously.
type harness struct {
	t     *testing.T
	graph *graph.Graph
	cache *fakeCache
	api   *fakeAPI
	// explainAPI is the explanations' client: the same objects as api,
	// its own calls.
	explainAPI *fakeAPI
	policy     *policy.Store
	recorder   *events.FakeRecorder
	c          *Collector
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, graph: graph.New(100), cache: newFakeCache(), api: newFakeAPI(), policy: policy.NewStore(), recorder: events.NewFakeRecorder(100)}
	h.explainAPI = &fakeAPI{live: h.api.live} // harness steps run one at a time
	h.c = New(Options{Graph: h.graph, Resources: h.cache, Objects: h.cache, Client: h.api, Recorder: h.recorder, Policy: h.policy,
		ExplainClient: h.explainAPI})
	h.c.leading.Store(true) // as if started: queue work without running workers
	t.Cleanup(func() {
		h.c.attemptToDelete.ShutDown()
		h.c.attemptToOrphan.ShutDown()
	})
	return h
}

type objOpt func(*metav1.PartialObjectMetadata)

func ownedBy(owner *metav1.PartialObjectMetadata, block bool) objOpt {
	return func(o *metav1.PartialObjectMetadata) {
		o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{
			APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block,
		})
	}
}

func withFinalizers(f ...string) objOpt {
	return func(o *metav1.PartialObjectMetadata) { o.Finalizers = append(o.Finalizers, f...) }
}

func beingDeleted() objOpt {
	return func(o *metav1.PartialObjectMetadata) { now := metav1.Now(); o.DeletionTimestamp = &now }
}

// object builds an object of a kind served by the fake discovery.
func object(apiVersion, kind, ns, name string, opts ...objOpt) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(strings.ToLower(kind) + "-" + name), ResourceVersion: "7"},
	}
	for _, f := range opts {
		f(o)
	}
	return o
}

func configMap(name string, opts ...objOpt) *metav1.PartialObjectMetadata {
	return object("v1", "ConfigMap", "ns", name, opts...)
}

// observe puts obj in the cache, live on the fake API server, and in the graph.
func (h *harness) observe(objs ...*metav1.PartialObjectMetadata) {
	for _, o := range objs {
		gv, _ := schema.ParseGroupVersion(o.APIVersion)
		gk := schema.GroupKind{Group: gv.Group, Kind: o.Kind}
		h.cache.mu.Lock()
		h.cache.objects[cacheKey(gk, o.Namespace, o.Name)] = o
		h.cache.watched[gk] = true
		h.cache.mu.Unlock()
		info := h.cache.served[gv.WithKind(o.Kind)]
		h.api.put(info.resource, o)
		h.graph.Observe(&graph.Object{Group: gv.Group, Version: gv.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID,
			ResourceVersion: o.ResourceVersion, DeletionTimestamp: o.DeletionTimestamp, Finalizers: o.Finalizers,
			OwnerReferences: o.OwnerReferences}, h.c)
	}
}

// gone removes obj from the cache and the API server, and tells the graph.
func (h *harness) gone(o *metav1.PartialObjectMetadata) {
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	gk := schema.GroupKind{Group: gv.Group, Kind: o.Kind}
	h.cache.mu.Lock()
	delete(h.cache.objects, cacheKey(gk, o.Namespace, o.Name))
	h.cache.mu.Unlock()
	h.api.mu.Lock()
	delete(h.api.live, liveKey(h.cache.served[gv.WithKind(o.Kind)].resource, o.Namespace, o.Name))
	h.api.mu.Unlock()
	h.graph.ObserveDeleted(&graph.Object{Group: gk.Group, Kind: gk.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}, h.c)
}

// drain processes both queues until they are empty (items requeued with a
// delay are left alone) and returns the errors the items ended with.
func (h *harness) drain() []error {
	var errs []error
	ctx := context.Background()
	for h.c.attemptToDelete.Len() > 0 || h.c.attemptToOrphan.Len() > 0 {
		for h.c.attemptToDelete.Len() > 0 {
			n, _ := h.c.attemptToDelete.Get()
			if err := h.c.processAttemptToDelete(ctx, n); err != nil {
				errs = append(errs, err)
			}
			h.c.attemptToDelete.Done(n)
		}
		for h.c.attemptToOrphan.Len() > 0 {
			n, _ := h.c.attemptToOrphan.Get()
			if err := h.c.processAttemptToOrphan(ctx, n); err != nil {
				errs = append(errs, err)
			}
			h.c.attemptToOrphan.Done(n)
		}
	}
	return errs
}
