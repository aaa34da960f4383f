package decision

import (
	"fmt"
	"strings"

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
