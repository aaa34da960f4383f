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

import "slices"

// VirtualDelete records that a live read found no object with id's UID at id's
// coordinates. Dependents that reference the owner by exactly those
// coordinates are looked at again (their owner is absent); a virtual node that
// other dependents reference by other coordinates stays, under the next of
// those coordinates, to be verified in turn. It reports whether the node stays
// to be verified under other coordinates: the caller looks at it again after a
// backoff, so that a node whose dependents disagree on its coordinates does
// not spin.
func (g *Graph) VirtualDelete(id Identity, sink Sink) (retry bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodeOf(id.UID)
	if !ok {
		return false
	}
	if !n.has(flagObserved) {
		matching, mismatching := g.partitionDependents(n, id)
		if len(mismatching) > 0 {
			// Some dependents name this owner by other coordinates: keep it.
			g.lookAgainAtMatching(matching, id, sink)
			if !n.identity().Matches(id) {
				return false // verified coordinates that were not the node's
			}
			alt, ok := nextIdentity(mismatching, id)
			if !ok {
				return false
			}
			k := g.kindFor(alt.Group, alt.Version, alt.Kind)
			n.kind, n.namespace, n.name = k, namespaceOf(alt.Namespace), alt.Name
			return true
		}
	} else if !n.identity().Matches(id) {
		// The object exists under other coordinates: only the references
		// by the verified ones are dangling.
		matching, _ := g.partitionDependents(n, id)
		g.lookAgainAtMatching(matching, id, sink)
		return false
	}
	g.drop(n, id, sink)
	return false
}

func (g *Graph) lookAgainAtMatching(matching []*Node, id Identity, sink Sink) {
	if len(matching) == 0 {
		return
	}
	g.absent.Add(id)
	for _, dep := range matching {
		sink.AttemptToDelete(dep)
	}
}

// partitionDependents splits n's dependents into those with a reference to
// n's UID that matches id's coordinates and those with one that does not (a
// dependent with both is in both).
func (g *Graph) partitionDependents(n *Node, id Identity) (matching, mismatching []*Node) {
	ns := namespaceOf(id.Namespace)
	n.eachDependent(func(dep *Node) {
		match, mismatch := false, false
		if ns != clusterScoped && dep.namespace != ns {
			mismatch = true
		} else {
			for _, o := range dep.owners() {
				if o.uid != n.uid {
					continue
				}
				if o.Name == id.Name && o.Kind.gk.kind == id.Kind && o.Kind.gk.group == id.Group {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			mismatching = append(mismatching, dep)
		}
	})
	return matching, mismatching
}

// nextIdentity picks, among the coordinates dependents use for id's UID
// other than id's own, the first that follows id in a fixed order, or the
// first of all when none follows: verifying candidates one after the other
// this way tries every one of them in turn, however many there are.
func nextIdentity(deps []*Node, id Identity) (Identity, bool) {
	var candidates []Identity
	key := uidKeyOf(id.UID)
	for _, dep := range deps {
		for _, o := range dep.owners() {
			if o.uid != key {
				continue
			}
			cand := Identity{Group: o.Kind.gk.group, Version: o.Kind.version, Kind: o.Kind.gk.kind, Namespace: dep.namespace.Value(), Name: o.Name, UID: id.UID}
			if id.Namespace == "" && cand.Group == id.Group && cand.Kind == id.Kind {
				// This kind was just read cluster-scoped.
				cand.Namespace = ""
			}
			if !cand.Matches(id) {
				candidates = append(candidates, cand)
			}
		}
	}
	if len(candidates) == 0 {
		return Identity{}, false
	}
	slices.SortFunc(candidates, compareIdentity)
	for _, c := range candidates {
		if compareIdentity(c, id) > 0 {
			return c, true
		}
	}
	return candidates[0], true
}

func compareIdentity(a, b Identity) int {
	for _, p := range [][2]string{{a.Group, b.Group}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}, {a.Version, b.Version}} {
		switch {
		case p[0] < p[1]:
			return -1
		case p[0] > p[1]:
			return 1
		}
	}
	return 0
}
