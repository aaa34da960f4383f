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
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one served resource at one version.
type Resource struct {
	schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Deletable: the resource supports list, watch and delete.
	Deletable bool
}

// GVK returns the resource's group, version and kind.
func (r Resource) GVK() schema.GroupVersionKind { return r.GroupVersion().WithKind(r.Kind) }

// GroupKind returns the resource's group and kind.
func (r Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// FormatGVR formats a resource as group/version/resource, or version/resource
// for the core group ("apps/v1/replicasets", "v1/pods").
func FormatGVR(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String() + "/" + gvr.Resource
}

// Failure is a group-version whose discovery failed.
type Failure struct {
	GroupVersion schema.GroupVersion
	Err          error
}

// Snapshot is the result of one discovery. It is immutable.
type Snapshot struct {
	// Watchable lists, sorted, every deletable resource at the version the
	// API server prefers for it.
	Watchable []Resource
	// Failed lists the group-versions whose discovery failed, sorted.
	Failed []Failure
	// Time is when the snapshot was taken.
	Time time.Time

	byGVK     map[schema.GroupVersionKind]Resource
	preferred map[schema.GroupKind]Resource
	// byGroupRsrc holds every served resource, deletable or not, at its
	// preferred version.
	byGroupRsrc map[schema.GroupResource]Resource
	// groups lists the groups the API server serves ("" the core group).
	groups map[string]bool
	// local lists the groups all of whose versions the API server serves
	// itself (no APIService of the group has a backend service), so that
	// any version of a kind names the same stored objects.
	local map[string]bool
	// localKnown: local was found from the APIServices (their follower had
	// listed them).
	localKnown bool
	// failedGroups lists the groups with a group-version whose discovery
	// failed.
	failedGroups map[string]bool
}

// ResourceFor returns the resource serving gvk.
func (s *Snapshot) ResourceFor(gvk schema.GroupVersionKind) (Resource, bool) {
	r, ok := s.byGVK[gvk]
	return r, ok
}

// ForResource returns the served resource gvr, with its kind.
func (s *Snapshot) ForResource(gvr schema.GroupVersionResource) (Resource, bool) {
	for _, r := range s.byGVK {
		if r.GroupVersionResource == gvr {
			return r, true
		}
	}
	return Resource{}, false
}

// Resolve returns the resource to read an object of kind gvk from: the one
// serving gvk, or when that version is not served, the kind's preferred
// version, provided the group is local and its discovery did not fail.
func (s *Snapshot) Resolve(gvk schema.GroupVersionKind) (Resource, bool) {
	if r, ok := s.byGVK[gvk]; ok {
		return r, true
	}
	if !s.local[gvk.Group] || s.failedGroups[gvk.Group] {
		return Resource{}, false
	}
	r, ok := s.preferred[gvk.GroupKind()]
	return r, ok
}

// ServesKind reports whether the API server serves the kind, at any
// version.
func (s *Snapshot) ServesKind(gk schema.GroupKind) bool {
	_, ok := s.preferred[gk]
	return ok
}

// Unmatched returns the entries (group and resource, as in a GCPolicy's
// spec.ignoredResources) that match no resource the API server serves,
// deletable or not, in the order given. Resource "*" matches when the group
// is served. An entry of a group with a group-version whose discovery failed
// is never returned: what that group serves cannot be told.
func (s *Snapshot) Unmatched(entries []schema.GroupResource) []schema.GroupResource {
	var out []schema.GroupResource
	for _, e := range entries {
		switch {
		case s.failedGroups[e.Group]:
		case e.Resource == "*":
			if !s.groups[e.Group] {
				out = append(out, e)
			}
		default:
			if _, ok := s.byGroupRsrc[e]; !ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// sameServed reports whether both snapshots serve the same groups and
// resources.
func sameServed(a, b *Snapshot) bool {
	if len(a.groups) != len(b.groups) || len(a.byGroupRsrc) != len(b.byGroupRsrc) {
		return false
	}
	for g := range a.groups {
		if !b.groups[g] {
			return false
		}
	}
	for gr := range a.byGroupRsrc {
		if _, ok := b.byGroupRsrc[gr]; !ok {
			return false
		}
	}
	return true
}

func lessResource(a, b Resource) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Resource != b.Resource {
		return a.Resource < b.Resource
	}
	return a.Version < b.Version
}
