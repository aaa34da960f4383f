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

package graph

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// groupKind is one API kind whatever its version: the index of its observed
// nodes by namespace and name, and the generation of the monitor that
// observes it. Its fields are guarded by the owning Graph's lock.
type groupKind struct {
	group string
	kind  string
	// byName indexes the observed nodes of this kind.
	byName *nameTable
	// monitor is the generation of the monitor that currently observes
	// the kind (see StartMonitor). Observations made by another
	// generation are stale and ignored.
	monitor uint64
}

type nsName struct {
	namespace namespace
	name      string
}

// Kind is an interned group, version and kind: the coordinates an object was
// observed with, or an owner reference names. Every version of a group/kind
// shares one index of observed nodes. There is one *Kind per
// group/version/kind in a Graph, so kinds compare by pointer and a node or a
// reference costs one pointer for them.
type Kind struct {
	gk      *groupKind
	version string
	// apiVersion is group/version, or version for the core group.
	apiVersion string
}

// GroupKind returns the kind's group and kind.
func (k *Kind) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.gk.group, Kind: k.gk.kind}
}

// Version returns the kind's version.
func (k *Kind) Version() string { return k.version }

// APIVersion returns group/version (or version for the core group).
func (k *Kind) APIVersion() string { return k.apiVersion }

// sameGroupKind reports whether two kinds are versions of one group/kind.
func (k *Kind) sameGroupKind(o *Kind) bool { return k.gk == o.gk }

// groupKindFor returns the interned group/kind, creating it.
func (g *Graph) groupKindFor(group, kind string) *groupKind {
	key := schema.GroupKind{Group: group, Kind: kind}
	gk, ok := g.groupKinds[key]
	if !ok {
		gk = &groupKind{group: group, kind: kind, byName: newNameTable()}
		g.groupKinds[key] = gk
	}
	return gk
}

// kindFor returns the interned group/version/kind, creating it.
func (g *Graph) kindFor(group, version, kind string) *Kind {
	key := schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	k, ok := g.kinds[key]
	if !ok {
		k = &Kind{gk: g.groupKindFor(group, kind), version: version,
			apiVersion: schema.GroupVersion{Group: group, Version: version}.String()}
		g.kinds[key] = k
	}
	return k
}

// refKind returns the interned kind an owner reference names.
func (g *Graph) refKind(apiVersion, kind string) *Kind {
	return g.kindFor(groupOf(apiVersion), versionOf(apiVersion), kind)
}

// groupOf returns the group of an apiVersion without allocating.
func groupOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// versionOf returns the version of an apiVersion without allocating.
func versionOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[i+1:]
	}
	return apiVersion
}
