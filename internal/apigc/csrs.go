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

package apigc

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/policy"
)

// The CertificateSigningRequest collector, with the semantics of kube-
// controller-manager's certificatesigningrequest-cleaner-controller
// (pkg/controller/certificates/cleaner), its durations configurable. A
// request is deleted when, in this order:
//
//   - approved: it was issued a certificate and its Approved condition was
//     last updated more than approvedAfter (1h) ago;
//   - denied, failed: its Denied, or Failed, condition was last updated more
//     than deniedAfter (1h) ago;
//   - pending: it has no condition and was created more than pendingAfter
//     (24h) ago;
//   - expired: it is approved and its certificate's NotAfter has passed;
//   - approved_unissued: it is approved without a certificate, and its
//     Approved condition was last updated more than pendingAfter ago.
//
// The cleaner looks at every request once an hour; this collector looks at
// a request when it changes and again when its next deadline passes, so it
// deletes it within a second of the deadline. Deletions carry
// preconditions on the UID and resourceVersion of the cached request.

// Rules of the CertificateSigningRequest collector (label "reason" of its
// metrics).
const (
	ReasonApproved         = "approved"
	ReasonDenied           = "denied"
	ReasonFailed           = "failed"
	ReasonPending          = "pending"
	ReasonExpired          = "expired"
	ReasonApprovedUnissued = "approved_unissued"
)

// csrWorkers: the cleaner runs one.
const csrWorkers = 2

// deadlineSlack is added to the time left before a deadline, so that the
// request is looked at again once the deadline has strictly passed.
const deadlineSlack = 50 * time.Millisecond

// NewCertificateSigningRequests returns the CertificateSigningRequest
// collector.
func NewCertificateSigningRequests(opts Options) Collector {
	return newRunner(definition[string]{
		name: "certificateSigningRequests", metric: "certificate_signing_requests", watches: "CertificateSigningRequests",
		workers: csrWorkers, metrics: opts.metricSet().CertificateSigningRequests,
		enabled: func(p *policy.Policy) bool { return p.Collectors.CertificateSigningRequests.Enabled },
		affects: func(old, cur *policy.Policy) bool {
			return old.Collectors.CertificateSigningRequests != cur.Collectors.CertificateSigningRequests
		},
		transform: trimCSRs,
		start:     startCSRs,
	}, opts)
}

// csrInfo is what the collector's cache keeps of a
// CertificateSigningRequest.
type csrInfo struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Conditions []csrCondition
	// Issued: it holds a certificate; NotAfter is the certificate's, nil
	// when it cannot be parsed.
	Issued   bool
	NotAfter *time.Time
}

type csrCondition struct {
	Type           certificatesv1.RequestConditionType
	LastUpdateTime metav1.Time
}

func (c *csrInfo) DeepCopyObject() runtime.Object {
	out := *c
	c.DeepCopyInto(&out.ObjectMeta)
	out.Conditions = append([]csrCondition(nil), c.Conditions...)
	if c.NotAfter != nil {
		t := *c.NotAfter
		out.NotAfter = &t
	}
	return &out
}

func trimCSRs(obj any) (any, error) {
	c, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return obj, nil
	}
	out := &csrInfo{ObjectMeta: trimMeta(&c.ObjectMeta), Issued: len(c.Status.Certificate) > 0}
	for _, cond := range c.Status.Conditions {
		out.Conditions = append(out.Conditions, csrCondition{Type: cond.Type, LastUpdateTime: cond.LastUpdateTime})
	}
	out.NotAfter = certificateNotAfter(c.Status.Certificate)
	return out, nil
}

// certificateNotAfter returns the NotAfter of the first certificate of the
// first PEM block, as the cleaner reads it; nil when there is none.
func certificateNotAfter(data []byte) *time.Time {
	if len(data) == 0 {
		return nil
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return nil
	}
	t := certs[0].NotAfter
	return &t
}

// csrClock evaluates a request's deadlines at now, and remembers the
// earliest one still to come.
type csrClock struct {
	now, next time.Time
}

// olderThan is the cleaner's isOlderThan: t is set and more than d ago.
func (k *csrClock) olderThan(t metav1.Time, d time.Duration) bool {
	if t.IsZero() {
		return false
	}
	return k.passed(t.Add(d))
}

// passed reports whether deadline is strictly before now, and otherwise
// remembers it.
func (k *csrClock) passed(deadline time.Time) bool {
	if k.now.After(deadline) {
		return true
	}
	if k.next.IsZero() || deadline.Before(k.next) {
		k.next = deadline
	}
	return false
}

// decideCSR returns the rule by which c is to be deleted at now, with the
// timestamp it counts from, or, when none applies, the earliest time one
// will (zero when none ever will, as things stand).
func decideCSR(c *csrInfo, d policy.CertificateSigningRequests, now time.Time) (reason string, since time.Time, next time.Time) {
	k := &csrClock{now: now}
	conditionOlderThan := func(t certificatesv1.RequestConditionType, age time.Duration) (bool, time.Time) {
		for _, cond := range c.Conditions {
			if cond.Type == t && k.olderThan(cond.LastUpdateTime, age) {
				return true, cond.LastUpdateTime.Time
			}
		}
		return false, time.Time{}
	}
	approved := false
	for _, cond := range c.Conditions {
		approved = approved || cond.Type == certificatesv1.CertificateApproved
	}
	if c.Issued {
		if ok, t := conditionOlderThan(certificatesv1.CertificateApproved, d.ApprovedAfter); ok {
			return ReasonApproved, t, time.Time{}
		}
	}
	if ok, t := conditionOlderThan(certificatesv1.CertificateDenied, d.DeniedAfter); ok {
		return ReasonDenied, t, time.Time{}
	}
	if ok, t := conditionOlderThan(certificatesv1.CertificateFailed, d.DeniedAfter); ok {
		return ReasonFailed, t, time.Time{}
	}
	if len(c.Conditions) == 0 && k.olderThan(c.CreationTimestamp, d.PendingAfter) {
		return ReasonPending, c.CreationTimestamp.Time, time.Time{}
	}
	if approved && c.Issued && c.NotAfter != nil && k.passed(*c.NotAfter) {
		return ReasonExpired, *c.NotAfter, time.Time{}
	}
	if !c.Issued {
		if ok, t := conditionOlderThan(certificatesv1.CertificateApproved, d.PendingAfter); ok {
			return ReasonApprovedUnissued, t, time.Time{}
		}
	}
	return "", time.Time{}, k.next
}

func csrDetail(reason string, since time.Time, d policy.CertificateSigningRequests) string {
	at := since.UTC().Format(time.RFC3339)
	switch reason {
	case ReasonApproved:
		return fmt.Sprintf("issued, approved more than %s ago (at %s)", d.ApprovedAfter, at)
	case ReasonDenied:
		return fmt.Sprintf("denied more than %s ago (at %s)", d.DeniedAfter, at)
	case ReasonFailed:
		return fmt.Sprintf("failed more than %s ago (at %s)", d.DeniedAfter, at)
	case ReasonPending:
		return fmt.Sprintf("pending for more than %s (created at %s)", d.PendingAfter, at)
	case ReasonExpired:
		return fmt.Sprintf("its certificate expired at %s", at)
	default:
		return fmt.Sprintf("approved more than %s ago (at %s) and never issued", d.PendingAfter, at)
	}
}

// csrs is the work of one session of the CertificateSigningRequest
// collector.
type csrs struct {
	*session[string]
	csrs toolscache.SharedIndexInformer
}

func startCSRs(s *session[string]) work[string] {
	w := &csrs{session: s, csrs: newInformer(s, s.r.opts.Client.CertificatesV1().CertificateSigningRequests(), &certificatesv1.CertificateSigningRequest{})}
	enqueue := func(obj any) {
		if c, ok := obj.(*csrInfo); ok {
			w.queue.Add(c.Name)
		}
	}
	s.watch(w.csrs, enqueue)
	return w
}

// resync implements work.
func (w *csrs) resync() {
	for _, name := range w.csrs.GetStore().ListKeys() {
		w.queue.Add(name)
	}
}

// process implements work: it deletes the request if a rule applies, and
// otherwise queues it again for its next deadline.
func (w *csrs) process(ctx context.Context, name string) error {
	obj, exists, _ := w.csrs.GetStore().GetByKey(name)
	c, ok := obj.(*csrInfo)
	if !exists || !ok || c.DeletionTimestamp != nil {
		return nil
	}
	durations := w.r.opts.Policy.Get().Collectors.CertificateSigningRequests
	reason, since, next := decideCSR(c, durations, time.Now())
	if reason == "" {
		if !next.IsZero() {
			w.queue.AddAfter(name, time.Until(next)+deadlineSlack)
		}
		return nil
	}
	d := deletion{object: &c.ObjectMeta, kind: "CertificateSigningRequest", reason: reason, detail: csrDetail(reason, since, durations)}
	if !w.r.permitted(ctx, d) {
		return nil
	}
	err := w.r.opts.Client.CertificatesV1().CertificateSigningRequests().Delete(ctx, c.Name,
		metav1.DeleteOptions{Preconditions: preconditions(c.UID, c.ResourceVersion)})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting CertificateSigningRequest: %w", err)
	}
	w.r.recordDeleted(ctrl.LoggerFrom(ctx), d)
	return nil
}
