package monitor

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
)

// BenchmarkStoreAndGraph holds a million watched objects as a monitor does:
// each goes through the cache's transform into an informer store (an
// indexer keyed by namespace/name, as the informer's) and is observed into
// the graph. It reports the heap in use per object and in total, for the
// store holding Compact objects and, for comparison, PartialObjectMetadata
// trimmed as the transform did before. Run it with a fixed iteration count,
// as `make bench` does:
//
//	go test ./internal/monitor -run '^$' -bench StoreAndGraph -benchtime 1x
//
// The objects are ConfigMaps of the memory workload's shape: spread over
// 100 namespaces, a quarter of them owned by one of a thousand Secrets.
func BenchmarkStoreAndGraph(b *testing.B) {
	const objects = 1_000_000
	for _, bc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"Compact", Transform},
		{"PartialObjectMetadata", trimmedMetadata},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				before := heapInUse()
				g := graph.New(4096)
				store := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil)
				m := &monitor{res: discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
					Kind: "ConfigMap", Namespaced: true}}
				m.gen, _ = g.StartMonitor(m.res.GroupKind())
				owners := &monitor{res: discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
					Kind: "Secret", Namespaced: true}}
				owners.gen, _ = g.StartMonitor(owners.res.GroupKind())
				s := &Set{opts: Options{Graph: g, Sink: discardSink{}}}
				for j := 0; j < 1000; j++ {
					o, _ := bc.transform(benchOwner(j))
					if err := store.Add(o); err != nil {
						b.Fatal(err)
					}
					owners.handle(s, o, false)
				}
				for j := 0; j < objects; j++ {
					o, _ := bc.transform(benchObject(j))
					if err := store.Add(o); err != nil {
						b.Fatal(err)
					}
					m.handle(s, o, false)
				}
				used := heapInUse() - before
				b.ReportMetric(float64(used)/objects, "bytes/object")
				b.ReportMetric(float64(used)/(1<<20), "MiB")
				runtime.KeepAlive(store)
				runtime.KeepAlive(g)
			}
		})
	}
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

// trimmedMetadata is the cache's transform before Compact: the
// PartialObjectMetadata trimmed to what the collector reads, its repeated
// strings interned.
func trimmedMetadata(in any) (any, error) {
	o := in.(*metav1.PartialObjectMetadata)
	o.ObjectMeta = metav1.ObjectMeta{
		Name: o.Name, Namespace: intern(o.Namespace), UID: o.UID, ResourceVersion: o.ResourceVersion,
		DeletionTimestamp: o.DeletionTimestamp, Finalizers: o.Finalizers, OwnerReferences: o.OwnerReferences,
	}
	o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
	for i := range o.OwnerReferences {
		r := &o.OwnerReferences[i]
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
	}
	return o, nil
}

// BenchmarkRelist relists a million stored objects, none of which changed:
// the new list is held beside the store until it replaces it, as the
// reflector's temporary store holds it. It reports the heap the relist adds
// per object while both are held, with the informer's transform (which
// hands back the stored object of the same version) and with Transform
// alone.
//
//	go test ./internal/monitor -run '^$' -bench Relist -benchtime 1x
func BenchmarkRelist(b *testing.B) {
	const objects = 1_000_000
	for _, bc := range []struct {
		name  string
		dedup bool
	}{{"StoredIfUnchanged", true}, {"TransformOnly", false}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				store := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil)
				for j := 0; j < objects; j++ {
					o, _ := Transform(benchObject(j))
					if err := store.Add(o); err != nil {
						b.Fatal(err)
					}
				}
				transform := Transform
				if bc.dedup {
					transform = storedIfUnchanged(Transform, store, func() bool { return true })
				}
				before := heapInUse()
				relisted := make([]any, 0, objects)
				for j := 0; j < objects; j++ {
					o, _ := transform(benchObject(j))
					relisted = append(relisted, o)
				}
				used := heapInUse() - before
				b.ReportMetric(float64(used)/objects, "bytes/object")
				runtime.KeepAlive(relisted)
				runtime.KeepAlive(store)
			}
		})
	}
}
