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

package metrics

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ClusterLabel names the cluster of an engine in the fleet mode: every
// ownergc_ metric carries it there, and only there.
const ClusterLabel = "cluster"

// Set is the metrics one engine writes: the single-cluster metrics (the
// package's variables), or one cluster's series of the fleet's.
type Set struct {
	DeletedObjects                *prometheus.CounterVec
	OrphanedDependents            prometheus.Counter
	DanglingReferencesRemoved     prometheus.Counter
	GraphNodes                    prometheus.Gauge
	GraphVirtualNodes             prometheus.Gauge
	MonitoredResources            prometheus.Gauge
	DormantResources              prometheus.Gauge
	FailedResources               prometheus.Gauge
	OwnerAbsentToDependentDeleted prometheus.Observer
	BlockedDeletions              prometheus.Gauge
	OldestBlockedDeletionSeconds  prometheus.Gauge
	ProtectedDecisions            prometheus.Counter
	DryRunDecisions               *prometheus.CounterVec
	ShadowDecisions               *prometheus.CounterVec
	APIRequests                   *prometheus.CounterVec
	APIErrors                     *prometheus.CounterVec

	// TerminatedPods, FinishedJobs, CertificateSigningRequests and
	// PodsMarkedFailed are the API-level collectors' metrics.
	TerminatedPods, FinishedJobs, CertificateSigningRequests *APIGC
	PodsMarkedFailed                                         *prometheus.CounterVec
	// Expiry are the expiry collector's metrics.
	Expiry *Expiry

	// Queues provides the metrics of the engine's workqueues: nil in the
	// single-cluster mode, where the queues keep client-go's global
	// provider (controller-runtime's workqueue_* metrics); in the fleet
	// mode, the cluster's series of the ownergc_workqueue_* metrics.
	Queues workqueue.MetricsProvider
	// QueueClock is the clock of the engine's workqueues (nil: the real
	// clock, as in the single-cluster mode). In the fleet mode its tickers
	// tick no more often than QueueGaugesPeriod: a queue refreshes its
	// unfinished-work gauges on a ticker, every 500 ms in client-go, which
	// made an idle member's seven queues wake fourteen times a second.
	QueueClock clock.WithTicker

	cluster   string
	forgotten atomic.Bool
}

// single is the Set of the single-cluster mode.
var single = &Set{
	DeletedObjects: DeletedObjects, OrphanedDependents: OrphanedDependents, DanglingReferencesRemoved: DanglingReferencesRemoved,
	GraphNodes: GraphNodes, GraphVirtualNodes: GraphVirtualNodes, MonitoredResources: MonitoredResources, DormantResources: DormantResources, FailedResources: FailedResources,
	OwnerAbsentToDependentDeleted: OwnerAbsentToDependentDeleted, BlockedDeletions: BlockedDeletions,
	OldestBlockedDeletionSeconds: OldestBlockedDeletionSeconds, ProtectedDecisions: ProtectedDecisions,
	DryRunDecisions: DryRunDecisions, ShadowDecisions: ShadowDecisions, APIRequests: APIRequests, APIErrors: APIErrors,
	TerminatedPods: TerminatedPods, FinishedJobs: FinishedJobs, CertificateSigningRequests: CertificateSigningRequests,
	PodsMarkedFailed: PodsMarkedFailed, Expiry: ExpiryMetrics,
}

// fleetVecs are the fleet's metrics: the single-cluster ones, the API-level
// collectors' included, with the cluster label first, and the engines'
// workqueue metrics (workqueue.go).
type fleetVecs struct {
	deletedObjects, orphanedDependents, danglingReferencesRemoved, protectedDecisions    *prometheus.CounterVec
	dryRunDecisions, shadowDecisions, apiRequests, apiErrors                             *prometheus.CounterVec
	graphNodes, graphVirtualNodes, monitoredResources, dormantResources, failedResources *prometheus.GaugeVec
	blockedDeletions, oldestBlockedDeletionSeconds                                       *prometheus.GaugeVec
	ownerAbsentToDependentDeleted                                                        *prometheus.HistogramVec
	apiGC                                                                                *apiGCMetrics
	expiry                                                                               *expiryVecs
	queues                                                                               *queueVecs
}

func newFleetVecs() *fleetVecs {
	c := func(o prometheus.CounterOpts, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(o, append([]string{ClusterLabel}, labels...))
	}
	g := func(o prometheus.GaugeOpts) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(o, []string{ClusterLabel})
	}
	return &fleetVecs{
		deletedObjects:                c(deletedObjectsOpts, "group", "resource", "propagation"),
		orphanedDependents:            c(orphanedDependentsOpts),
		danglingReferencesRemoved:     c(danglingReferencesRemovedOpts),
		protectedDecisions:            c(protectedDecisionsOpts),
		dryRunDecisions:               c(dryRunDecisionsOpts, "action"),
		shadowDecisions:               c(shadowDecisionsOpts, "action", "outcome"),
		apiRequests:                   c(aPIRequestsOpts, "verb"),
		apiErrors:                     c(aPIErrorsOpts, "verb"),
		graphNodes:                    g(graphNodesOpts),
		graphVirtualNodes:             g(graphVirtualNodesOpts),
		monitoredResources:            g(monitoredResourcesOpts),
		dormantResources:              g(dormantResourcesOpts),
		failedResources:               g(failedResourcesOpts),
		blockedDeletions:              g(blockedDeletionsOpts),
		oldestBlockedDeletionSeconds:  g(oldestBlockedDeletionSecondsOpts),
		ownerAbsentToDependentDeleted: prometheus.NewHistogramVec(ownerAbsentToDependentDeletedOpts, []string{ClusterLabel}),
		apiGC:                         newAPIGCMetrics(ClusterLabel),
		expiry:                        newExpiry(ClusterLabel),
		queues:                        newQueueVecs(),
	}
}

func (v *fleetVecs) collectors() []prometheus.Collector {
	c := []prometheus.Collector{
		v.deletedObjects, v.orphanedDependents, v.danglingReferencesRemoved, v.protectedDecisions,
		v.dryRunDecisions, v.shadowDecisions, v.apiRequests, v.apiErrors,
		v.graphNodes, v.graphVirtualNodes, v.monitoredResources, v.dormantResources, v.failedResources,
		v.blockedDeletions, v.oldestBlockedDeletionSeconds, v.ownerAbsentToDependentDeleted,
	}
	c = append(c, v.apiGC.collectors()...)
	c = append(c, v.expiry.collectors()...)
	return append(c, v.queues.collectors()...)
}

// singleCollectors are the ownergc_ metrics of the single-cluster mode (its
// workqueue metrics are controller-runtime's).
func singleCollectors() []prometheus.Collector {
	return append([]prometheus.Collector{
		DeletedObjects, OrphanedDependents, DanglingReferencesRemoved,
		GraphNodes, GraphVirtualNodes, MonitoredResources, DormantResources, FailedResources,
		OwnerAbsentToDependentDeleted, APIRequests, APIErrors,
		BlockedDeletions, OldestBlockedDeletionSeconds, ProtectedDecisions,
		DryRunDecisions, ShadowDecisions,
	}, slices.Concat(singleAPIGC.collectors(), singleExpiry.collectors())...)
}

// fleet holds the fleet's metrics once UseFleet ran: they replace the
// single-cluster metrics (a process runs one mode); base is
// controller-runtime's registry before.
var (
	fleetMu sync.Mutex
	fleet   *fleetVecs
	base    metrics.RegistererGatherer
	// sets counts the Sets in use by cluster.
	sets = map[string]int{}
)

// UseFleet puts the fleet's metrics, which carry the cluster label, in place
// of the single-cluster ones in controller-runtime's registry. A registry
// remembers the labels of a name even after it is unregistered, so the
// fleet's are in a registry of their own, gathered with controller-runtime's:
// call UseFleet before any manager starts its metrics server.
func UseFleet() {
	fleetMu.Lock()
	defer fleetMu.Unlock()
	useFleet()
}

func useFleet() {
	if fleet != nil {
		return
	}
	fleet = newFleetVecs()
	for _, c := range singleCollectors() {
		metrics.Registry.Unregister(c)
	}
	own := prometheus.NewRegistry()
	own.MustRegister(fleet.collectors()...)
	base = metrics.Registry
	metrics.Registry = &fleetRegistry{RegistererGatherer: metrics.Registry, gather: prometheus.Gatherers{metrics.Registry, own}}
}

// fleetRegistry registers in controller-runtime's registry and gathers it
// with the fleet's metrics.
type fleetRegistry struct {
	metrics.RegistererGatherer
	gather prometheus.Gatherers
}

// Gather implements prometheus.Gatherer.
func (r *fleetRegistry) Gather() ([]*dto.MetricFamily, error) { return r.gather.Gather() }

// For returns the metrics of the engine of a cluster of the fleet, or the
// single-cluster metrics when cluster is empty.
func For(cluster string) *Set {
	if cluster == "" {
		return single
	}
	fleetMu.Lock()
	defer fleetMu.Unlock()
	useFleet()
	v, l := fleet, prometheus.Labels{ClusterLabel: cluster}
	sets[cluster]++
	return &Set{
		DeletedObjects:                v.deletedObjects.MustCurryWith(l),
		OrphanedDependents:            v.orphanedDependents.With(l),
		DanglingReferencesRemoved:     v.danglingReferencesRemoved.With(l),
		ProtectedDecisions:            v.protectedDecisions.With(l),
		DryRunDecisions:               v.dryRunDecisions.MustCurryWith(l),
		ShadowDecisions:               v.shadowDecisions.MustCurryWith(l),
		APIRequests:                   v.apiRequests.MustCurryWith(l),
		APIErrors:                     v.apiErrors.MustCurryWith(l),
		GraphNodes:                    v.graphNodes.With(l),
		GraphVirtualNodes:             v.graphVirtualNodes.With(l),
		MonitoredResources:            v.monitoredResources.With(l),
		DormantResources:              v.dormantResources.With(l),
		FailedResources:               v.failedResources.With(l),
		BlockedDeletions:              v.blockedDeletions.With(l),
		OldestBlockedDeletionSeconds:  v.oldestBlockedDeletionSeconds.With(l),
		OwnerAbsentToDependentDeleted: v.ownerAbsentToDependentDeleted.With(l),
		TerminatedPods:                v.apiGC.terminatedPods.curry(l),
		FinishedJobs:                  v.apiGC.finishedJobs.curry(l),
		CertificateSigningRequests:    v.apiGC.certificateSigningRequests.curry(l),
		PodsMarkedFailed:              v.apiGC.podsMarkedFailed.MustCurryWith(l),
		Expiry:                        v.expiry.with(l),
		Queues:                        &queueMetrics{vecs: v.queues, cluster: cluster},
		QueueClock:                    slowTickers{WithTicker: clock.RealClock{}, min: QueueGaugesPeriod},
		cluster:                       cluster,
	}
}

// Forget deletes the series of the Set's cluster, once its engine has
// stopped (its queues shut down) and no other Set of that cluster is in use
// (an engine of the cluster built again, or, in tests, another manager in
// the process, writes to the same series); the single-cluster metrics stay.
// The engine's queues cannot bring their series back: see queueMetrics.
// Forgetting a Set twice does nothing more.
func (s *Set) Forget() {
	if s.cluster == "" || !s.forgotten.CompareAndSwap(false, true) {
		return
	}
	if q, ok := s.Queues.(*queueMetrics); ok {
		q.forget()
	}
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if sets[s.cluster]--; sets[s.cluster] > 0 {
		return
	}
	delete(sets, s.cluster)
	l := prometheus.Labels{ClusterLabel: s.cluster}
	for _, c := range fleet.collectors() {
		if d, ok := c.(interface {
			DeletePartialMatch(prometheus.Labels) int
		}); ok {
			d.DeletePartialMatch(l)
		}
	}
}
