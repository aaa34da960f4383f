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

// Package metrics defines ownergc's Prometheus metrics. They are registered
// in controller-runtime's registry and served, with the controller-runtime
// and workqueue metrics, on the manager's authenticated metrics endpoint.
// docs/metrics.md describes each one.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// DeletedObjects counts objects the collector deleted.
	DeletedObjects = prometheus.NewCounterVec(deletedObjectsOpts, []string{"group", "resource", "propagation"})

	// OrphanedDependents counts dependents from which an owner deleted with
	// propagationPolicy=Orphan was removed.
	OrphanedDependents = prometheus.NewCounter(orphanedDependentsOpts)

	// DanglingReferencesRemoved counts owner references removed from
	// dependents that still have a live owner.
	DanglingReferencesRemoved = prometheus.NewCounter(danglingReferencesRemovedOpts)

	// GraphNodes and GraphVirtualNodes report the size of the graph.
	GraphNodes        = prometheus.NewGauge(graphNodesOpts)
	GraphVirtualNodes = prometheus.NewGauge(graphVirtualNodesOpts)

	// MonitoredResources, DormantResources and FailedResources report
	// discovery and watches.
	MonitoredResources = prometheus.NewGauge(monitoredResourcesOpts)
	DormantResources   = prometheus.NewGauge(dormantResourcesOpts)
	FailedResources    = prometheus.NewGauge(failedResourcesOpts)

	// OwnerAbsentToDependentDeleted measures how long after the collector
	// learned that an owner is gone it deleted a dependent of it.
	OwnerAbsentToDependentDeleted = prometheus.NewHistogram(ownerAbsentToDependentDeletedOpts)

	// BlockedDeletions and OldestBlockedDeletionSeconds report the
	// foreground and orphaning deletions that last longer than the
	// policy's blockedDeletionAfter.
	BlockedDeletions             = prometheus.NewGauge(blockedDeletionsOpts)
	OldestBlockedDeletionSeconds = prometheus.NewGauge(oldestBlockedDeletionSecondsOpts)

	// ProtectedDecisions counts the protected objects kept without their
	// owners instead of being deleted.
	ProtectedDecisions = prometheus.NewCounter(protectedDecisionsOpts)

	// DryRunDecisions counts the decisions not carried out in dry-run;
	// ShadowDecisions their outcomes against another collector.
	DryRunDecisions = prometheus.NewCounterVec(dryRunDecisionsOpts, []string{"action"})
	ShadowDecisions = prometheus.NewCounterVec(shadowDecisionsOpts, []string{"action", "outcome"})

	// APIRequests and APIErrors count the collector's own requests to the
	// API server (deletes, patches and live reads), by verb.
	APIRequests = prometheus.NewCounterVec(aPIRequestsOpts, []string{"verb"})
	APIErrors   = prometheus.NewCounterVec(aPIErrorsOpts, []string{"verb"})
)

// The options of each metric, shared by the single-cluster metrics above and
// the fleet's (cluster.go).
var (
	deletedObjectsOpts = prometheus.CounterOpts{
		Name: "ownergc_deleted_objects_total",
		Help: "Objects deleted by the collector, by group, resource and propagation policy.",
	}
	orphanedDependentsOpts = prometheus.CounterOpts{
		Name: "ownergc_orphaned_dependents_total",
		Help: "Dependents from whose ownerReferences an owner deleted with the orphan policy was removed.",
	}
	danglingReferencesRemovedOpts = prometheus.CounterOpts{
		Name: "ownergc_dangling_references_removed_total",
		Help: "Owner references to absent owners, or to owners waiting for the deletion of their dependents, removed from dependents that keep another live owner.",
	}
	graphNodesOpts = prometheus.GaugeOpts{
		Name: "ownergc_graph_nodes",
		Help: "Objects in the ownership graph, virtual nodes included.",
	}
	graphVirtualNodesOpts = prometheus.GaugeOpts{
		Name: "ownergc_graph_virtual_nodes",
		Help: "Owners referenced by some object that the collector has not observed.",
	}
	monitoredResourcesOpts = prometheus.GaugeOpts{
		Name: "ownergc_monitored_resources",
		Help: "Resources the collector watches, or checks for a first object (ownergc_dormant_resources).",
	}
	dormantResourcesOpts = prometheus.GaugeOpts{
		Name: "ownergc_dormant_resources",
		Help: "Monitored resources that had no object: not watched, but checked for one periodically (--dormant-check-interval).",
	}
	failedResourcesOpts = prometheus.GaugeOpts{
		Name: "ownergc_failed_resources",
		Help: "Resources or group-versions the collector cannot discover or watch.",
	}
	ownerAbsentToDependentDeletedOpts = prometheus.HistogramOpts{
		Name:    "ownergc_owner_absent_to_dependent_deleted_seconds",
		Help:    "Time from the collector learning that the last owner of an object is gone to its deletion request for that object.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	}
	blockedDeletionsOpts = prometheus.GaugeOpts{
		Name: "ownergc_blocked_deletions",
		Help: "Foreground and orphaning deletions in progress for longer than the GCPolicy's blockedDeletionAfter (leader only).",
	}
	oldestBlockedDeletionSecondsOpts = prometheus.GaugeOpts{
		Name: "ownergc_oldest_blocked_deletion_seconds",
		Help: "How long the oldest blocked deletion has lasted, 0 when none is blocked (leader only).",
	}
	protectedDecisionsOpts = prometheus.CounterOpts{
		Name: "ownergc_protected_decisions_total",
		Help: "Protected objects whose owners were gone, kept without their references to those owners instead of being deleted.",
	}
	dryRunDecisionsOpts = prometheus.CounterOpts{
		Name: "ownergc_dry_run_decisions_total",
		Help: "Decisions that would have written (delete, orphan, removeReferences, removeFinalizer), not carried out because the GCPolicy's mode is DryRun.",
	}
	shadowDecisionsOpts = prometheus.CounterOpts{
		Name: "ownergc_shadow_decisions_total",
		Help: "In DryRun, decisions compared with what another collector did: agreed or disagreed, by action.",
	}
	aPIRequestsOpts = prometheus.CounterOpts{
		Name: "ownergc_api_requests_total",
		Help: "Requests the collector made to the API server (not counting informers), by verb.",
	}
	aPIErrorsOpts = prometheus.CounterOpts{
		Name: "ownergc_api_errors_total",
		Help: "Requests of the collector that failed, by verb (a NotFound on a live read or delete is not an error).",
	}
)

func init() {
	metrics.Registry.MustRegister(singleCollectors()...)
}
