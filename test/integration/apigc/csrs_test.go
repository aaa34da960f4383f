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

package apigc_test

import (
	"fmt"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

const (
	approved = certificatesv1.CertificateApproved
	denied   = certificatesv1.CertificateDenied
	failed   = certificatesv1.CertificateFailed
)

// comparedCSRs is a workload of CertificateSigningRequests for kube-
// controller-manager's durations (1h, 1h, 24h): which are deleted and which
// stay.
func comparedCSRs(prefix string) []framework.CSRSpec {
	return []framework.CSRSpec{
		{Name: prefix + "issued-approved-2h-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{approved: 2 * time.Hour}, CertificateExpiresIn: 24 * time.Hour},
		{Name: prefix + "issued-approved-10m-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{approved: 10 * time.Minute}, CertificateExpiresIn: 24 * time.Hour},
		{Name: prefix + "issued-expired", Conditions: map[certificatesv1.RequestConditionType]time.Duration{approved: time.Minute}, CertificateExpiresIn: -time.Minute},
		{Name: prefix + "denied-2h-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{denied: 2 * time.Hour}},
		{Name: prefix + "denied-10m-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{denied: 10 * time.Minute}},
		{Name: prefix + "failed-2h-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{failed: 2 * time.Hour}},
		{Name: prefix + "approved-unissued-25h-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{approved: 25 * time.Hour}},
		{Name: prefix + "approved-unissued-2h-ago", Conditions: map[certificatesv1.RequestConditionType]time.Duration{approved: 2 * time.Hour}},
		{Name: prefix + "pending"},
	}
}

// Each rule of the cleaner: approved and issued, denied, failed, expired
// certificate, approved and never issued, and pending with a short
// pendingAfter; a protected request stays.
func TestStaleCertificateSigningRequests(t *testing.T) {
	const pendingAfter = 20 * time.Second
	cp.StartManager(t, framework.ManagerOptions{})
	disableCollectorsOnCleanup(t)
	specs := comparedCSRs("rule-")
	specs = append(specs, framework.CSRSpec{Name: "rule-protected-denied-2h-ago", Protected: true,
		Conditions: map[certificatesv1.RequestConditionType]time.Duration{denied: 2 * time.Hour}})
	var names []string
	for _, s := range specs {
		cp.CreateCSR(t, s)
		names = append(names, s.Name)
	}
	created := time.Now()
	setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) {
		c.CertificateSigningRequests = ownergcv1alpha1.CertificateSigningRequestsCollector{Enabled: true,
			ApprovedAfter: &metav1.Duration{Duration: time.Hour}, DeniedAfter: &metav1.Duration{Duration: time.Hour},
			PendingAfter: &metav1.Duration{Duration: pendingAfter}}
	})
	kept := map[string]bool{"rule-issued-approved-10m-ago": true, "rule-denied-10m-ago": true, "rule-pending": true, "rule-protected-denied-2h-ago": true}
	left := observed[bool]{"requests left", func() map[string]bool { return csrsLeft(t, names) }}
	left.reach(t, framework.CascadeTimeout, kept, "the stale requests should be deleted, the pending one kept")
	// The pending request stays until pendingAfter has passed since its
	// creation (checked until a few seconds before: creation timestamps
	// are whole seconds), then goes; the protected request stays.
	if until := pendingAfter - 4*time.Second - time.Since(created); until > 0 {
		left.keep(t, until, kept, "the pending request must stay until it has been pending for pendingAfter")
	} else {
		t.Fatalf("the stale requests took %s to go: the pending request's survival for pendingAfter (%s) could not be checked", time.Since(created), pendingAfter)
	}
	delete(kept, "rule-pending")
	left.reach(t, framework.CascadeTimeout, kept, "the pending request should be deleted once pending for more than pendingAfter")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		st := framework.PolicyStatus(t, cp.Client).Collectors
		if st == nil || !st.CertificateSigningRequests.Enabled || !st.CertificateSigningRequests.Synced || st.CertificateSigningRequests.Deleted != 7 {
			return fmt.Errorf("status.collectors %+v", st)
		}
		return nil
	}, "the GCPolicy status should report the collector enabled, synced, with 7 requests deleted")
}
