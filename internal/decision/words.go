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

package decision

import (
	"fmt"
	"strings"
	"time"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// hiddenOwner stands for an owner the reader may not read.
const hiddenOwner = "(an owner you may not read)"

// String says the decision in words: what the collector does with the
// object, and why. These are the only words of a decision: /explain's,
// and `kubectl ownergc why`'s with the manager and without it. A decision
// decoded from JSON has lost what they say: use the words that came with
// it.
func (d Decision) String() string {
	deleted, removes := "will be deleted", "removes"
	if d.DryRun {
		deleted, removes = "would be deleted", "would remove"
	}
	var caveat string
	if d.PolicyUnknown && d.Action.Writes() {
		caveat = " (unless the GCPolicy, which could not be read, says otherwise)"
	}
	var s string
	switch d.Action {
	case Absent:
		s = "it does not exist"
		if d.object.Referenced {
			s += "; objects still name it as their owner, and are collected once the collector confirms it"
		}
	case Ignore:
		s = fmt.Sprintf("left alone: its resource %s is ignored ", d.object.Resource)
		switch {
		case d.PolicyUnknown:
			s += "by default (unless the GCPolicy, which could not be read, says otherwise)"
		case d.fromPolicy:
			s += "by the GCPolicy"
		default:
			s += "by default (there is no GCPolicy default)"
		}
	case WaitForDependents:
		deps := d.dependents
		s = fmt.Sprintf("being deleted in the foreground: it waits until its blocking dependents are gone (%d listed, %d hidden)",
			deps.Blocking-deps.HiddenBlocking, deps.HiddenBlocking)
	case RemoveForegroundFinalizer:
		s = "being deleted in the foreground: no blocking dependent remains, ownergc " + removes + " its foregroundDeletion finalizer" + caveat
	case Orphan:
		s = "being deleted with the orphan policy: ownergc " + removes + " it from its dependents' owner references, then its orphan finalizer" + caveat
	case WaitForFinalizers:
		s = "being deleted; nothing for the collector to do"
		if f := d.object.Finalizers; len(f) > 0 {
			s += ": it waits for its finalizers " + strings.Join(f, ", ") + ", which whoever added them must remove"
		}
	case Keep:
		switch d.Reason {
		case ReasonNoOwners:
			s = "kept: it has no owner references, and the collector deletes only objects whose owners are gone"
		case ReasonOwnerUnverifiable:
			s = "kept: owner " + d.names(OwnerUnverifiable) + " cannot be verified; the collector never deletes on what it cannot verify"
		default:
			s = "kept: owner " + d.names(OwnerSolid) + " exists" +
				d.ifNotRead("; ownergc removes its references to those of the owners this answer did not read that are gone")
		}
	case RemoveReferences:
		s = "kept: owner " + d.names(OwnerSolid) + " exists; ownergc " + removes + " its references to " + d.names(OwnerDangling, OwnerWaiting) +
			d.ifNotRead(", and to those of the owners this answer did not read that are gone") + caveat
	case Protect:
		by := "(annotation " + ownergcv1alpha1.ProtectedAnnotation + "=true)"
		if d.Reason == ReasonProtectedNamespace {
			by = fmt.Sprintf("(namespace %s is protected by the GCPolicy)", d.object.Namespace)
		}
		gone := "gone"
		if d.count(OwnerWaiting) > 0 {
			gone = "gone or being deleted in the foreground"
		}
		s = fmt.Sprintf("protected %s: ownergc %s its references to its owners, which are %s, instead of deleting it%s", by, removes, gone, caveat)
	case Delete:
		if d.Reason == ReasonOwnerWaiting {
			s = deleted + " in the foreground" + caveat + ": its owner " + d.names(OwnerWaiting) + " is being deleted in the foreground"
			if d.UnblockFirst {
				s += "; one of its dependents is itself deleted in the foreground, so its references first stop blocking its owners"
			}
			break
		}
		s = fmt.Sprintf("%s with propagation %s%s%s: all its owners are gone", deleted, d.Propagation, d.source(), caveat)
	case Unknown:
		switch d.Reason {
		case ReasonObjectNotRead:
			s = "unknown: the object cannot be read: " + d.object.ReadError
		case ReasonOwnersNotRead:
			s = fmt.Sprintf("unknown: this answer did not read %d of its owners (%s), and the collector deletes it only once every owner is confirmed gone",
				d.count(OwnerUnknown), d.names(OwnerUnknown))
		case ReasonDependentsNotListed:
			if d.object.Deleting {
				s = "unknown: being deleted in the foreground, it waits for its blocking dependents; none was found, but dependents in resources that could not be listed are not known; once none remains, ownergc removes its foregroundDeletion finalizer"
				break
			}
			s = fmt.Sprintf("unknown: its owner %s is being deleted in the foreground and its dependents could not all be listed: with dependents of its own it will be deleted in the foreground, without any with propagation %s%s",
				d.names(OwnerWaiting), d.Propagation, d.source())
		}
	}
	if d.DryRun {
		s += "; the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do"
	}
	return s
}

// source says where a deletion's propagation comes from, "" for the
// policy's default.
func (d Decision) source() string {
	switch d.PropagationFrom {
	case FromOverride:
		return fmt.Sprintf(" (the GCPolicy's propagation for %s)", d.object.Resource)
	case FromOrphanFinalizer:
		return " (its orphan finalizer)"
	case FromForegroundFinalizer:
		return " (its foregroundDeletion finalizer)"
	}
	return ""
}

// names names the owners in the states, state by state, each in the
// order of the references.
func (d Decision) names(states ...OwnerState) string {
	var out []string
	for _, s := range states {
		for _, o := range d.owners {
			if o.State == s {
				name := strings.TrimSpace(o.Kind + " " + o.Name)
				if o.Hidden {
					name = hiddenOwner
				}
				out = append(out, name)
			}
		}
	}
	return strings.Join(out, ", ")
}

func (d Decision) count(state OwnerState) int {
	n := 0
	for _, o := range d.owners {
		if o.State == state {
			n++
		}
	}
	return n
}

// ifNotRead returns text when some owners were not read, "" otherwise.
func (d Decision) ifNotRead(text string) string {
	if d.count(OwnerUnknown) == 0 {
		return ""
	}
	return text
}

// String says the expiry part of a decision in words: when the object
// expires, by what, and what ownergc does then. Like Decision.String,
// these are the only words of it (the InvalidExpiry and ExpiresSoon
// events, /explain's expiry, `kubectl ownergc why` and `expiring`); an
// Expiry decoded from JSON has lost what they say.
func (e *Expiry) String() string {
	if e == nil {
		return "it does not expire: it carries neither " + ownergcv1alpha1.TTLAnnotation + " nor " + ownergcv1alpha1.ExpiresAnnotation +
			", and no expiry rule of the GCPolicy selects it"
	}
	when := e.when()
	var s string
	switch e.State {
	case ExpiryScheduled:
		s = fmt.Sprintf("expires at %s, %s; ownergc will then delete it with propagation %s%s", when, e.by(), e.Propagation, e.source())
	case ExpiryDue:
		verb := "deletes it now"
		if e.DryRun {
			verb = "would delete it now (the GCPolicy's mode is DryRun: ownergc writes nothing, it logs and counts what it would do)"
		}
		s = fmt.Sprintf("expired at %s, %s; ownergc %s with propagation %s%s", when, e.by(), verb, e.Propagation, e.source())
	case ExpiryInvalid:
		s = "it does not expire: its expiry annotations cannot be read, and an annotation that cannot be read is never a reason to delete"
	case ExpiryDisabled:
		s = e.would() + ", but the expiry collector is not enabled "
		if e.PolicyUnknown {
			s += "by default (unless the GCPolicy, which could not be read, enables it)"
		} else {
			s += "(spec.collectors.expiry.enabled of the GCPolicy)"
		}
	case ExpiryIgnored:
		s = fmt.Sprintf("%s, but its resource %s is ignored by the GCPolicy: ownergc never writes it", e.would(), e.object.Resource)
	case ExpiryProtected:
		by := "annotation " + ownergcv1alpha1.ProtectedAnnotation + "=true"
		if e.Protection == ProtectedByNamespace {
			by = fmt.Sprintf("namespace %s is protected by the GCPolicy", e.object.Namespace)
		}
		s = fmt.Sprintf("protected (%s): it never expires; without the protection it would expire at %s, %s", by, when, e.by())
	case ExpiryDeleting:
		s = fmt.Sprintf("being deleted already (it expires at %s, %s)", when, e.by())
	case ExpiryUnknown:
		s = fmt.Sprintf("not known: whether %s selects it depends on the labels of namespace %s, which could not be read (%v)",
			e.ruleText(), e.object.Namespace, e.labelsErr)
	default:
		s = string(e.State)
	}
	for _, inv := range e.Invalid {
		s += "; " + inv.String()
	}
	return s
}

// String says why an expiry annotation cannot be read, and what it
// accepts.
func (a InvalidAnnotation) String() string {
	return fmt.Sprintf("annotation %s=%q cannot be read (%s): it accepts %s", a.Annotation, a.Value, a.Error, a.Accepted)
}

// would says when the object would expire, and by what.
func (e *Expiry) would() string {
	if e.At == nil {
		return "it might expire by " + e.ruleText()
	}
	return fmt.Sprintf("it would expire at %s, %s", e.when(), e.by())
}

// when says when the object expires, and how far that is from now.
func (e *Expiry) when() string {
	if e.At == nil {
		return "an unknown time"
	}
	at := e.At.UTC().Format(time.RFC3339)
	d := e.At.Sub(e.now)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (in %s)", at, Humanize(d))
	case d < 0:
		return fmt.Sprintf("%s (%s ago)", at, Humanize(-d))
	}
	return at + " (now)"
}

// by says what gives the object its expiry time.
func (e *Expiry) by() string {
	switch e.By {
	case ByTTL:
		return fmt.Sprintf("by annotation %s=%s", ownergcv1alpha1.TTLAnnotation, e.Value)
	case ByExpires:
		return fmt.Sprintf("by annotation %s=%s", ownergcv1alpha1.ExpiresAnnotation, e.Value)
	}
	return "by " + e.ruleText()
}

// ruleText names the rule that gives the expiry time, with what it
// selects when known: "rule 2 of the GCPolicy (configmaps in namespaces
// labelled env=preview, 168h0m0s after creation)".
func (e *Expiry) ruleText() string {
	s := fmt.Sprintf("rule %d of the GCPolicy", e.Rule)
	r := e.rule
	if r == nil {
		return s
	}
	what := r.Resource
	if r.Group != "" {
		what += "." + r.Group
	}
	if r.Resource == "*" {
		what = "every resource of group " + r.Group
		if r.Group == "" {
			what = "every resource of the core group"
		}
	}
	var where []string
	if r.Namespaces != nil {
		where = append(where, "namespaces "+strings.Join(r.Namespaces, ", "))
	}
	if r.Selector != nil {
		if r.Selector.Empty() {
			where = append(where, "every namespace")
		} else {
			where = append(where, "namespaces labelled "+r.SelectorText)
		}
	}
	return fmt.Sprintf("%s (%s in %s, %s after creation)", s, what, strings.Join(where, " and "), Humanize(r.After))
}

// source says where a deletion's propagation comes from, "" for the
// policy's default.
func (e *Expiry) source() string {
	return Decision{PropagationFrom: e.PropagationFrom, object: e.object}.source()
}

// Humanize says a duration to the second in its two largest units, the
// rest dropped: 2d4h, 3h12m, 45m10s, 12s; below half a second, 0s.
func Humanize(d time.Duration) string {
	if d < 0 {
		return "-" + Humanize(max(-d, 0)) // -d overflows for the minimum
	}
	d = d.Round(time.Second)
	units := []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var parts []string
	for _, u := range units {
		if n := d / u.d; n > 0 || (len(parts) > 0) {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
			}
			d -= n * u.d
			if len(parts) == 2 || (len(parts) == 1 && n == 0) {
				break
			}
		}
	}
	if len(parts) == 0 {
		return "0s"
	}
	return strings.Join(parts, "")
}
