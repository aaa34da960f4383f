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

	"k8s.io/apimachinery/pkg/types"
)

// Every UID comes back exactly from its key, keys of different UIDs
// differ, and a canonical UUID costs 16 bytes.
func TestUIDKeys(t *testing.T) {
	uids := []types.UID{
		"6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		"00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"6BA7B810-9DAD-11D1-80B4-00C04FD430C8", // upper case: not canonical
		"6ba7b810-9dad-11d1-80b4-00c04fd430c",  // too short
		"6ba7b810x9dad-11d1-80b4-00c04fd430c8", // no dash
		"6ba7b810-9dad-11d1-80b4-00c04fd430g8", // not hex
		"",
		"a",
		"0123456789abcdef",        // 16 bytes, like a key
		"0123456789abcdef\xff",    // 16 bytes and the escape byte
		"0123456789abcdefghi\xff", // longer, ending with the escape byte
		"rs-1",
	}
	seen := make(map[uidKey]types.UID)
	for _, u := range uids {
		k := uidKeyOf(u)
		if got := k.UID(); got != u {
			t.Errorf("uidKeyOf(%q).UID() = %q", u, got)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%q and %q have the same key %q", u, other, k)
		}
		seen[k] = u
		for _, v := range uids {
			if got, want := k.is(v), u == v; got != want {
				t.Errorf("key of %q is(%q) = %v, want %v", u, v, got, want)
			}
		}
	}
	if k := uidKeyOf(uids[0]); len(k) != keyLen {
		t.Errorf("the key of a canonical UUID is %d bytes, want %d", len(k), keyLen)
	}
}

func TestNodeLookupByUIDDoesNotAllocate(t *testing.T) {
	g := New(16)
	uid := types.UID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	g.Observe(&Object{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a", UID: uid}, &recorder{})
	var found bool
	if allocs := testing.AllocsPerRun(100, func() { _, found = g.nodeOf(uid) }); allocs != 0 {
		t.Errorf("nodeOf allocated %v times per call", allocs)
	}
	if !found {
		t.Error("nodeOf did not find the node")
	}
}
