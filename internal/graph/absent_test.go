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
	"testing"
	"time"
)

func TestAbsentOwnerCacheMatchesVersionsOnlyWhenAsked(t *testing.T) {
	c := NewAbsentOwnerCache(10)
	v1 := Identity{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "ns", Name: "w", UID: "u"}
	v2 := v1
	v2.Version = "v2"
	c.Add(v1)
	first, _ := c.Since(v1)
	c.Add(v2) // the same coordinates at another version: the first record stays
	clusterScoped := v1
	clusterScoped.Namespace = ""
	otherUID := v1
	otherUID.UID = "other"
	for _, tc := range []struct {
		name   string
		lookup func(Identity) (time.Time, bool)
		id     Identity
		want   bool
	}{
		{"any version: the recorded one", c.Since, v1, true},
		{"any version: another one", c.Since, v2, true},
		{"exact version: the recorded one", c.SinceAtVersion, v1, true},
		{"exact version: another one", c.SinceAtVersion, v2, false},
		{"another UID", c.Since, otherUID, false},
		{"another namespace", c.SinceAtVersion, clusterScoped, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			since, ok := tc.lookup(tc.id)
			if ok != tc.want {
				t.Fatalf("found %v, want %v", ok, tc.want)
			}
			if ok && !since.Equal(first) {
				t.Fatalf("since %v, want the time first recorded %v", since, first)
			}
		})
	}
}
