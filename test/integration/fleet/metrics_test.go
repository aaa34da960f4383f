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

package fleet_test

import (
	"fmt"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/collector"
	"github.com/ownergc/ownergc/test/framework"
)

// checkClusterMetrics checks, once every cluster has collected, that each
// cluster's collector queue reports in series of its own, labelled with the
// cluster; and that an API-level collector's metrics and queue carry the
// label of the cluster whose engine runs it: the CertificateSigningRequest
// collector, enabled in one cluster, deletes a request denied two hours ago.
func checkClusterMetrics(t *testing.T) {
	for _, name := range names {
		v, ok := gathered(t, "ownergc_workqueue_adds_total", map[string]string{"cluster": name, "name": collector.AttemptToDeleteQueue})
		if !ok || v == 0 {
			t.Errorf("the manager reports no adds to the attempt-to-delete queue of cluster %s (found: %v, %v)", name, ok, v)
		}
	}

	cp, name := clusters[1], names[1]
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Collectors.CertificateSigningRequests = ownergcv1alpha1.CertificateSigningRequestsCollector{Enabled: true,
			DeniedAfter: &metav1.Duration{Duration: time.Hour}}
	})
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
			s.Collectors = ownergcv1alpha1.DefaultSpec().Collectors
		})
	})
	cp.CreateCSR(t, framework.CSRSpec{Name: "fleet-metrics-denied-2h-ago",
		Conditions: map[certificatesv1.RequestConditionType]time.Duration{certificatesv1.CertificateDenied: 2 * time.Hour}})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		deleted := map[string]string{"cluster": name, "reason": "denied"}
		if v, ok := gathered(t, "ownergc_certificate_signing_requests_deleted_total", deleted); !ok || v < 1 {
			return fmt.Errorf("ownergc_certificate_signing_requests_deleted_total%v: %v (found: %v)", deleted, v, ok)
		}
		queue := map[string]string{"cluster": name, "name": "ownergc_certificate_signing_requests"}
		if _, ok := gathered(t, "ownergc_workqueue_adds_total", queue); !ok {
			return fmt.Errorf("no ownergc_workqueue_adds_total%v", queue)
		}
		return nil
	}, "the CertificateSigningRequest collector of cluster %s should report its deletion and queue with the cluster label", name)
}

// gathered returns the value of the counter or gauge metric's series whose
// labels include labels, from the registry the manager serves (the fleet's
// metrics are gathered with controller-runtime's), and whether it exists.
func gathered(t *testing.T, metric string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the manager's metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
