package metrics

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestEveryMetricIsDocumented checks that docs/metrics.md has a row for
// each ownergc_ metric the manager registers, with its labels: an
// undocumented metric is one nobody alerts on.
func TestEveryMetricIsDocumented(t *testing.T) {
	rows := docRows(t)
	// Touch each vector once so that Gather reports it.
	DeletedObjects.WithLabelValues("", "", "").Add(0)
	DryRunDecisions.WithLabelValues("").Add(0)
	ShadowDecisions.WithLabelValues("", "").Add(0)
	APIRequests.WithLabelValues("").Add(0)
	APIErrors.WithLabelValues("").Add(0)
	for _, m := range []*APIGC{TerminatedPods, FinishedJobs, CertificateSigningRequests} {
		for _, v := range m.vecs() {
			v.WithLabelValues("").Add(0)
		}
	}
	PodsMarkedFailed.WithLabelValues("").Add(0)
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "ownergc_") {
			continue
		}
		seen++
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s is registered but docs/metrics.md has no row for it", name)
			continue
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			if !strings.Contains(row, "`"+l.GetName()+"`") {
				t.Errorf("docs/metrics.md's row for %s does not name its label %q: %s", name, l.GetName(), row)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d ownergc_ metrics registered; is the registry the manager's?", seen)
	}
}
