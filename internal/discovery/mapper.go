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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Mapper is a meta.RESTMapper that answers from the latest discovery
// snapshot, so that it follows CRDs being deleted and re-created (with
// another scope, say), and falls back to another mapper for what discovery
// has not seen yet.
type Mapper struct {
	d        *Discoverer
	fallback meta.RESTMapper
}

// NewMapper returns a mapper over d's snapshots.
func NewMapper(d *Discoverer, fallback meta.RESTMapper) *Mapper {
	return &Mapper{d: d, fallback: fallback}
}

var _ meta.RESTMapper = (*Mapper)(nil)

func mapping(r Resource) *meta.RESTMapping {
	scope := meta.RESTScopeRoot
	if r.Namespaced {
		scope = meta.RESTScopeNamespace
	}
	return &meta.RESTMapping{Resource: r.GroupVersionResource, GroupVersionKind: r.GVK(), Scope: scope}
}

// RESTMapping implements meta.RESTMapper.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if s := m.d.snapshot.Load(); s != nil {
		for _, v := range versions {
			if r, ok := s.byGVK[gk.WithVersion(v)]; ok {
				return mapping(r), nil
			}
		}
		if len(versions) == 0 {
			if r, ok := s.preferred[gk]; ok {
				return mapping(r), nil
			}
		}
	}
	return m.fallback.RESTMapping(gk, versions...)
}

// RESTMappings implements meta.RESTMapper.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	if r, err := m.RESTMapping(gk, versions...); err == nil && len(versions) > 0 {
		return []*meta.RESTMapping{r}, nil
	}
	return m.fallback.RESTMappings(gk, versions...)
}

// KindFor implements meta.RESTMapper.
func (m *Mapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if s := m.d.snapshot.Load(); s != nil && resource.Version != "" {
		for _, r := range s.byGVK {
			if r.GroupVersionResource == resource {
				return r.GVK(), nil
			}
		}
	}
	return m.fallback.KindFor(resource)
}

// KindsFor implements meta.RESTMapper.
func (m *Mapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return m.fallback.KindsFor(resource)
}

// ResourceFor implements meta.RESTMapper.
func (m *Mapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return m.fallback.ResourceFor(input)
}

// ResourcesFor implements meta.RESTMapper.
func (m *Mapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.fallback.ResourcesFor(input)
}

// ResourceSingularizer implements meta.RESTMapper.
func (m *Mapper) ResourceSingularizer(resource string) (string, error) {
	return m.fallback.ResourceSingularizer(resource)
}

// GroupVersionLister reads one group-version's resources from the API
// server (client-go's discovery client, ServerResourcesForGroupVersion).
type GroupVersionLister interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// NewGroupVersionMapper returns the mapper a Mapper falls back to before
// the first discovery: it answers a mapping asked for at given versions
// (what controller-runtime's clients and caches ask: a typed object knows
// its version) by reading those group-versions alone, and passes anything
// else to next. controller-runtime's dynamic mapper, asked for one kind,
// reads and keeps the whole of the API server's aggregated discovery and
// builds a mapper of every resource (about 300 KiB per cluster, for a
// fleet's every member, and what the engine's own discovery holds anyway);
// this keeps nothing. A group-version the API server does not serve, or
// one without the kind, is a NoKindMatchError, as the dynamic mapper says.
func NewGroupVersionMapper(gv GroupVersionLister, next meta.RESTMapper) meta.RESTMapper {
	return &groupVersionMapper{RESTMapper: next, gv: gv}
}

type groupVersionMapper struct {
	meta.RESTMapper
	gv GroupVersionLister
}

func (m *groupVersionMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) == 0 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		list, err := m.gv.ServerResourcesForGroupVersion(gv.String())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range resourcesOf(gv, list.APIResources) {
			if r.Kind == gk.Kind {
				return mapping(r), nil
			}
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func (m *groupVersionMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	if len(versions) == 0 {
		return m.RESTMapper.RESTMappings(gk, versions...)
	}
	r, err := m.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	return []*meta.RESTMapping{r}, nil
}
