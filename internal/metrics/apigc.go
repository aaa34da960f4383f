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

	"github.com/prometheus/client_golang/prometheus"
)

// APIGC are the metrics of one API-level collector (internal/apigc), named
// ownergc_<collector>_…, where <collector> is terminated_pods,
// finished_jobs or certificate_signing_requests.
type APIGC struct {
	// Deleted counts the objects the collector deleted, by the rule that
	// led to the deletion.
	Deleted *prometheus.CounterVec
	// DryRunDeletions counts the deletions decided but not made because the
	// GCPolicy's mode is DryRun (each object once per decision).
	DryRunDeletions *prometheus.CounterVec
	// Protected counts the deletions not made because the object is
	// protected (each object once per decision).
	Protected *prometheus.CounterVec
}

// reasonLabel labels the API-level collectors' metrics with the rule that
// led to the decision.
const reasonLabel = "reason"

// newAPIGC returns the metrics of a collector, labelled with labels (the
// fleet's cluster label, or none) and the reason.
func newAPIGC(collector, what string, labels ...string) *APIGC {
	labels = slices.Concat(labels, []string{reasonLabel})
	return &APIGC{
		Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_" + collector + "_deleted_total",
			Help: what + " deleted by the collector, by the rule that led to the deletion.",
		}, labels),
		DryRunDeletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_" + collector + "_dry_run_deletions_total",
			Help: what + " the collector would have deleted, not deleted because the GCPolicy's mode is DryRun, by rule.",
		}, labels),
		Protected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_" + collector + "_protected_total",
			Help: what + " the collector would have deleted, kept because they are protected, by rule.",
		}, labels),
	}
}

func (m *APIGC) vecs() []*prometheus.CounterVec {
	return []*prometheus.CounterVec{m.Deleted, m.DryRunDeletions, m.Protected}
}

// curry returns m's metrics with the labels l set.
func (m *APIGC) curry(l prometheus.Labels) *APIGC {
	return &APIGC{
		Deleted:         m.Deleted.MustCurryWith(l),
		DryRunDeletions: m.DryRunDeletions.MustCurryWith(l),
		Protected:       m.Protected.MustCurryWith(l),
	}
}

// apiGCMetrics are the metrics of the three API-level collectors: the
// single-cluster ones, or the fleet's (cluster.go), which carry the cluster
// label.
type apiGCMetrics struct {
	terminatedPods, finishedJobs, certificateSigningRequests *APIGC
	podsMarkedFailed                                         *prometheus.CounterVec
}

func newAPIGCMetrics(labels ...string) *apiGCMetrics {
	return &apiGCMetrics{
		terminatedPods:             newAPIGC("terminated_pods", "Pods", labels...),
		finishedJobs:               newAPIGC("finished_jobs", "Jobs", labels...),
		certificateSigningRequests: newAPIGC("certificate_signing_requests", "CertificateSigningRequests", labels...),
		podsMarkedFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_terminated_pods_marked_failed_total",
			Help: "Pods not terminated yet that the terminated-Pod collector marked Failed before deleting them, by rule.",
		}, slices.Concat(labels, []string{reasonLabel})),
	}
}

func (a *apiGCMetrics) collectors() []prometheus.Collector {
	var out []prometheus.Collector
	for _, m := range []*APIGC{a.terminatedPods, a.finishedJobs, a.certificateSigningRequests} {
		for _, v := range m.vecs() {
			out = append(out, v)
		}
	}
	return append(out, a.podsMarkedFailed)
}

// singleAPIGC are the single-cluster mode's.
var singleAPIGC = newAPIGCMetrics()

var (
	// TerminatedPods, FinishedJobs and CertificateSigningRequests are the
	// metrics of the three API-level collectors.
	TerminatedPods             = singleAPIGC.terminatedPods
	FinishedJobs               = singleAPIGC.finishedJobs
	CertificateSigningRequests = singleAPIGC.certificateSigningRequests

	// PodsMarkedFailed counts the Pods the terminated-Pod collector marked
	// Failed before deleting them (Pods that were not terminated yet).
	PodsMarkedFailed = singleAPIGC.podsMarkedFailed
)
