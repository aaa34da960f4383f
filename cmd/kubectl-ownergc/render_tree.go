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

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// renderTree writes t as a table, the tree drawn in the NAME column, like
// kubectl-tree. Colours (p) go only into the last column, so that they do
// not upset the alignment.
func renderTree(w io.Writer, t *Tree, now time.Time, p painter) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tREF\tAGE\tSTATUS")
	var walk func(n *Node, prefix, branch string, depth int)
	walk = func(n *Node, prefix, branch string, depth int) {
		status := nodeStatusText(n, t.Direction, now)
		color := ""
		switch {
		case n.Status != "":
			color = red
		case n.DeletionTimestamp != nil:
			color = yellow
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\n", display(n.Object.Namespace), prefix+branch, kindName(n.Object), refText(n.Reference),
			age(n, now), p.paint(color, escapeText(status)))
		for i, c := range n.Children {
			next, childPrefix := "├─", prefix
			if i == len(n.Children)-1 {
				next = "└─"
			}
			if depth > 0 {
				if branch == "└─" {
					childPrefix += "  "
				} else {
					childPrefix += "│ "
				}
			}
			walk(c, childPrefix, next, depth+1)
		}
	}
	walk(t.Root, "", "", 0)
	return tw.Flush()
}

// kindName writes Kind/name, each quoted if it holds characters that are
// not printable.
func kindName(o objectRef) string {
	return display(o.Kind) + "/" + display(o.Name)
}

// refText describes the reference that links a node to its parent.
func refText(r *Reference) string {
	if r == nil {
		return ""
	}
	var parts []string
	if r.Controller {
		parts = append(parts, "controller")
	}
	if r.BlockOwnerDeletion {
		parts = append(parts, "blocking")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func age(n *Node, now time.Time) string {
	if n.CreationTimestamp == nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(n.CreationTimestamp.Time))
}

// nodeStatusText says in a line what state the node is in.
func nodeStatusText(n *Node, direction string, now time.Time) string {
	if n.Status != "" {
		return n.Status + ": " + n.Reason
	}
	var parts []string
	if d := n.DeletionTimestamp; d != nil {
		s := "Deleting for " + duration.HumanDuration(now.Sub(d.Time))
		switch {
		case n.Foreground() && direction == DirectionDependents:
			s += fmt.Sprintf(" (foreground: waits for %s)", plural(n.BlockingChildren(), "blocking dependent", "blocking dependents"))
		case n.Foreground():
			s += " (foreground: waits for its blocking dependents)"
		case n.Orphaning():
			s += " (orphan: its dependents are orphaned first)"
		}
		parts = append(parts, s)
	}
	if len(n.Finalizers) > 0 {
		parts = append(parts, "finalizers: "+strings.Join(n.Finalizers, ", "))
	}
	if n.OtherOwners > 0 {
		parts = append(parts, plural(n.OtherOwners, "other owner", "other owners"))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
