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
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// AbsentOwnerCache remembers owners recently confirmed absent, by their
// coordinates without the version, so that a cascade over thousands of
// dependents of one deleted owner decides from memory instead of reading the
// owner again for each. Entries come from observed deletions and from live
// reads that found nothing. It is safe for concurrent use.
type AbsentOwnerCache struct {
	cache *lru.Cache
}

type absentKey struct {
	group, kind, namespace, name string
	uid                          types.UID
}

// NewAbsentOwnerCache returns a cache of at most size entries.
func NewAbsentOwnerCache(size int) *AbsentOwnerCache {
	return &AbsentOwnerCache{cache: lru.New(size)}
}

func keyOf(id Identity) absentKey {
	return absentKey{group: id.Group, kind: id.Kind, namespace: id.Namespace, name: id.Name, uid: id.UID}
}

// absentEntry is when coordinates were first recorded absent, and at which
// version.
type absentEntry struct {
	since   time.Time
	version string
}

// Add records that no object exists at id, keeping the time and version it
// was first recorded at.
func (c *AbsentOwnerCache) Add(id Identity) {
	k := keyOf(id)
	if _, ok := c.cache.Get(k); !ok {
		c.cache.Add(k, absentEntry{since: time.Now(), version: id.Version})
	}
}

// Has reports whether id was recorded absent.
func (c *AbsentOwnerCache) Has(id Identity) bool {
	_, ok := c.cache.Get(keyOf(id))
	return ok
}

// Since returns when id was recorded absent.
func (c *AbsentOwnerCache) Since(id Identity) (time.Time, bool) {
	v, ok := c.cache.Get(keyOf(id))
	if !ok {
		return time.Time{}, false
	}
	return v.(absentEntry).since, true
}

// SinceAtVersion is Since for an entry recorded at id's version only: the
// owner was observed deleted, or read and not found, at exactly these
// coordinates. Such an owner is gone whether or not its kind is still
// served.
func (c *AbsentOwnerCache) SinceAtVersion(id Identity) (time.Time, bool) {
	v, ok := c.cache.Get(keyOf(id))
	if !ok || v.(absentEntry).version != id.Version {
		return time.Time{}, false
	}
	return v.(absentEntry).since, true
}

// Len returns the number of entries.
func (c *AbsentOwnerCache) Len() int { return c.cache.Len() }
