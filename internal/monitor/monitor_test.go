package monitor

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/graph"
)

// blockingSink holds the graph (and so the observation in flight) until
// released.
type blockingSink struct{ entered, release chan struct{} }

func (b *blockingSink) AttemptToDelete(*graph.Node) {
	select {
	case b.entered <- struct{}{}:
		<-b.release
	default:
	}
}
func (b *blockingSink) AttemptToOrphan(*graph.Node)                          {}
func (b *blockingSink) InvalidOwnerNamespace(graph.Identity, graph.Identity) {}
func (b *blockingSink) DeletionObserved(graph.Identity, []graph.OwnerRef)    {}
func (b *blockingSink) ReferenceRemoved(graph.Identity, graph.OwnerRef)      {}

func testMonitor(g *graph.Graph) *monitor {
	res := discovery.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	m := &monitor{res: res}
	m.gen, _ = g.StartMonitor(res.GroupKind())
	return m
}

func configMapMeta(name, uid string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), OwnerReferences: owners}}
}

// Stopping a monitor waits for the observation in flight, and nothing is
// observed after it.
func TestStopWaitsForTheObservationInFlight(t *testing.T) {
	g := graph.New(10)
	sink := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	s := &Set{opts: Options{Graph: g, Sink: sink}}
	m := testMonitor(g)

	// An object with an owner not in the graph: observing it reports the
	// virtual owner to the sink, which holds the observation.
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid"}
	go m.handle(s, configMapMeta("dep", "dep-uid", owner), false)
	<-sink.entered
	halted := make(chan struct{})
	go func() { m.halt(); close(halted) }()
	select {
	case <-halted:
		t.Fatal("halt returned while an observation was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(sink.release)
	select {
	case <-halted:
	case <-time.After(10 * time.Second):
		t.Fatal("halt did not return once the observation finished")
	}

	m.handle(s, configMapMeta("late", "late-uid"), false)
	m.handle(s, configMapMeta("dep", "dep-uid"), true)
	if g.Node("late-uid") != nil || g.Node("dep-uid") == nil {
		t.Fatal("a halted monitor changed the graph")
	}
}
