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
	DeletedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ownergc_deleted_objects_total",
		Help: "Objects deleted by the collector, by group, resource and propagation policy.",
	}, []string{"group", "resource", "propagation"})

	// OrphanedDependents counts dependents from which an owner deleted with
	// propagationPolicy=Orphan was removed.
	OrphanedDependents = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ownergc_orphaned_dependents_total",
		Help: "Dependents from whose ownerReferences an owner deleted with the orphan policy was removed.",
	})

	// DanglingReferencesRemoved counts owner references removed from
	// dependents that still have a live owner.
	DanglingReferencesRemoved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ownergc_dangling_references_removed_total",
		Help: "Owner references to absent owners, or to owners waiting for the deletion of their dependents, removed from dependents that keep another live owner.",
	})

	// GraphNodes and GraphVirtualNodes report the size of the graph.
	GraphNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ownergc_graph_nodes",
		Help: "Objects in the ownership graph, virtual nodes included.",
	})
	GraphVirtualNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ownergc_graph_virtual_nodes",
		Help: "Owners referenced by some object that the collector has not observed.",
	})

	// MonitoredResources and FailedResources report discovery and watches.
	MonitoredResources = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ownergc_monitored_resources",
		Help: "Resources the collector watches.",
	})
	FailedResources = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ownergc_failed_resources",
		Help: "Resources or group-versions the collector cannot discover or watch.",
	})

	// OwnerAbsentToDependentDeleted measures how long after the collector
	// learned that an owner is gone it deleted a dependent of it.
	OwnerAbsentToDependentDeleted = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ownergc_owner_absent_to_dependent_deleted_seconds",
		Help:    "Time from the collector learning that the last owner of an object is gone to its deletion request for that object.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	})

	// BlockedDeletions and OldestBlockedDeletionSeconds report the
	// foreground and orphaning deletions that last longer than the
	// policy's blockedDeletionAfter.
	BlockedDeletions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ownergc_blocked_deletions",
		Help: "Foreground and orphaning deletions in progress for longer than the GCPolicy's blockedDeletionAfter (leader only).",
	})
	OldestBlockedDeletionSeconds = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ownergc_oldest_blocked_deletion_seconds",
		Help: "How long the oldest blocked deletion has lasted, 0 when none is blocked (leader only).",
	})

	// ProtectedDecisions counts the protected objects kept without their
	// owners instead of being deleted.
	ProtectedDecisions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ownergc_protected_decisions_total",
		Help: "Protected objects whose owners were gone, kept without their references to those owners instead of being deleted.",
	})

	// DryRunDecisions counts the decisions not carried out in dry-run;
	// ShadowDecisions their outcomes against another collector.
	DryRunDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ownergc_dry_run_decisions_total",
		Help: "Decisions that would have written (delete, orphan, removeReferences, removeFinalizer), not carried out because the GCPolicy's mode is DryRun.",
	}, []string{"action"})
	ShadowDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ownergc_shadow_decisions_total",
		Help: "In DryRun, decisions compared with what another collector did: agreed or disagreed, by action.",
	}, []string{"action", "outcome"})

	// APIRequests and APIErrors count the collector's own requests to the
	// API server (deletes, patches and live reads), by verb.
	APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ownergc_api_requests_total",
		Help: "Requests the collector made to the API server (not counting informers), by verb.",
	}, []string{"verb"})
	APIErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ownergc_api_errors_total",
		Help: "Requests of the collector that failed, by verb (a NotFound on a live read or delete is not an error).",
	}, []string{"verb"})
)

func init() {
	metrics.Registry.MustRegister(
		DeletedObjects, OrphanedDependents, DanglingReferencesRemoved,
		GraphNodes, GraphVirtualNodes, MonitoredResources, FailedResources,
		OwnerAbsentToDependentDeleted, APIRequests, APIErrors,
		BlockedDeletions, OldestBlockedDeletionSeconds, ProtectedDecisions,
		DryRunDecisions, ShadowDecisions,
	)
}
