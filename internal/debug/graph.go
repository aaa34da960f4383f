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

// Package debug serves the ownership graph for inspection, on the manager's
// metrics server and behind its authentication and authorization (the graph
// names every object in the cluster).
//
// GET /debug/graph returns Graphviz DOT in the layout of the upstream
// collector's /graph endpoint: one vertex per object (label, group, version,
// kind, namespace, name, uid, missing, beingDeleted, deletingDependents,
// virtual) and one edge from each dependent to each of its owners. Repeat
// ?uid=<uid> to keep only the objects connected to those, owners and
// dependents transitively. Add ?format=json for JSON.
package debug

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/graph"
)

// GraphPath is where the graph is served.
const GraphPath = "/debug/graph"

// GraphHandler serves g.
func GraphHandler(g *graph.Graph) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		var uids []types.UID
		for _, u := range r.URL.Query()["uid"] {
			uids = append(uids, types.UID(u))
		}
		nodes := g.Dump(uids...)
		slices.SortFunc(nodes, func(a, b graph.DumpNode) int { return cmp.Compare(a.Identity.UID, b.Identity.UID) })
		switch format := r.URL.Query().Get("format"); format {
		case "", "dot":
			w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
			_ = WriteDOT(w, nodes)
		case "json":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(toJSON(nodes))
		default:
			http.Error(w, fmt.Sprintf("unknown format %q: use dot or json", format), http.StatusBadRequest)
		}
	})
}

// WriteDOT writes nodes as a Graphviz digraph.
func WriteDOT(w io.Writer, nodes []graph.DumpNode) error {
	var b strings.Builder
	b.WriteString("strict digraph full {\n")
	if len(nodes) > 0 {
		b.WriteString("  // Node definitions.\n")
		for _, n := range nodes {
			writeVertex(&b, n)
		}
	}
	var edges []string
	for _, n := range nodes {
		for _, o := range n.Owners {
			edges = append(edges, fmt.Sprintf("  %q -> %q;\n", n.Identity.UID, o.UID()))
		}
	}
	if len(edges) > 0 {
		b.WriteString("  // Edge definitions.\n")
		for _, e := range edges {
			b.WriteString(e)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeVertex(b *strings.Builder, n graph.DumpNode) {
	id := n.Identity
	kind := id.Kind + "." + id.Version
	if id.Group != "" {
		kind += "." + id.Group
	}
	label := fmt.Sprintf("uid=%s\nnamespace=%s\n%s/%s\n", id.UID, id.Namespace, kind, id.Name)
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{n.BeingDeleted, "beingDeleted"}, {n.DeletingDependents, "deletingDependents"}, {n.Virtual, "virtual"}, {n.MissingFromGraph, "missingFromGraph"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		label += strings.Join(flags, ",") + "\n"
	}
	fmt.Fprintf(b, "  %q [\n", id.UID)
	for _, kv := range [][2]string{
		{"label", label},
		{"group", id.Group},
		{"version", id.Version},
		{"kind", id.Kind},
		{"namespace", id.Namespace},
		{"name", id.Name},
		{"uid", string(id.UID)},
		{"missing", fmt.Sprint(n.MissingFromGraph)},
		{"beingDeleted", fmt.Sprint(n.BeingDeleted)},
		{"deletingDependents", fmt.Sprint(n.DeletingDependents)},
		{"virtual", fmt.Sprint(n.Virtual)},
	} {
		fmt.Fprintf(b, "    %s=%q\n", kv[0], kv[1])
	}
	b.WriteString("  ];\n")
}

// JSONGraph is the JSON form of the graph.
type JSONGraph struct {
	Nodes []JSONNode `json:"nodes"`
}

// JSONNode is one object of the graph.
type JSONNode struct {
	UID                types.UID   `json:"uid"`
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Namespace          string      `json:"namespace,omitempty"`
	Name               string      `json:"name"`
	Virtual            bool        `json:"virtual,omitempty"`
	MissingFromGraph   bool        `json:"missingFromGraph,omitempty"`
	BeingDeleted       bool        `json:"beingDeleted,omitempty"`
	DeletingDependents bool        `json:"deletingDependents,omitempty"`
	Orphaning          bool        `json:"orphaning,omitempty"`
	Owners             []JSONOwner `json:"owners,omitempty"`
}

// JSONOwner is one owner reference of a node.
type JSONOwner struct {
	UID                types.UID `json:"uid"`
	APIVersion         string    `json:"apiVersion"`
	Kind               string    `json:"kind"`
	Name               string    `json:"name"`
	BlockOwnerDeletion bool      `json:"blockOwnerDeletion,omitempty"`
}

func toJSON(nodes []graph.DumpNode) JSONGraph {
	out := JSONGraph{Nodes: make([]JSONNode, 0, len(nodes))}
	for _, n := range nodes {
		j := JSONNode{
			UID: n.Identity.UID, APIVersion: n.Identity.APIVersion(), Kind: n.Identity.Kind,
			Namespace: n.Identity.Namespace, Name: n.Identity.Name,
			Virtual: n.Virtual, MissingFromGraph: n.MissingFromGraph, BeingDeleted: n.BeingDeleted,
			DeletingDependents: n.DeletingDependents, Orphaning: n.Orphaning,
		}
		for _, o := range n.Owners {
			j.Owners = append(j.Owners, JSONOwner{UID: o.UID(), APIVersion: o.Kind.APIVersion(), Kind: o.Kind.GroupKind().Kind, Name: o.Name, BlockOwnerDeletion: o.Block})
		}
		out.Nodes = append(out.Nodes, j)
	}
	return out
}
