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
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

func newExpiringCommand(o *options) *cobra.Command {
	var all bool
	var within time.Duration
	var output string
	cmd := &cobra.Command{
		Use:   "expiring",
		Short: "List the objects that expire, the next first: when, by what, and what ownergc does then",
		Long: `List the objects that expire — those annotated ownergc.io/ttl or
ownergc.io/expires, and those a rule of the GCPolicy's
spec.collectors.expiry selects — the next first: when each expires, by what
(the annotation and its value, or the rule's number), and what ownergc's
expiry collector does then (deletes it; would, in DryRun; never, for a
protected object or an ignored resource; nothing while expiry is not
enabled). Annotations that cannot be read are listed too: those objects do
not expire.

Everything is read from the API server with your own permissions: the
metadata of every listable resource in the namespace (-n, or the context's),
or in every namespace and every cluster-scoped resource with -A; the
GCPolicy default (get on gcpolicies: without it the rules are not known and
only the annotations are listed); and the labels of the namespaces a rule
selects by label. The resources you may not list are named on stderr.

The decision is the one ownergc's expiry collector makes (kubectl ownergc why
says it for one object); the collector acts on what it observed, so an
object changed a moment ago may be listed as it now is a moment before the
collector sees it.`,
		Example: `  kubectl ownergc expiring
  kubectl ownergc expiring -A --within 24h
  kubectl ownergc expiring -n preview -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			if within < 0 {
				return fmt.Errorf("--within %s: give a positive duration, or 0 for no bound", within)
			}
			c, err := o.clients()
			if err != nil {
				return err
			}
			ns := c.namespace
			if all {
				ns = ""
			} else if err := validNamespace("the namespace", ns); err != nil {
				return err
			}
			now := time.Now()
			l := c.expiring(cmd.Context(), ns, now, within)
			if output != "" {
				return printStructured(o.streams.Out, output, l)
			}
			for _, u := range l.Unknown {
				fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", escapeText(u))
			}
			return renderExpiring(o.streams.Out, l, all, now)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the objects of every namespace, and the cluster-scoped ones")
	cmd.Flags().DurationVar(&within, "within", 0, "List only what expires within this duration from now (and what is due already), e.g. 24h; 0: no bound")
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}

// Expiring is what `expiring` prints.
type Expiring struct {
	// Items are the objects that expire, the next first, then those
	// without a time (annotations that cannot be read, rules whose
	// namespace labels could not be read).
	Items []ExpiringItem `json:"items"`
	// Unknown lists what could not be read: resources not listed, the
	// GCPolicy.
	Unknown []string `json:"unknown,omitempty"`
}

// ExpiringItem is one object that expires.
type ExpiringItem struct {
	Object explain.Object `json:"object"`
	// Expiry is the decision model's, as data; Words says it.
	Expiry *decision.Expiry `json:"expiry"`
	Words  string           `json:"words"`
}

// expiring lists the objects of namespace ("": every namespace and the
// cluster-scoped objects) that expire within within of now (0: whenever).
func (c *clients) expiring(ctx context.Context, namespace string, now time.Time, within time.Duration) Expiring {
	var out Expiring
	c.discovery.Invalidate()
	resources, failed, err := listableResources(c.discovery)
	if err != nil {
		out.Unknown = append(out.Unknown, err.Error())
		return out
	}
	if namespace != "" {
		// The namespace's objects, and the Namespace itself.
		resources = slices.DeleteFunc(resources, func(r resourceInfo) bool { return !r.namespaced && r.gvr != namespacesGVR })
	}
	l := listAll(ctx, c.lister, resources, namespace)
	l.failed = append(failed, l.failed...)
	if inc := l.incomplete(); len(inc) > 0 {
		out.Unknown = append(out.Unknown, "objects of resources that could not be listed are missing: "+strings.Join(inc, "; "))
	}
	pv := c.readPolicy(ctx)
	if pv.policy == nil {
		out.Unknown = append(out.Unknown, "the GCPolicy is not known, so neither are its expiry rules nor whether expiry is enabled: only the annotations are listed ("+pv.unknown+")")
	}
	labels := namespaceLabeler{c: c, ctx: ctx, cache: map[string]labelsRead{}}
	for _, o := range l.objects {
		if namespace != "" && !o.namespaced && o.meta.Name != namespace {
			continue // another Namespace
		}
		if o.resource == namespacesGVR {
			labels.cache[o.meta.Name] = labelsRead{labels: o.meta.Labels}
		}
		obj := decision.ObjectOf(&o.meta, o.resource.GroupResource())
		ns := o.meta.Namespace
		e := decision.ExpiryOf(obj, pv.policy, decision.ExpiryContext{Now: now,
			NamespaceLabels: func() (map[string]string, error) { return labels.get(ns) }})
		if e == nil {
			continue
		}
		if at := e.When(); within > 0 && (at.IsZero() || at.After(now.Add(within))) {
			continue
		}
		out.Items = append(out.Items, ExpiringItem{Object: o.ref(), Expiry: e, Words: e.String()})
	}
	slices.SortFunc(out.Items, func(a, b ExpiringItem) int {
		ta, tb := a.Expiry.When(), b.Expiry.When()
		switch {
		case ta.IsZero() != tb.IsZero():
			if ta.IsZero() {
				return 1
			}
			return -1
		case !ta.Equal(tb):
			return ta.Compare(tb)
		}
		return cmp.Or(cmp.Compare(a.Object.Namespace, b.Object.Namespace), cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name))
	})
	return out
}

// labelsRead is one namespace's labels as read, or why they could not be.
type labelsRead struct {
	labels map[string]string
	err    error
}

// namespaceLabeler reads the labels of namespaces, once each, with the
// caller's permissions.
type namespaceLabeler struct {
	c     *clients
	ctx   context.Context
	cache map[string]labelsRead
}

func (n *namespaceLabeler) get(ns string) (map[string]string, error) {
	if r, ok := n.cache[ns]; ok {
		return r.labels, r.err
	}
	l, err := n.c.namespaceLabels(n.ctx, ns)
	n.cache[ns] = labelsRead{labels: l, err: err}
	return l, err
}

// namespaceLabels reads the labels of namespace ns with the caller's
// permissions.
func (c *clients) namespaceLabels(ctx context.Context, ns string) (map[string]string, error) {
	if err := validNamespace("the namespace", ns); err != nil {
		return nil, err
	}
	m, err := c.metadata.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
	switch {
	case isForbidden(err):
		return nil, fmt.Errorf("you may not get namespace %s", ns)
	case err != nil:
		return nil, err
	}
	return m.Labels, nil
}

// renderExpiring writes the list for people: one line per object.
func renderExpiring(w io.Writer, l Expiring, all bool, now time.Time) error {
	if len(l.Items) == 0 {
		_, err := fmt.Fprintln(w, "Nothing expires.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if all {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprintln(tw, "OBJECT\tEXPIRES\tIN\tBY\tOWNERGC")
	for _, it := range l.Items {
		e := it.Expiry
		if all {
			fmt.Fprintf(tw, "%s\t", display(it.Object.Namespace))
		}
		at, in := "-", "-"
		if t := e.When(); !t.IsZero() {
			at = t.UTC().Format(time.RFC3339)
			switch d := t.Sub(now); {
			case d > 0:
				in = decision.Humanize(d)
			default:
				in = "due " + decision.Humanize(-d) + " ago"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", kindName(it.Object), at, in, escapeText(byText(e)), whatText(e))
	}
	return tw.Flush()
}

// byText says what gives the time, briefly.
func byText(e *decision.Expiry) string {
	switch e.By {
	case decision.ByTTL:
		return "ttl=" + e.Value
	case decision.ByExpires:
		return "expires=" + e.Value
	case decision.ByRule:
		return fmt.Sprintf("rule %d", e.Rule)
	}
	var invalid []string
	for _, a := range e.Invalid {
		invalid = append(invalid, strings.TrimPrefix(a.Annotation, "ownergc.io/")+"="+quoted(a.Value))
	}
	return strings.Join(invalid, ", ")
}

// whatText says what the expiry collector does, briefly.
func whatText(e *decision.Expiry) string {
	switch e.State {
	case decision.ExpiryScheduled:
		return "deletes it (" + string(e.Propagation) + ")"
	case decision.ExpiryDue:
		if e.DryRun {
			return "would delete it now (DryRun)"
		}
		return "deletes it now (" + string(e.Propagation) + ")"
	case decision.ExpiryInvalid:
		return "never: the annotation cannot be read"
	case decision.ExpiryDisabled:
		if e.PolicyUnknown {
			return "nothing unless expiry is enabled (GCPolicy not read)"
		}
		return "nothing: expiry is not enabled"
	case decision.ExpiryIgnored:
		return "never: its resource is ignored"
	case decision.ExpiryProtected:
		return "never: protected"
	case decision.ExpiryDeleting:
		return "nothing: being deleted"
	case decision.ExpiryUnknown:
		return "not known: its namespace's labels could not be read"
	}
	return string(e.State)
}
