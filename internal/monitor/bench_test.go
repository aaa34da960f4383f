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

package monitor

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
)

// BenchmarkStoreAndGraph holds a million watched objects as the monitors
// do: each goes through a monitor's store (the graph) as a watch event
// would, and the graph is all that holds them. It reports the heap in use
// per object and in total. Run it with a fixed iteration count, as `make
// bench` does:
//
//	go test ./internal/monitor -run '^$' -bench StoreAndGraph -benchtime 1x
//
// The objects are ConfigMaps of the memory workload's shape: spread over
// 100 namespaces, a quarter of them owned by one of a thousand Secrets.
func BenchmarkStoreAndGraph(b *testing.B) {
	const objects = 1_000_000
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		g := graph.New(4096)
		objs, owners := benchStores(g)
		for j := 0; j < 1000; j++ {
			owners.observe(benchOwner(j), false)
		}
		for j := 0; j < objects; j++ {
			objs.observe(benchObject(j), false)
		}
		used := heapInUse() - before
		b.ReportMetric(float64(used)/objects, "bytes/object")
		b.ReportMetric(float64(used)/(1<<20), "MiB")
		runtime.KeepAlive(g)
	}
}

// benchStores returns the stores of a ConfigMap and a Secret monitor on g.
func benchStores(g *graph.Graph) (configMaps, secrets *store) {
	s := &Set{opts: Options{Graph: g, Sink: discardSink{}, Changed: func() {}}}
	m := &monitor{res: discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Kind: "ConfigMap", Namespaced: true}}
	m.gen, _ = g.StartMonitor(m.res.GroupKind())
	owners := &monitor{res: discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
		Kind: "Secret", Namespaced: true}}
	owners.gen, _ = g.StartMonitor(owners.res.GroupKind())
	return &store{m: m, s: s}, &store{m: owners, s: s}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

type discardSink struct{}

func (discardSink) AttemptToDelete(*graph.Node)                          {}
func (discardSink) AttemptToOrphan(*graph.Node)                          {}
func (discardSink) InvalidOwnerNamespace(graph.Identity, graph.Identity) {}
func (discardSink) DeletionObserved(graph.Identity, []graph.OwnerRef)    {}
func (discardSink) ReferenceRemoved(graph.Identity, graph.OwnerRef)      {}

// Every string is built anew for each object, as decoding a list does.
func benchUID(kind, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-4000-8000-%012x", i, kind, i))
}

func benchNamespace(i int) string { return "ns-" + strconv.Itoa(i%100) }

func benchOwner(i int) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%03d", i), Namespace: benchNamespace(i),
			UID: benchUID(1, i), ResourceVersion: strconv.Itoa(1_000_000 + i)}}
}

func benchObject(i int) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("obj-%07d", i), Namespace: benchNamespace(i),
			UID: benchUID(2, i), ResourceVersion: strconv.Itoa(2_000_000 + i)}}
	if i%4 == 0 {
		owner := (i / 4) % 1000
		// An owner in the object's namespace: owner i%100 == i'%100.
		owner = owner - owner%100 + i%100
		yes := true
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: fmt.Sprintf("owner-%03d", owner),
			UID: benchUID(1, owner), Controller: &yes, BlockOwnerDeletion: &yes}}
	}
	return o
}

// BenchmarkRelist relists a million objects the graph holds, none of which
// changed, as a monitor does after a watch expired: each listed object is
// observed into the graph as it arrives and only its name is kept (the
// listing), until the graph has observed the whole list. It reports the
// heap the relist adds per object while the list is held.
//
//	go test ./internal/monitor -run '^$' -bench Relist -benchtime 1x
func BenchmarkRelist(b *testing.B) {
	const objects = 1_000_000
	for i := 0; i < b.N; i++ {
		g := graph.New(4096)
		st, _ := benchStores(g)
		for j := 0; j < objects; j++ {
			st.observe(benchObject(j), false)
		}
		before := heapInUse()
		listing := graph.NewListing(0)
		for j := 0; j < objects; j++ {
			o := benchObject(j)
			listing.Add(o.Namespace, o.Name)
			st.list(o)
		}
		used := heapInUse() - before
		b.ReportMetric(float64(used)/objects, "bytes/object")
		st.replace(listing)
		if g.Len() < objects {
			b.Fatalf("the graph holds %d nodes after the relist, want at least %d", g.Len(), objects)
		}
		runtime.KeepAlive(listing)
	}
}
