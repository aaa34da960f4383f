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

package serve

import (
	"errors"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
)

// Snapshots gives the latest discovery snapshot, nil before the first
// discovery (a *discovery.Discoverer).
type Snapshots interface {
	Snapshot() *discovery.Snapshot
}

// Nodes finds the graph's nodes by UID (a *graph.Graph).
type Nodes interface {
	Node(uid types.UID) *graph.Node
	Describe(n *graph.Node) graph.NodeState
}

// Resolver maps the query of an /explain request to its target: the
// resource of the latest discovery snapshot that serves it, and the object's
// namespace and name. It implements Explainer's Resolve.
//
// Concurrency: safe for concurrent use; it reads an immutable snapshot and
// the graph, which has locks of its own.
type Resolver struct {
	discovery Snapshots
	graph     Nodes
}

// NewResolver returns a Resolver over discovery's snapshots and the graph.
func NewResolver(d Snapshots, g Nodes) *Resolver {
	return &Resolver{discovery: d, graph: g}
}

// Resolve checks the query's names first (explain.ValidateQuery), then maps
// group, version, resource, namespace and name, or uid, to the target. By
// UID, a node the graph does not hold, of a kind no resource serves, or
// whose name or namespace cannot be one path segment (a virtual node made
// from an owner reference) names no object: explain.ErrNotFound. The
// namespace of a cluster-scoped resource is ignored; a namespaced one needs
// it.
func (r *Resolver) Resolve(q url.Values) (explain.Target, error) {
	if err := explain.ValidateQuery(q); err != nil {
		return explain.Target{}, err
	}
	snap := r.discovery.Snapshot()
	if snap == nil {
		return explain.Target{}, errors.New("discovery has not run yet")
	}
	if q.Has("uid") {
		return r.byUID(snap, types.UID(q.Get("uid")))
	}
	gvr := schema.GroupVersionResource{Group: q.Get("group"), Version: q.Get("version"), Resource: q.Get("resource")}
	name := q.Get("name")
	if gvr.Version == "" || gvr.Resource == "" || name == "" {
		return explain.Target{}, errors.New("give version, resource and name (group and namespace where they apply), or uid")
	}
	res, ok := snap.ForResource(gvr)
	if !ok {
		return explain.Target{}, fmt.Errorf("the API server does not serve %s", discovery.FormatGVR(gvr))
	}
	ns := q.Get("namespace")
	if !res.Namespaced {
		ns = ""
	} else if ns == "" {
		return explain.Target{}, fmt.Errorf("%s is namespaced: give a namespace", discovery.FormatGVR(gvr))
	}
	return target(res, ns, name), nil
}

// byUID resolves the node of uid.
func (r *Resolver) byUID(snap *discovery.Snapshot, uid types.UID) (explain.Target, error) {
	n := r.graph.Node(uid)
	if n == nil {
		return explain.Target{}, explain.ErrNotFound
	}
	id := r.graph.Describe(n).Identity
	res, ok := snap.Resolve(id.GroupVersionKind())
	if !ok {
		return explain.Target{}, explain.ErrNotFound
	}
	ns := id.Namespace
	if !res.Namespaced {
		ns = ""
	}
	if explain.ValidatePath(ns, id.Name) != nil {
		return explain.Target{}, explain.ErrNotFound
	}
	return target(res, ns, id.Name), nil
}

func target(res discovery.Resource, namespace, name string) explain.Target {
	return explain.Target{Resource: res.GroupVersionResource, Kind: res.GVK(), Namespaced: res.Namespaced, Namespace: namespace, Name: name}
}
