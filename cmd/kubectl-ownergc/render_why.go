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
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/ownergc/ownergc/internal/explain"
)

// graphNotes say what each graph state means.
var graphNotes = map[string]string{
	explain.StateObserved:   "the collector watches its kind and has observed it",
	explain.StateVirtual:    "objects name it as their owner; the collector has not observed it",
	explain.StateUnverified: "it was observed, then its kind stopped being served: it cannot be verified until it is served again",
	explain.StateIgnored:    "its resource is ignored by the GCPolicy",
	explain.StateNotInGraph: "the collector does not know it",
	GraphUnknown:            "not known without the manager",
}

// renderWhy writes an explanation for people.
func renderWhy(w io.Writer, r *WhyResult, now time.Time, p painter) error {
	var b strings.Builder
	line := func(label, value string) { fmt.Fprintf(&b, "%-14s%s\n", label+":", value) }
	o := r.Object
	name := display(o.Kind) + " " + display(o.Name)
	if o.Namespace != "" {
		name = display(o.Kind) + " " + display(o.Namespace) + "/" + display(o.Name)
	}
	if o.UID != "" {
		name += " (uid " + display(string(o.UID)) + ")"
	}
	line("Object", p.paint(bold, name))
	if r.Source == SourceManager {
		line("Explained by", "the ownergc manager ("+escapeText(r.Manager)+")")
	} else {
		line("Explained by", p.paint(yellow, "API reads alone, since the ownergc manager could not answer: "+escapeText(r.ManagerError)))
	}
	graph := escapeText(r.Graph)
	if note := graphNotes[r.Graph]; note != "" {
		graph += " (" + note + ")"
	}
	line("Graph", graph)
	line("Deletion", p.paint(yellowIf(r.Deletion != nil), deletionText(r.Deletion, now)))
	if r.Expiry != "" {
		line("Expiry", escapeText(r.Expiry))
	}

	if len(r.Owners) == 0 && r.HiddenOwners == 0 {
		line("Owners", "none")
	} else {
		line("Owners", fmt.Sprint(len(r.Owners)+r.HiddenOwners))
		for _, ow := range r.Owners {
			status := escapeText(ow.Status + ": " + ow.Reason)
			if ow.Status != explain.OwnerSolid {
				status = p.paint(red, status)
			}
			fmt.Fprintf(&b, "  %s%s: %s\n", kindName(ow.Object), flagsText(ow.Controller, ow.BlockOwnerDeletion), status)
		}
		for _, ow := range r.UnclassifiedOwners {
			fmt.Fprintf(&b, "  %s: not classified for you: the manager names only the owners it can tell you may get\n", kindName(ow))
		}
		if n := r.HiddenOwners - len(r.UnclassifiedOwners); n > 0 {
			fmt.Fprintf(&b, "  and %s you may not read\n", plural(n, "owner", "owners"))
		}
	}

	if len(r.Dependents) == 0 && r.HiddenDependents == 0 {
		line("Dependents", "none")
	} else {
		blocking := 0
		for _, d := range r.Dependents {
			if d.Blocking {
				blocking++
			}
		}
		line("Dependents", fmt.Sprintf("%d (%d blocking shown)", len(r.Dependents)+r.HiddenDependents, blocking))
		for _, d := range r.Dependents {
			s := "  " + kindName(d.Object) + flagsText(false, d.Blocking)
			if d.Remains != "" {
				s += ": remains: " + p.paint(yellow, escapeText(d.Remains))
			}
			b.WriteString(s + "\n")
		}
		if r.HiddenDependents > 0 {
			fmt.Fprintf(&b, "  and %d more you may not read (or beyond the first ones)\n", r.HiddenDependents)
		}
	}

	if r.Source == SourceManager {
		line("Queue", queueText(r.Queue))
	} else {
		line("Queue", "not known without the manager")
	}
	if nc := r.NotChecked; nc != nil && nc.Message != "" {
		line("Not checked", p.paint(yellow, escapeText(nc.Message)))
	}
	line("Decision", p.paint(bold, escapeText(r.Decision)))
	if len(r.Unknown) > 0 {
		b.WriteString("Not known without the manager:\n")
		for _, u := range r.Unknown {
			b.WriteString("  - " + escapeText(u) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yellowIf(on bool) string {
	if on {
		return yellow
	}
	return ""
}

func deletionText(d *explain.Deletion, now time.Time) string {
	if d == nil {
		return "not being deleted"
	}
	s := "being deleted"
	if d.Since != nil {
		s += " for " + duration.HumanDuration(now.Sub(d.Since.Time)) + " (since " + d.Since.UTC().Format(time.RFC3339) + ")"
	}
	switch {
	case d.Foreground:
		s += ", in the foreground: it waits for its blocking dependents"
	case d.Orphan:
		s += ", with the orphan policy: its dependents are orphaned first"
	}
	if len(d.Finalizers) > 0 {
		s += "; finalizers: " + strings.Join(d.Finalizers, ", ")
	}
	return escapeText(s)
}

// flagsText writes a reference's flags as " [controller, blocking]".
func flagsText(controller, blocking bool) string {
	var f []string
	if controller {
		f = append(f, "controller")
	}
	if blocking {
		f = append(f, "blocking")
	}
	if len(f) == 0 {
		return ""
	}
	return " [" + strings.Join(f, ", ") + "]"
}

func queueText(q explain.Queue) string {
	if q.Failures == 0 && q.Retries == 0 && q.LastError == "" {
		return "no failed attempts"
	}
	var parts []string
	if q.Failures > 0 {
		parts = append(parts, plural(q.Failures, "failed attempt", "failed attempts")+" in a row")
	}
	if q.LastError != "" {
		parts = append(parts, "last error: "+escapeText(q.LastError))
	}
	if q.Retries > 0 {
		parts = append(parts, "requeued "+plural(q.Retries, "time", "times")+" with backoff")
	}
	return strings.Join(parts, "; ")
}
