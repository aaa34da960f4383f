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

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
)

// resourceInfo is a resource the plugin lists.
type resourceInfo struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// listedObject is the metadata of one listed object, with its kind.
type listedObject struct {
	meta       metav1.ObjectMeta
	kind       schema.GroupVersionKind
	resource   schema.GroupVersionResource
	namespaced bool
}

func (l *listedObject) ref() objectRef {
	return objectRef{APIVersion: l.kind.GroupVersion().String(), Kind: l.kind.Kind, Resource: formatGVR(l.resource),
		Namespace: l.meta.Namespace, Name: l.meta.Name, UID: l.meta.UID}
}

// listing is every object of the listed resources.
type listing struct {
	objects []*listedObject
	// forbidden names the resources the caller may not list; failed the
	// resources (or API groups) that could not be listed for another
	// reason, and why. Their objects are missing.
	forbidden, failed []string
}

// incomplete says in a few words which resources could not be listed.
func (l listing) incomplete() []string {
	out := slices.Clone(l.failed)
	if n := len(l.forbidden); n > 0 {
		const show = 6
		names := strings.Join(l.forbidden[:min(n, show)], ", ")
		if n > show {
			names += fmt.Sprintf(" and %d more", n-show)
		}
		out = append(out, fmt.Sprintf("%d resources you may not list (%s)", n, names))
	}
	return out
}

// listableResources returns every resource that can be listed, at its
// preferred version, core first and then by group; failed lists the API
// groups discovery could not read.
func listableResources(dc discovery.DiscoveryInterface) (out []resourceInfo, failed []string, err error) {
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, nil, fmt.Errorf("discovering the API server's resources: %w", err)
		}
		for gv, e := range gdf.Groups {
			failed = append(failed, fmt.Sprintf("API group %s (discovery failed: %v)", gv, e))
		}
		slices.Sort(failed)
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, resourceInfo{gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced})
		}
	}
	slices.SortFunc(out, func(a, b resourceInfo) int {
		return cmp.Or(cmp.Compare(a.gvr.Group, b.gvr.Group), cmp.Compare(a.gvr.Resource, b.gvr.Resource))
	})
	return out, failed, nil
}

// listConcurrency bounds the lists in flight.
const listConcurrency = 6

// listPage is the page size of the lists.
const listPage = 500

// listAll lists the metadata of every object of the resources: namespaced
// ones in namespace ("" for all namespaces), cluster-scoped ones always
// (those the caller may not list are left out silently when namespace is
// given). An object served by two resources (core and events.k8s.io Events)
// is kept once.
func listAll(ctx context.Context, mc metadata.Interface, resources []resourceInfo, namespace string) listing {
	type result struct {
		objects []*listedObject
		err     error
	}
	results := make([]result, len(resources))
	sem := make(chan struct{}, listConcurrency)
	var wg sync.WaitGroup
	for i, r := range resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i].objects, results[i].err = listResource(ctx, mc, r, namespace)
		}()
	}
	wg.Wait()
	var out listing
	seen := map[types.UID]bool{}
	for i, r := range results {
		name := resources[i].gvr.GroupResource().String()
		switch {
		case r.err == nil:
		case apierrors.IsForbidden(r.err) && namespace != "" && !resources[i].namespaced:
			// A cluster-scoped object cannot be the dependent of a
			// namespaced one (collectors leave such references alone): a
			// namespace's user, who may not list cluster-scoped
			// resources, misses nothing there.
			continue
		case apierrors.IsForbidden(r.err):
			out.forbidden = append(out.forbidden, name)
			continue
		case apierrors.IsNotFound(r.err) || apierrors.IsMethodNotSupported(r.err):
			// The resource went away since discovery, or cannot be listed
			// after all: it holds nothing to show.
			continue
		default:
			out.failed = append(out.failed, fmt.Sprintf("%s (%v)", name, r.err))
			continue
		}
		for _, o := range r.objects {
			if !seen[o.meta.UID] {
				seen[o.meta.UID] = true
				out.objects = append(out.objects, o)
			}
		}
	}
	return out
}

func listResource(ctx context.Context, mc metadata.Interface, r resourceInfo, namespace string) ([]*listedObject, error) {
	ri := mc.Resource(r.gvr)
	var list func(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	if r.namespaced {
		list = ri.Namespace(namespace).List
	} else {
		list = ri.List
	}
	kind := r.gvr.GroupVersion().WithKind(r.kind)
	var out []*listedObject
	opts := metav1.ListOptions{Limit: listPage}
	for {
		page, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			out = append(out, &listedObject{meta: page.Items[i].ObjectMeta, kind: kind, resource: r.gvr, namespaced: r.namespaced})
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// listAround lists every object that can be a dependent of an object in
// namespace ("" for a cluster-scoped object, whose dependents may be in any
// namespace). It reads discovery afresh, so that new kinds are listed.
func (c *clients) listAround(ctx context.Context, namespace string) listing {
	c.discovery.Invalidate()
	resources, failed, err := listableResources(c.discovery)
	if err != nil {
		return listing{failed: []string{err.Error()}}
	}
	l := listAll(ctx, c.lister, resources, namespace)
	l.failed = append(failed, l.failed...)
	return l
}
