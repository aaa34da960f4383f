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

package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/collector"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/monitor"
)

// Failure is a resource or group-version that cannot be discovered or
// watched.
type Failure = monitor.Failure

// Status is the state of the engine.
type Status struct {
	// Monitored is the number of resources watched, or dormant.
	Monitored int
	// Dormant is the number of monitored resources not watched since they
	// had no object (checked for one periodically instead).
	Dormant int
	// Syncing lists the resources whose initial list is not in the graph
	// yet (failing ones excluded).
	Syncing []string
	// Failed lists the resources and group-versions that cannot be
	// discovered or watched.
	Failed []Failure
	// Synced: discovery ran, the monitors match it, and every monitor that
	// can sync has.
	Synced bool
	// Nodes and VirtualNodes are the size of the graph.
	Nodes, VirtualNodes int
	// AttemptToDelete and AttemptToOrphan are the lengths of the queues
	// and the sizes of the worker pools (zero on a standby).
	AttemptToDelete, AttemptToOrphan               int
	AttemptToDeleteWorkers, AttemptToOrphanWorkers int
	// Blocked is the state of the deletions that last longer than the
	// policy's threshold (on the leader; none on a standby).
	Blocked collector.BlockedDeletions
	// Shadow is the state of the dry-run comparison with another collector.
	Shadow collector.Shadow
	// UnmatchedIgnored lists the ignored resources of the policy in force
	// that match no served resource (see UnmatchedIgnored).
	UnmatchedIgnored []schema.GroupResource
	// Collectors are the API-level collectors, in the order of
	// spec.collectors, each named by its field there (apigc.Status.Name):
	// find one by its name, never by its position.
	Collectors []apigc.Status
}

// Status returns the state of the engine.
func (e *Engine) Status() Status { return e.computeStatus() }

func (e *Engine) computeStatus() Status {
	m := e.monitors.Status()
	st := Status{Monitored: m.Monitored, Dormant: m.Dormant, Syncing: m.Syncing, Failed: m.Failed, Synced: m.Synced,
		Nodes: e.graph.Len(), VirtualNodes: e.graph.VirtualLen()}
	st.AttemptToDelete, st.AttemptToOrphan = e.collector.QueueLengths()
	st.AttemptToDeleteWorkers, st.AttemptToOrphanWorkers = e.collector.Workers()
	st.Blocked = e.collector.BlockedDeletions()
	st.Shadow = e.collector.Shadow()
	st.UnmatchedIgnored, _ = e.UnmatchedIgnored(e.policy.Get().Ignored)
	for _, c := range e.apiGC {
		st.Collectors = append(st.Collectors, c.Status())
	}
	return st
}

// UnmatchedIgnored returns the entries of a policy's ignored resources that
// match no resource the API server serves in the latest discovery snapshot,
// which holds every served resource, deletable or not: such an entry ignores
// nothing. Resource "*" matches when the group is served; an entry of a group
// whose discovery fails is never returned. discovered is false, and unmatched
// nil, before the first discovery.
func (e *Engine) UnmatchedIgnored(entries []schema.GroupResource) (unmatched []schema.GroupResource, discovered bool) {
	snap := e.discovery.Snapshot()
	if snap == nil {
		return nil, false
	}
	return snap.Unmatched(entries), true
}

// OnStatusChange registers f to be called, from the engine's own goroutine,
// when readiness, the number of monitored resources, the set of failed
// resources, the blocked deletions (their number, or which is the oldest),
// the shadow (DryRun's comparison with another collector starting or
// stopping, or a new disagreement; its agreements are many and are left to
// the periodic refresh), the ignored resources of the policy in force that
// match no served resource (discovery, or the policy, changed) or the state
// of an API-level collector (enabled, running, synced, its list error)
// change.
func (e *Engine) OnStatusChange(f func()) { e.status.subscribe(f) }

// notifier turns the engine's change signals into status notifications:
// any part of the engine kicks it (cheaply, from any goroutine), and its
// goroutine recomputes the status and tells subscribers when what they
// report changed.
//
// Concurrency: kicks is a one-slot channel; mu guards subs.
type notifier struct {
	compute func() Status
	metrics *metrics.Set
	kicks   chan struct{}

	mu   sync.Mutex
	subs []func()
}

func newNotifier(compute func() Status, m *metrics.Set) *notifier {
	return &notifier{compute: compute, metrics: m, kicks: make(chan struct{}, 1)}
}

// kick signals that the status may have changed.
func (n *notifier) kick() {
	select {
	case n.kicks <- struct{}{}:
	default:
	}
}

func (n *notifier) subscribe(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.subs = append(n.subs, f)
}

func (n *notifier) run(ctx context.Context) error {
	var last string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.kicks:
		}
		st := n.compute()
		n.metrics.MonitoredResources.Set(float64(st.Monitored))
		n.metrics.DormantResources.Set(float64(st.Dormant))
		n.metrics.FailedResources.Set(float64(len(st.Failed)))
		// Agreements are many and are refreshed periodically; dry-run
		// switching and disagreements are pushed.
		key := fmt.Sprint(st.Synced, st.Monitored, st.Blocked.Count, st.Shadow.Active, st.Shadow.Disagreed)
		if o := st.Blocked.Oldest; o != nil {
			key += "|oldest " + string(o.Owner.UID)
		}
		for _, f := range st.Failed {
			key += "|" + f.Group + "/" + f.Version + "/" + f.Resource
		}
		for _, c := range st.Collectors {
			key += fmt.Sprintf("|%s %t %t %t %s", c.Name, c.Enabled, c.Running, c.Synced, c.ListError)
		}
		key += "|unmatched"
		for _, gr := range st.UnmatchedIgnored {
			key += "|" + gr.Group + "/" + gr.Resource
		}
		if key == last {
			continue
		}
		last = key
		n.mu.Lock()
		subs := slices.Clone(n.subs)
		n.mu.Unlock()
		for _, f := range subs {
			f()
		}
	}
}
