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
	ExpiryMetrics.Expired.WithLabelValues("", "", "").Add(0)
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
