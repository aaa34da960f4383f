package monitor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ownergc/ownergc/internal/graph"
)

// store is a monitor's reflector store: the graph. The reflector hands it
// each watch event and each complete list (Replace), from its one
// goroutine; each object becomes an observation at once, so there is no
// informer store, no queue of changes and no handler between the API
// server and the graph, and each object is held once, as its node.
//
// A list arrives in the reflector's temporary store first (with streaming
// lists, one object at a time while the initial events arrive); the store's
// transformer (Transformer) observes each object as it arrives and leaves
// only its name there, so a list, the first one or a relist after a watch
// expired, never holds a second copy of the objects, and once the last
// object has arrived only the objects the list lacks remain to be removed.
type store struct {
	m *monitor
	s *Set
}

var (
	_ toolscache.ReflectorStore    = (*store)(nil)
	_ toolscache.TransformingStore = (*store)(nil)
)

// Add observes an object the watch reports added.
func (st *store) Add(obj any) error { st.observe(obj, false); return nil }

// Update observes an object the watch reports modified.
func (st *store) Update(obj any) error { st.observe(obj, false); return nil }

// Delete observes an object the watch reports deleted.
func (st *store) Delete(obj any) error { st.observe(obj, true); return nil }

// Resync does nothing: the reflector runs without a resync period.
func (st *store) Resync() error { return nil }

func (st *store) observe(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	o, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	st.m.mu.Lock()
	defer st.m.mu.Unlock()
	if st.m.stopped {
		return
	}
	st.m.observe(st.s, o, deleted)
}

// listed is what the reflector's temporary store holds of a listed object
// the graph has observed: its namespace and name.
type listed struct{ namespace, name string }

// Transformer is the transform of the reflector's temporary store: it
// observes the listed object into the graph and hands back only its name
// (a listed). An object listed and then changed before the list ends is
// observed in each state, as a watch would report it; one a failed list
// contained and the next one lacks is removed when that list completes.
func (st *store) Transformer() toolscache.TransformFunc {
	return func(in any) (any, error) {
		o, ok := in.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, nil
		}
		st.observe(o, false)
		return &listed{namespace: o.Namespace, name: o.Name}, nil
	}
}

// Replace completes a list: it observes every object in it not observed
// yet (a list that did not stream: the reflector hands it over whole), then
// the deletion of every observed object of the kind that it does not
// contain (deleted while the watch was down, or while no monitor watched
// the kind). The first list makes the monitor synced.
func (st *store) Replace(list []any, _ string) error {
	m, s := st.m, st.s
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	listing := graph.NewListing(len(list))
	for _, item := range list {
		switch o := item.(type) {
		case *listed:
			listing.Add(o.namespace, o.name)
		case *metav1.PartialObjectMetadata:
			listing.Add(o.Namespace, o.Name)
			m.observe(s, o, false)
		}
	}
	var gone []*metav1.PartialObjectMetadata
	s.opts.Graph.Unlisted(m.res.GroupKind(), listing, func(ns, name string, uid types.UID) {
		gone = append(gone, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}})
	})
	for _, o := range gone {
		m.observe(s, o, true)
	}
	m.mu.Unlock()
	m.listed(s)
	return nil
}
