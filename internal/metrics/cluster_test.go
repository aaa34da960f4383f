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
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// useSingle puts the single-cluster metrics back in the registry.
func useSingle(t *testing.T) {
	fleetMu.Lock()
	defer fleetMu.Unlock()
	if fleet != nil {
		metrics.Registry = base
		fleet = nil
		sets = map[string]int{}
		metrics.Registry.MustRegister(singleCollectors()...)
	}
}

// In the fleet mode every ownergc_ metric carries the cluster label (and
// docs/metrics.md says so), the API-level collectors' and the engine's
// queues' (ownergc_workqueue_*) included; each cluster's series are its own
// and go when its engine stops; the single-cluster metrics have no such
// label.
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
	for _, s := range []*Set{a, b} {
		s.DryRunDecisions.WithLabelValues("delete").Add(0)
		s.ShadowDecisions.WithLabelValues("delete", "agreed").Add(0)
		s.APIRequests.WithLabelValues("get").Add(0)
		s.APIErrors.WithLabelValues("get").Add(0)
		for _, m := range []*APIGC{s.TerminatedPods, s.FinishedJobs, s.CertificateSigningRequests} {
			for _, v := range m.vecs() {
				v.WithLabelValues("r").Add(0)
			}
		}
		s.PodsMarkedFailed.WithLabelValues("orphaned").Add(0)
		s.Expiry.Expired.WithLabelValues("", "configmaps", "ttl").Add(0)
	}
	a.TerminatedPods.Deleted.WithLabelValues("terminated").Inc()
	b.TerminatedPods.Deleted.WithLabelValues("terminated").Add(3)

	// Each engine's queue of the same name writes its own series.
	const queue = "ownergc_attempt_to_delete"
	qa, qb := newQueue(a, queue), newQueue(b, queue)
	defer qb.ShutDown()
	qa.Add("x")
	qa.Add("y")
	qb.Add("x")
	qb.AddAfter("z", time.Hour) // a retry, not added (again) while the test runs
	item, _ := qa.Get()
	qa.Done(item)

	if got := testutil.ToFloat64(fleet.deletedObjects.WithLabelValues("b", "", "configmaps", "Background")); got != 2 {
		t.Errorf("cluster b deleted %v objects, want 2", got)
	}
	if got := testutil.ToFloat64(fleet.graphNodes.WithLabelValues("a")); got != 5 {
		t.Errorf("cluster a's graph has %v nodes, want 5", got)
	}
	if got := testutil.ToFloat64(fleet.apiGC.terminatedPods.Deleted.WithLabelValues("b", "terminated")); got != 3 {
		t.Errorf("cluster b's terminated-Pod collector deleted %v Pods, want 3", got)
	}
	if got := testutil.ToFloat64(fleet.queues.depth.WithLabelValues("a", queue)); got != 1 {
		t.Errorf("cluster a's queue holds %v items, want 1", got)
	}
	if got := testutil.ToFloat64(fleet.queues.adds.WithLabelValues("b", queue)); got != 1 {
		t.Errorf("cluster b's queue had %v adds, want 1", got)
	}
	if got := testutil.ToFloat64(fleet.queues.retries.WithLabelValues("b", queue)); got != 1 {
		t.Errorf("cluster b's queue had %v retries, want 1", got)
	}
	if got := testutil.ToFloat64(fleet.queues.retries.WithLabelValues("a", queue)); got != 0 {
		t.Errorf("cluster a's queue had %v retries, want 0", got)
	}

	rows := docRows(t)
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "ownergc_") {
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
		row, ok := rows[f.GetName()]
		if !ok {
			t.Errorf("docs/metrics.md has no row for %s", f.GetName())
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			if !strings.Contains(row, "`"+l.GetName()+"`") {
				t.Errorf("docs/metrics.md's row for %s does not name its label %q", f.GetName(), l.GetName())
			}
		}
	}
	if want := len(fleet.collectors()); seen != want {
		t.Errorf("%d ownergc_ families registered in the fleet mode, want %d", seen, want)
	}

	qa.ShutDown() // the engine stops its queues, then forgets its metrics
	a.Forget()
	for _, c := range fleet.collectors() {
		if name, n := seriesOf(t, c, "a"); n != 0 {
			t.Errorf("after cluster a's engine stopped, %d of its series remain in %s", n, name)
		}
		if name, n := seriesOf(t, c, "b"); n == 0 {
			t.Errorf("cluster b's series are gone from %s after a was forgotten", name)
		}
	}
	if got := testutil.ToFloat64(fleet.graphNodes.WithLabelValues("b")); got != 7 {
		t.Errorf("cluster b's graph has %v nodes after a was forgotten, want 7", got)
	}
	// Neither a late write of a's queue nor a queue created after Forget
	// brings a's series back.
	qa.Add("late")
	late := newQueue(a, "ownergc_terminated_pods")
	late.Add("x")
	late.ShutDown()
	for _, c := range fleet.queues.collectors() {
		if name, n := seriesOf(t, c, "a"); n != 0 {
			t.Errorf("cluster a's queue series came back after Forget: %d in %s", n, name)
		}
	}
}

// In the single-cluster mode the API-level collectors' metrics have no
// cluster label, and the queues keep client-go's global metrics provider
// (controller-runtime's workqueue_*): no ownergc_workqueue_ metric.
func TestSingleClusterMetricsHaveNoClusterLabel(t *testing.T) {
	s := For("")
	if s.Queues != nil {
		t.Errorf("the single-cluster metrics provide the queues' metrics (%T), want client-go's global provider", s.Queues)
	}
	if s.TerminatedPods != TerminatedPods || s.FinishedJobs != FinishedJobs ||
		s.CertificateSigningRequests != CertificateSigningRequests || s.PodsMarkedFailed != PodsMarkedFailed {
		t.Error("the single-cluster Set's API-level collectors' metrics are not the package's")
	}
	TerminatedPods.Deleted.WithLabelValues("terminated").Add(0)
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "ownergc_workqueue_") {
			t.Errorf("%s is registered in the single-cluster mode", f.GetName())
		}
		if f.GetName() != "ownergc_terminated_pods_deleted_total" {
			continue
		}
		found = true
		for _, l := range f.GetMetric()[0].GetLabel() {
			if l.GetName() != reasonLabel {
				t.Errorf("%s has the label %q, want only %q", f.GetName(), l.GetName(), reasonLabel)
			}
		}
	}
	if !found {
		t.Error("ownergc_terminated_pods_deleted_total is not registered in the single-cluster mode")
	}
}

// newQueue returns a queue named name with s's queue metrics, as the
// engine's collectors create theirs.
func newQueue(s *Set, name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: s.Queues})
}

// seriesOf returns the name of c and counts its series that carry cluster.
func seriesOf(t *testing.T, c prometheus.Collector, cluster string) (string, int) {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(c)
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	name, n := "", 0
	for _, f := range families {
		name = f.GetName()
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == ClusterLabel && l.GetValue() == cluster {
					n++
				}
			}
		}
	}
	return name, n
}

// docRows returns docs/metrics.md's table rows of the ownergc_ metrics, by
// metric.
func docRows(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| `ownergc_") {
			rows[strings.Trim(strings.SplitN(line, "|", 3)[1], " `")] = line
		}
	}
	return rows
}

// Two engines of one cluster in a process (the cluster's engine built
// again, or two managers in a test) write the same series: the one that
// stops first must not delete the other's.
func TestForgetKeepsTheSeriesOfAnotherSetOfTheCluster(t *testing.T) {
	t.Cleanup(func() { useSingle(t) })
	old, cur := For("shared"), For("shared")
	old.GraphNodes.Set(1)
	cur.GraphNodes.Set(2)
	old.Forget()
	old.Forget() // twice changes nothing
	if _, n := seriesOf(t, fleet.graphNodes, "shared"); n != 1 {
		t.Fatalf("after the old engine's Forget, %d series of the cluster's graph nodes, want 1", n)
	}
	if got := testutil.ToFloat64(fleet.graphNodes.WithLabelValues("shared")); got != 2 {
		t.Fatalf("the current engine's graph nodes read %v, want 2", got)
	}
	cur.Forget()
	if _, n := seriesOf(t, fleet.graphNodes, "shared"); n != 0 {
		t.Fatalf("after the last engine's Forget, %d series remain", n)
	}
}

// A fleet engine's queues refresh their unfinished-work gauges every
// QueueGaugesPeriod, not every 500 ms; the delaying queues' 10 s heartbeat
// is kept; the single-cluster mode keeps client-go's clock.
func TestFleetQueuesTickSlowly(t *testing.T) {
	if For("").QueueClock != nil {
		t.Error("the single-cluster mode's queues should keep the real clock")
	}
	UseFleet()
	t.Cleanup(func() { useSingle(t) })
	s := For("slow")
	defer s.Forget()
	if c, ok := s.QueueClock.(slowTickers); !ok || c.min != QueueGaugesPeriod {
		t.Fatalf("a fleet engine's queue clock is %#v, want slow tickers of %v", s.QueueClock, QueueGaugesPeriod)
	}
	fake := clocktesting.NewFakeClock(time.Now())
	slow := slowTickers{WithTicker: fake, min: QueueGaugesPeriod}
	for _, tc := range []struct{ asked, want time.Duration }{
		{500 * time.Millisecond, QueueGaugesPeriod},
		{10 * time.Second, 10 * time.Second},
		{time.Minute, time.Minute},
	} {
		tk := slow.NewTicker(tc.asked)
		fake.Step(tc.want - time.Millisecond)
		select {
		case <-tk.C():
			t.Errorf("a ticker asked for every %v ticked before %v", tc.asked, tc.want)
		default:
		}
		fake.Step(time.Millisecond)
		select {
		case <-tk.C():
		default:
			t.Errorf("a ticker asked for every %v did not tick at %v", tc.asked, tc.want)
		}
		tk.Stop()
	}
}
