package metrics

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// useSingle puts the single-cluster metrics back in the registry.
func useSingle(t *testing.T) {
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if fleet != nil {
		metrics.Registry = base
		fleet = nil
		metrics.Registry.MustRegister(singleCollectors()...)
	}
}

// In the fleet mode every ownergc_ metric carries the cluster label (and
// docs/metrics.md says so); each cluster's series are its own and go when
// its engine stops; the single-cluster metrics have no such label.
func TestFleetMetricsCarryTheClusterLabel(t *testing.T) {
	t.Cleanup(func() { useSingle(t) })
	if For("") != single {
		t.Fatal("For(\"\") is not the single-cluster metrics")
	}
	a, b := For("a"), For("b")
	a.DeletedObjects.WithLabelValues("", "configmaps", "Background").Inc()
	b.DeletedObjects.WithLabelValues("", "configmaps", "Background").Add(2)
	a.GraphNodes.Set(5)
	b.GraphNodes.Set(7)
	a.APIRequests.WithLabelValues("get").Inc()
	a.DryRunDecisions.WithLabelValues("delete").Add(0)
	a.ShadowDecisions.WithLabelValues("delete", "agreed").Add(0)
	a.APIErrors.WithLabelValues("get").Add(0)

	if got := testutil.ToFloat64(fleet.deletedObjects.WithLabelValues("b", "", "configmaps", "Background")); got != 2 {
		t.Errorf("cluster b deleted %v objects, want 2", got)
	}
	if got := testutil.ToFloat64(fleet.graphNodes.WithLabelValues("a")); got != 5 {
		t.Errorf("cluster a's graph has %v nodes, want 5", got)
	}
	data, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "ownergc_") || apiGCMetric(f.GetName()) {
			continue
		}
		seen++
		labeled := false
		for _, l := range f.GetMetric()[0].GetLabel() {
			labeled = labeled || l.GetName() == ClusterLabel
		}
		if !labeled {
			t.Errorf("%s has no cluster label: %v", f.GetName(), f.GetMetric()[0].GetLabel())
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "| `"+f.GetName()+"`") && !strings.Contains(line, "`cluster`") {
				t.Errorf("docs/metrics.md's row for %s does not name the cluster label", f.GetName())
			}
		}
	}
	if seen != len(singleCollectors()) {
		t.Errorf("%d ownergc_ families registered in the fleet mode, want %d", seen, len(singleCollectors()))
	}

	a.Forget()
	if n := testutil.CollectAndCount(fleet.graphNodes); n != 1 {
		t.Errorf("after cluster a's engine stopped, %d graph_nodes series remain, want only b's", n)
	}
	if got := testutil.ToFloat64(fleet.graphNodes.WithLabelValues("b")); got != 7 {
		t.Errorf("cluster b's graph has %v nodes after a was forgotten, want 7", got)
	}
}

// apiGCMetric tells the API-level collectors' metrics (apigc.go), which do
// not carry the cluster label yet.
func apiGCMetric(name string) bool {
	for _, p := range []string{"ownergc_terminated_pods_", "ownergc_finished_jobs_", "ownergc_certificate_signing_requests_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
