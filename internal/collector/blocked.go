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

package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/logging"
)

// Event reasons of the deletions the collector reports blocked.
const (
	// ReasonDeletionBlocked (Warning, on the owner): a foreground or
	// orphaning deletion has lasted longer than the policy's
	// blockedDeletionAfter; the message names what it waits for.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonDeletionUnblocked (Normal, on the owner): a deletion reported
	// blocked has finished.
	ReasonDeletionUnblocked = "DeletionUnblocked"
)

const (
	// blockedReportInterval is how often a deletion that stays blocked is
	// reported again.
	blockedReportInterval = 5 * time.Minute
	// blockedNamed is how many blocking dependents a report names.
	blockedNamed = 10
)

// BlockedDeletion is a deletion reported blocked.
type BlockedDeletion struct {
	Owner graph.Identity
	// Resource is the owner's resource (group/version/resource), when
	// known.
	Resource string
	// Since is when the deletion started (the owner's deletionTimestamp).
	Since time.Time
	// Foreground: it waits for its blocking dependents; otherwise for its
	// dependents to be orphaned.
	Foreground bool
}

// BlockedDeletions is the state of the deletions in progress.
type BlockedDeletions struct {
	// Count is the number of deletions blocked for longer than the
	// threshold.
	Count int
	// Oldest is the one blocked the longest, nil when none is.
	Oldest *BlockedDeletion
}

// blockedTracker follows the deletions in progress (owners deleting their
// dependents in the foreground, or orphaning them) across scans.
//
// Concurrency: mu guards entries and summary; scans run in one goroutine.
type blockedTracker struct {
	mu      sync.Mutex
	entries map[types.UID]*blockedEntry
	summary BlockedDeletions
}

type blockedEntry struct {
	BlockedDeletion
	node *graph.Node
	// reported is when the deletion was last reported blocked, zero when
	// it never was.
	reported time.Time
}

func newBlockedTracker() *blockedTracker {
	return &blockedTracker{entries: make(map[types.UID]*blockedEntry)}
}

// BlockedDeletions returns the deletions currently blocked.
func (c *Collector) BlockedDeletions() BlockedDeletions {
	c.blocked.mu.Lock()
	defer c.blocked.mu.Unlock()
	return c.blocked.summary
}

// runBlockedScans scans the deletions in progress until ctx ends, more often
// when the threshold is short.
func (c *Collector) runBlockedScans(ctx context.Context) {
	for {
		threshold := c.opts.Policy.Get().BlockedDeletionAfter
		interval := min(max(threshold/4, 250*time.Millisecond), 10*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		c.scanBlocked(ctx, time.Now(), threshold)
	}
}

// scanBlocked reports the deletions that have lasted longer than threshold
// (again every blockedReportInterval while they last), reports those
// reported before that have ended, and updates the gauges and the summary.
func (c *Collector) scanBlocked(ctx context.Context, now time.Time, threshold time.Duration) {
	t := c.blocked
	seen := make(map[types.UID]bool)
	var summary BlockedDeletions
	var toReport []*blockedEntry
	t.mu.Lock()
	for _, d := range c.opts.Graph.Deletions() {
		uid := d.Identity.UID
		seen[uid] = true
		e, ok := t.entries[uid]
		if !ok {
			e = &blockedEntry{node: d.Node, BlockedDeletion: BlockedDeletion{Owner: d.Identity, Since: now, Foreground: d.Foreground}}
			if obj, ok := c.opts.Objects.Cached(d.Identity.GroupKind(), d.Identity.Namespace, d.Identity.Name); ok && obj.UID == uid && obj.DeletionTimestamp != nil {
				e.Since = obj.DeletionTimestamp.Time
			}
			if gvr, _, err := c.resourceOf(d.Identity); err == nil {
				e.Resource = discovery.FormatGVR(gvr)
			}
			t.entries[uid] = e
		}
		e.Foreground = d.Foreground
		if now.Sub(e.Since) < threshold {
			continue
		}
		summary.Count++
		if summary.Oldest == nil || e.Since.Before(summary.Oldest.Since) {
			oldest := e.BlockedDeletion
			summary.Oldest = &oldest
		}
		if e.reported.IsZero() || now.Sub(e.reported) >= blockedReportInterval {
			e.reported = now
			toReport = append(toReport, e)
		}
	}
	var ended []*blockedEntry
	for uid, e := range t.entries {
		if !seen[uid] {
			delete(t.entries, uid)
			if !e.reported.IsZero() {
				ended = append(ended, e)
			}
		}
	}
	changed := summary.Count != t.summary.Count || (summary.Oldest == nil) != (t.summary.Oldest == nil) ||
		(summary.Oldest != nil && summary.Oldest.Owner.UID != t.summary.Oldest.Owner.UID)
	t.summary = summary
	t.mu.Unlock()

	c.opts.Metrics.BlockedDeletions.Set(float64(summary.Count))
	if summary.Oldest != nil {
		c.opts.Metrics.OldestBlockedDeletionSeconds.Set(now.Sub(summary.Oldest.Since).Seconds())
	} else {
		c.opts.Metrics.OldestBlockedDeletionSeconds.Set(0)
	}
	for _, e := range toReport {
		c.reportBlocked(ctx, e, now)
	}
	for _, e := range ended {
		c.recordEvent(e.Owner, corev1.EventTypeNormal, ReasonDeletionUnblocked, "%s finished after %s",
			deletionKind(e.Foreground), now.Sub(e.Since).Round(time.Second))
	}
	if changed && c.opts.Changed != nil {
		c.opts.Changed()
	}
}

func deletionKind(foreground bool) string {
	if foreground {
		return "Deletion in the foreground"
	}
	return "Deletion with the orphan propagation policy"
}

// reportBlocked records a DeletionBlocked event naming what the deletion
// waits for. The event is recorded in the owner's namespace, or in
// "default" for a cluster-scoped owner, and read by whoever may read events
// there: it names the dependents of the owner's namespace (cluster-scoped
// ones, for a cluster-scoped owner) and counts the others, whose names and
// namespaces are not for its readers.
func (c *Collector) reportBlocked(ctx context.Context, e *blockedEntry, now time.Time) {
	log := logging.WithValues(ctrl.LoggerFrom(ctx), "owner", e.Owner)
	deps := c.opts.Graph.Dependents(e.node, e.Foreground)
	sort.Slice(deps, func(i, j int) bool { return describe(deps[i].Identity) < describe(deps[j].Identity) })
	mayName := eventMayName(e.Owner.Namespace)
	var parts []string
	named, elsewhere := 0, 0
	for _, d := range deps {
		switch {
		case d.Identity.Namespace != e.Owner.Namespace:
			elsewhere++
		case named < blockedNamed:
			named++
			parts = append(parts, fmt.Sprintf("%s (%s)", describe(d.Identity), c.whyRemains(ctx, c.get, d, e, mayName)))
		}
	}
	if more := len(deps) - elsewhere - named; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	if elsewhere > 0 {
		where := "in namespaces, not named in an event of a cluster-scoped owner"
		if e.Owner.Namespace != "" {
			// Only references by UID from elsewhere, which never
			// resolve, link a namespaced owner to them.
			where = "elsewhere, not named in an event of namespace " + e.Owner.Namespace
		}
		parts = append(parts, fmt.Sprintf("%d %s", elsewhere, where))
	}
	waited := now.Sub(e.Since).Round(time.Second)
	var msg string
	switch {
	case len(deps) > 0 && e.Foreground:
		msg = fmt.Sprintf("%s has waited %s for %d blocking dependents: %s", deletionKind(true), waited, len(deps), strings.Join(parts, ", "))
	case len(deps) > 0:
		msg = fmt.Sprintf("%s has waited %s for %d dependents to be orphaned: %s", deletionKind(false), waited, len(deps), strings.Join(parts, ", "))
	default:
		msg = fmt.Sprintf("%s has lasted %s: no dependent holds it; ownergc is removing its finalizer", deletionKind(e.Foreground), waited)
	}
	if n, err := c.failures.lastError(e.node); err != nil {
		msg += fmt.Sprintf("; ownergc failed %d times in a row: %s", n, redact(err, mayName))
	}
	log.V(2).Info("Deletion blocked", "since", e.Since, "dependents", len(deps), "notNamed", elsewhere)
	c.recordEvent(e.Owner, corev1.EventTypeWarning, ReasonDeletionBlocked, "%s", msg)
}

// whyRemains says in plain words why a dependent of a deletion in progress
// is still there, reading it live with read. Of the dependent's last error
// it says what mayName allows.
func (c *Collector) whyRemains(ctx context.Context, read liveRead, d graph.DependentState, e *blockedEntry, mayName func(explain.Object) bool) string {
	id := d.Identity
	gvr, namespaced, err := c.resourceOf(id)
	switch {
	case err != nil:
		return fmt.Sprintf("its kind %s is not served by the API server, so it cannot be confirmed gone", id.GroupVersionKind())
	case c.opts.Policy.Get().Ignores(gvr.GroupResource()):
		return fmt.Sprintf("its resource %s is ignored by the GCPolicy, so ownergc leaves it alone", gvr.GroupResource())
	case !d.Observed:
		if c.opts.Objects.Kind(id.GroupKind()).Failing {
			return fmt.Sprintf("its resource %s cannot be listed, so it cannot be confirmed gone", discovery.FormatGVR(gvr))
		}
		return "ownergc has not observed it yet and is verifying it"
	}
	live, err := read(ctx, gvr, namespaceFor(namespaced, id.Namespace), id.Name)
	switch {
	case errors.Is(err, errNotChecked):
		return errNotChecked.Error()
	case isGone(err) || (err == nil && live.UID != id.UID):
		return "it is gone; ownergc has not seen the deletion yet"
	case err != nil:
		return fmt.Sprintf("it cannot be read: %v", err)
	}
	var why []string
	if e.Foreground && live.CreationTimestamp.After(e.Since) {
		why = append(why, "it was created after the deletion started")
	}
	if live.DeletionTimestamp != nil {
		if slices.Contains(live.Finalizers, metav1.FinalizerDeleteDependents) {
			why = append(why, "it is itself being deleted in the foreground and waits for its own dependents")
		}
		if others := slices.DeleteFunc(slices.Clone(live.Finalizers), func(f string) bool {
			return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
		}); len(others) > 0 {
			why = append(why, "it carries finalizers "+strings.Join(others, ", "))
		}
	}
	if _, err := c.failures.lastError(d.Node); err != nil {
		why = append(why, "ownergc cannot delete it: "+redact(err, mayName))
	}
	if len(why) == 0 {
		if e.Foreground {
			return "ownergc is deleting it"
		}
		return "ownergc is removing the owner from its owner references"
	}
	return strings.Join(why, "; ")
}
