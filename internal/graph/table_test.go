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
	"math/rand/v2"
	"strconv"
	"testing"

	k8stypes "k8s.io/apimachinery/pkg/types"
)

// The tables agree with a Go map through random inserts and removals,
// growing and shrinking, with colliding hashes.
func TestNodeTablesAgreeWithAMap(t *testing.T) {
	for _, fold := range []func(uint64) uint64{
		nil,
		// Few distinct hashes: long probe sequences.
		func(h uint64) uint64 { return h % 3 },
		// In the last slots: probe sequences that wrap around.
		func(h uint64) uint64 { return ^(h % 3) },
	} {
		uids := newUIDTable()
		names := newNameTable()
		uids.fold, names.fold = fold, fold
		want := make(map[uidKey]*Node)
		rng := rand.New(rand.NewPCG(1, 2))
		ns := namespaceOf("ns")
		for step := 0; step < 20000; step++ {
			i := rng.IntN(500)
			k := uidKeyOf(k8stypes.UID("uid-" + strconv.Itoa(i)))
			if n, ok := want[k]; ok && rng.IntN(2) == 0 {
				if !uids.remove(n) || !names.remove(n) {
					t.Fatalf("step %d: remove of a present node reported absent", step)
				}
				delete(want, k)
			} else if !ok {
				n := &Node{uid: k, namespace: ns, name: "obj-" + strconv.Itoa(i)}
				uids.insert(n)
				names.set(n)
				want[k] = n
			}
			if step%97 == 0 {
				if uids.count != len(want) || names.count != len(want) {
					t.Fatalf("step %d: tables count %d and %d, want %d", step, uids.count, names.count, len(want))
				}
				for j := 0; j < 500; j++ {
					k := uidKeyOf(k8stypes.UID("uid-" + strconv.Itoa(j)))
					n, _ := uids.get(k)
					byName := names.get(ns, "obj-"+strconv.Itoa(j))
					if n != want[k] || byName != want[k] {
						t.Fatalf("step %d: uid-%d found %p by UID and %p by name, want %p", step, j, n, byName, want[k])
					}
				}
			}
		}
		for _, n := range want {
			uids.remove(n)
			names.remove(n)
		}
		if len(uids.slots) != minTableSize || len(names.slots) != minTableSize {
			t.Errorf("emptied tables keep %d and %d slots, want %d", len(uids.slots), len(names.slots), minTableSize)
		}
	}
}
