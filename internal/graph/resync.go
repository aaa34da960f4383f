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

import "k8s.io/apimachinery/pkg/runtime/schema"

// Resync reports to sink all the work the graph holds, as if every node had
// just been observed: virtual nodes to verify, owners deleting their
// dependents (and those dependents), owners to orphan, and objects with an
// owner that is gone from the graph, that is virtual, or that does not match
// the coordinates the object names it by. A collector that starts receiving
// work (a replica that becomes the leader) calls it once, after which the
// graph's own reports keep it current.
func (g *Graph) Resync(sink Sink) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	g.uids.each(func(n *Node) {
		if !n.has(flagObserved) {
			sink.AttemptToDelete(n)
			return
		}
		if n.has(flagOrphaning) {
			sink.AttemptToOrphan(n)
		}
		if n.has(flagDeletingDependents) {
			sink.AttemptToDelete(n)
			n.eachDependent(sink.AttemptToDelete)
		}
		if g.needsLook(n, sink) {
			sink.AttemptToDelete(n)
		}
	})
}

// needsLook reports whether an observed node has an owner reference the
// graph cannot vouch for, reporting references to owners observed in another
// namespace on the way.
func (g *Graph) needsLook(n *Node, sink Sink) bool {
	look := false
	for i, o := range n.owners() {
		owner, ok := g.uids.get(o.uid)
		switch {
		case !ok:
			look = true
		case !owner.has(flagObserved):
		case owner.namespace != clusterScoped && owner.namespace != n.namespace:
			if !containsOwner(n.owners()[:i], o.uid) {
				sink.InvalidOwnerNamespace(n.identity(), owner.identity())
			}
			look = true
		case !owner.kind.sameGroupKind(o.Kind) || owner.name != o.Name:
			look = true
		}
	}
	return look
}

// ResyncKind reports the virtual nodes of a kind to sink: a monitor that has
// just listed the kind calls it, so that nodes the list did not turn into
// observed ones (objects that went away while the kind was not watched or
// not served) are verified now rather than after their retry backoff.
func (g *Graph) ResyncKind(key schema.GroupKind, sink Sink) int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	gk, ok := g.groupKinds[key]
	if !ok || g.virtual == 0 {
		return 0
	}
	count := 0
	g.uids.each(func(n *Node) {
		if !n.has(flagObserved) && n.kind.gk == gk {
			sink.AttemptToDelete(n)
			count++
		}
	})
	return count
}
