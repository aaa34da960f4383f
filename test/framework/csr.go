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

package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// CSRs are CertificateSigningRequests.
var CSRs = Kind{GVR: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), Kind: "CertificateSigningRequest"}

// NewCSR returns a CertificateSigningRequest to create, named name, for a
// new key (returned too) with the signer example.com/test: no controller
// acts on it, so its conditions are the test's.
func NewCSR(t testing.TB, name string) (*certificatesv1.CertificateSigningRequest, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "example.com/test", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
		},
	}, key
}

// CSRSpec describes a CertificateSigningRequest to create: its conditions
// with how long ago each was last updated, and its certificate.
type CSRSpec struct {
	Name       string
	Conditions map[certificatesv1.RequestConditionType]time.Duration
	// CertificateExpiresIn, when set, issues a certificate that expires
	// then (negative: already expired).
	CertificateExpiresIn time.Duration
	// Protected: annotated ownergc.io/protected.
	Protected bool
}

// CreateCSR creates the request (NewCSR), sets its conditions (Approved
// and Denied through the approval subresource, Failed through status) and
// its certificate; it is deleted when the test ends, if it still exists.
func (cp *ControlPlane) CreateCSR(t testing.TB, s CSRSpec) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	ctx := Context(t)
	csr, key := NewCSR(t, s.Name)
	if s.Protected {
		csr.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
	}
	csrs := cp.Clientset.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CertificateSigningRequest %s: %v", s.Name, err)
	}
	cp.DeleteOnCleanup(t, Object{Kind: CSRs, Name: csr.Name, UID: csr.UID})
	now := time.Now()
	var approval, failed []certificatesv1.CertificateSigningRequestCondition
	for _, c := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		ago, ok := s.Conditions[c]
		if !ok {
			continue
		}
		cond := certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue, Reason: "Test",
			LastUpdateTime: metav1.NewTime(now.Add(-ago))}
		if c == certificatesv1.CertificateFailed {
			failed = append(failed, cond)
		} else {
			approval = append(approval, cond)
		}
	}
	if len(approval) > 0 {
		csr.Status.Conditions = approval
		if csr, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("approving or denying %s: %v", s.Name, err)
		}
	}
	if len(failed) > 0 || s.CertificateExpiresIn != 0 {
		csr.Status.Conditions = append(csr.Status.Conditions, failed...)
		if s.CertificateExpiresIn != 0 {
			csr.Status.Certificate = certificate(t, key, now.Add(s.CertificateExpiresIn))
		}
		if csr, err = csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting the status of %s: %v", s.Name, err)
		}
	}
	return csr
}

// certificate returns a PEM self-signed certificate that expires at
// notAfter.
func certificate(t testing.TB, key *ecdsa.PrivateKey, notAfter time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
