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
	"k8s.io/apimachinery/pkg/api/meta"
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
