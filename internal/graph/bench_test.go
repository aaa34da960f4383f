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
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The benchmarks run against a graph of a million nodes shaped like a
// cluster: owners (ReplicaSets) with ten dependents (Pods) each. Run them
// with a fixed iteration count, as `make bench` does:
//
//	go test ./internal/graph -run '^$' -bench 'Insert|Update|Observe|Remove' -benchmem -benchtime 20000x
//	go test ./internal/graph -run '^$' -bench BytesPerNode -benchtime 1x

const (
	benchNodes     = 1_000_000
	benchFanOut    = 10
	benchNamespace = "bench"
)

type discard struct{}

func (discard) AttemptToDelete(*Node)                    {}
func (discard) AttemptToOrphan(*Node)                    {}
func (discard) InvalidOwnerNamespace(Identity, Identity) {}
func (discard) DeletionObserved(Identity, []OwnerRef)    {}
func (discard) ReferenceRemoved(Identity, OwnerRef)      {}

func ownerObject(i int) *Object {
	return &Object{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: benchNamespace,
		Name: "rs-" + strconv.Itoa(i), UID: benchUID(i, 0)}
}

// benchUID returns a UID unique to owner i and, for j > 0, its dependent j.
func benchUID(i, j int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", j, i))
}

func podObject(owner *Object, j int) *Object {
	yes := true
	i, _ := strconv.Atoi(strings.TrimPrefix(owner.Name, "rs-"))
	return &Object{Version: "v1", Kind: "Pod", Namespace: benchNamespace,
		Name: owner.Name + "-" + strconv.Itoa(j), UID: benchUID(i, j+1),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name, UID: owner.UID, Controller: &yes, BlockOwnerDeletion: &yes}}}
}

// buildGraph observes owners and their dependents until the graph has n
// nodes, and returns the owners.
func buildGraph(tb testing.TB, n int) (*Graph, []*Object) {
	tb.Helper()
	g := New(4096)
	var owners []*Object
	for i := 0; g.Len() < n; i++ {
		o := ownerObject(i)
		g.Observe(o, discard{})
		owners = append(owners, o)
		for j := 0; j < benchFanOut && g.Len() < n; j++ {
			g.Observe(podObject(o, j), discard{})
		}
	}
	return g, owners
}

// BenchmarkInsert observes new dependents of existing owners.
func BenchmarkInsert(b *testing.B) {
	g, owners := buildGraph(b, benchNodes)
	objs := make([]*Object, b.N)
	for i := range objs {
		objs[i] = podObject(owners[i%len(owners)], benchFanOut+i/len(owners))
	}
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Observe(objs[i], discard{})
	}
}

// BenchmarkUpdateOwnerReferences changes a dependent's owner reference (a
// new blockOwnerDeletion value, then another owner), the path an update of
// metadata.ownerReferences takes.
func BenchmarkUpdateOwnerReferences(b *testing.B) {
	g, owners := buildGraph(b, benchNodes)
	objs := make([]*Object, b.N)
	for i := range objs {
		o := podObject(owners[i%len(owners)], i/len(owners)%benchFanOut)
		no := false
		o.OwnerReferences[0].BlockOwnerDeletion = &no
		if i%2 == 1 {
			next := owners[(i+1)%len(owners)]
			o.OwnerReferences[0].Name, o.OwnerReferences[0].UID = next.Name, next.UID
		}
		objs[i] = o
	}
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Observe(objs[i], discard{})
	}
}

// BenchmarkObserveUnchanged is the most common event: an update (status,
// labels) that leaves owner references and finalizers alone.
func BenchmarkObserveUnchanged(b *testing.B) {
	g, owners := buildGraph(b, benchNodes)
	objs := make([]*Object, 0, len(owners)*benchFanOut)
	for _, o := range owners {
		for j := 0; j < benchFanOut; j++ {
			objs = append(objs, podObject(o, j))
		}
	}
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Observe(objs[i%len(objs)], discard{})
	}
}

// BenchmarkRemoveOwnerWithDependents removes an owner: its ten dependents
// are unlinked and queued, and it is remembered as absent.
func BenchmarkRemoveOwnerWithDependents(b *testing.B) {
	g, owners := buildGraph(b, benchNodes)
	if b.N > len(owners) {
		b.Fatalf("at most %d iterations: use -benchtime Nx", len(owners))
	}
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.ObserveDeleted(&Object{Group: "apps", Kind: "ReplicaSet", Namespace: benchNamespace, Name: owners[i].Name}, discard{})
	}
}

// BenchmarkBytesPerNode reports the graph's own heap per node (the strings
// it shares with the cache excluded: they are allocated by the test here, as
// the cache would).
func BenchmarkBytesPerNode(b *testing.B) {
	for i := 0; i < b.N; i++ {
		objs := make([]*Object, 0, benchNodes)
		for o := 0; len(objs) < benchNodes; o++ {
			owner := ownerObject(o)
			objs = append(objs, owner)
			for j := 0; j < benchFanOut && len(objs) < benchNodes; j++ {
				objs = append(objs, podObject(owner, j))
			}
		}
		before := heapInUse()
		g := New(4096)
		for _, o := range objs {
			g.Observe(o, discard{})
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/float64(g.Len()), "bytes/node")
		runtime.KeepAlive(objs)
		runtime.KeepAlive(g)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
