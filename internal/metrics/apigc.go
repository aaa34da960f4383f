package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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

func newAPIGC(collector, what string) *APIGC {
	return &APIGC{
		Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_" + collector + "_deleted_total",
			Help: what + " deleted by the collector, by the rule that led to the deletion.",
		}, []string{reasonLabel}),
		DryRunDeletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_" + collector + "_dry_run_deletions_total",
			Help: what + " the collector would have deleted, not deleted because the GCPolicy's mode is DryRun, by rule.",
		}, []string{reasonLabel}),
		Protected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ownergc_" + collector + "_protected_total",
			Help: what + " the collector would have deleted, kept because they are protected, by rule.",
		}, []string{reasonLabel}),
	}
}

func (m *APIGC) vecs() []*prometheus.CounterVec {
	return []*prometheus.CounterVec{m.Deleted, m.DryRunDeletions, m.Protected}
}

var (
	// TerminatedPods, FinishedJobs and CertificateSigningRequests are the
	// metrics of the three API-level collectors.
	TerminatedPods             = newAPIGC("terminated_pods", "Pods")
	FinishedJobs               = newAPIGC("finished_jobs", "Jobs")
	CertificateSigningRequests = newAPIGC("certificate_signing_requests", "CertificateSigningRequests")

	// PodsMarkedFailed counts the Pods the terminated-Pod collector marked
	// Failed before deleting them (Pods that were not terminated yet).
	PodsMarkedFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ownergc_terminated_pods_marked_failed_total",
		Help: "Pods not terminated yet that the terminated-Pod collector marked Failed before deleting them, by rule.",
	}, []string{reasonLabel})
)

func init() {
	for _, m := range []*APIGC{TerminatedPods, FinishedJobs, CertificateSigningRequests} {
		for _, v := range m.vecs() {
			metrics.Registry.MustRegister(v)
		}
	}
	metrics.Registry.MustRegister(PodsMarkedFailed)
}
