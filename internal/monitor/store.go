package monitor

import (
	"unique"

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
// lists, while the initial events arrive), held there in the form its
// transformer gives (Transformer): a Compact, or for a relist, one that
// only names an object the graph holds at the same resourceVersion.
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
	c, ok := asCompact(obj)
	if !ok {
		return
	}
	st.m.mu.Lock()
	defer st.m.mu.Unlock()
	if st.m.stopped {
		return
	}
	st.m.observe(st.s, c, deleted)
}

// Replace observes a complete list: every object in it, then the deletion
// of every observed object of the kind that it does not contain (deleted
// while the watch was down, or while no monitor watched the kind). The first
// list makes the monitor synced.
func (st *store) Replace(list []any, _ string) error {
	m, s := st.m, st.s
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	listing := graph.NewListing(len(list))
	for _, item := range list {
		c, ok := asCompact(item)
		if !ok {
			continue
		}
		listing.Add(c.GetNamespace(), c.name)
		if c.more != &unchangedMore {
			m.observe(s, c, false)
		}
	}
	var gone []*Compact
	s.opts.Graph.Unlisted(m.res.GroupKind(), listing, func(ns, name string, uid types.UID) {
		gone = append(gone, &Compact{name: name, uid: uid, namespace: unique.Make(ns)})
	})
	for _, c := range gone {
		m.observe(s, c, true)
	}
	m.mu.Unlock()
	m.listed(s)
	return nil
}

// Transformer is the transform of the reflector's temporary store: the
// Compact form of a listed object, or, once the monitor has synced, for an
// object the graph holds at the same UID and resourceVersion (most of a
// relist after a watch expired), a Compact that only names it (namespace and
// the node's name string), so that a relist holds no second copy of the
// objects.
func (st *store) Transformer() toolscache.TransformFunc {
	return func(in any) (any, error) {
		o, ok := in.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, nil
		}
		if st.m.synced.Load() {
			if name, same := st.s.opts.Graph.Unchanged(st.m.res.GroupKind(), o.Namespace, o.Name, o.UID, o.ResourceVersion); same {
				return &Compact{name: name, namespace: unique.Make(o.Namespace), more: &unchangedMore}, nil
			}
		}
		return compact(o), nil
	}
}

// unchangedMore marks a Compact that only names an object the graph holds
// at the listed version.
var unchangedMore compactMore

// asCompact returns the Compact form of what the reflector handed over.
func asCompact(obj any) (*Compact, bool) {
	switch o := obj.(type) {
	case *Compact:
		return o, true
	case *metav1.PartialObjectMetadata:
		return compact(o), true
	case toolscache.DeletedFinalStateUnknown:
		return asCompact(o.Obj)
	}
	return nil, false
}
