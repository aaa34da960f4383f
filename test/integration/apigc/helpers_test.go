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
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// setCollectors changes spec.collectors (and the mode) and waits until the
// policy is in force and Ready, which includes the enabled collectors'
// caches having synced.
func setCollectors(t *testing.T, mode ownergcv1alpha1.Mode, change func(*ownergcv1alpha1.Collectors)) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	return framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Mode = mode
		change(&s.Collectors)
	})
}

// disableCollectorsOnCleanup puts every collector off, and the mode back to
// Enforce, when the test ends.
func disableCollectorsOnCleanup(t *testing.T) {
	t.Cleanup(func() {
		setCollectors(t, ownergcv1alpha1.ModeEnforce, func(c *ownergcv1alpha1.Collectors) {
			*c = ownergcv1alpha1.DefaultSpec().Collectors
		})
	})
}

func policyStatus(t *testing.T) ownergcv1alpha1.GCPolicyStatus {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{}
	if err := cp.Client.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
		t.Fatal(err)
	}
	return p.Status
}

// --- Nodes and Pods ---

// createNode creates a Node with taints; it is deleted when the test ends.
// A Node created through the API has no Ready condition: it is not Ready.
func createNode(t *testing.T, name string, taints ...corev1.Taint) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
	if err := cp.Client.Create(framework.Context(t), n); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := cp.Client.Delete(framework.Context(t), n); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Node %s: %v", name, err)
		}
	})
	return n
}

var outOfService = corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

type podOption func(*corev1.Pod)

func withFinalizer(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, framework.HoldFinalizer) }

func protected(p *corev1.Pod) {
	p.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
}

// createPod creates a Pod bound to node ("" for none); the test's cleanup
// removes it (removePodsOnCleanup).
func createPod(t *testing.T, ns, name, node string, opts ...podOption) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "example.com/image"}}},
	}
	for _, o := range opts {
		o(p)
	}
	if err := cp.Client.Create(framework.Context(t), p); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", ns, name, err)
	}
	return p
}

// setPhase sets a Pod's phase (and status reason) through the status
// subresource, as a kubelet would.
func setPhase(t *testing.T, p *corev1.Pod, phase corev1.PodPhase, reason string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Pod{}
		if err := cp.Client.Get(framework.Context(t), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status.Phase, cur.Status.Reason = phase, reason
		return cp.Client.Status().Update(framework.Context(t), cur)
	})
	if err != nil {
		t.Fatalf("setting the phase of Pod %s to %s: %v", p.Name, phase, err)
	}
}

// terminatedPods creates Pods on node, in the given order, each in a later
// second than the one before (creation timestamps have a resolution of a
// second), and sets each phase.
func terminatedPods(t *testing.T, ns, node string, names []string, phase corev1.PodPhase) {
	t.Helper()
	for i, name := range names {
		if i > 0 {
			time.Sleep(1050 * time.Millisecond)
		}
		setPhase(t, createPod(t, ns, name, node), phase, "")
	}
}

// deleteGracefully deletes a Pod with its default grace period: bound to a
// Node, it stays terminating (no kubelet finishes it); otherwise a
// finalizer keeps it.
func deleteGracefully(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := cp.Client.Delete(framework.Context(t), p); err != nil {
		t.Fatalf("deleting Pod %s: %v", p.Name, err)
	}
}

// podStates describes every Pod of ns by name: "gone" once deleted,
// otherwise its phase, "terminating" while it is, and the DisruptionTarget
// condition's reason when it has one.
func podStates(t *testing.T, ns string, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		p := &corev1.Pod{}
		err := cp.Client.Get(framework.Context(t), client.ObjectKey{Namespace: ns, Name: name}, p)
		if apierrors.IsNotFound(err) {
			out[name] = "gone"
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[name] = podState(p)
	}
	return out
}

func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	if p.DeletionTimestamp != nil {
		s += ", terminating"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			s += fmt.Sprintf(", DisruptionTarget=%s (%s)", c.Status, c.Reason)
		}
	}
	return s
}

// waitPodState waits until the Pod's state (podStates) is want.
func waitPodState(t *testing.T, ns, name, want, why string) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if got := podStates(t, ns, []string{name})[name]; got != want {
			return fmt.Errorf("Pod %s is %q", name, got)
		}
		return nil
	}, "Pod %s should be %q: %s", name, want, why)
}

// keepPodStates checks that the Pods keep the states of want (podStates)
// for the quiet period.
func keepPodStates(t *testing.T, ns string, want map[string]string, why string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	framework.Consistently(t, framework.Quiet, func() error {
		if got := podStates(t, ns, names); !maps.Equal(got, want) {
			return fmt.Errorf("Pods:%s\nwant:%s", describe(got), describe(want))
		}
		return nil
	}, "%s", why)
}

// removePodsOnCleanup removes every Pod of ns when the test ends (their
// finalizers, then a deletion without grace period), so that the terminated
// Pods of one test do not count towards another's threshold.
func removePodsOnCleanup(t *testing.T, ns string) {
	t.Cleanup(func() { removePods(t, ns) })
}

func removePods(t *testing.T, ns string) {
	ctx := framework.Context(t)
	list := &corev1.PodList{}
	if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Errorf("listing Pods of %s: %v", ns, err)
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if len(p.Finalizers) > 0 {
			patch := client.MergeFrom(p.DeepCopy())
			p.Finalizers = nil
			if err := cp.Client.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the finalizers of Pod %s: %v", p.Name, err)
			}
		}
		if err := cp.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Pod %s: %v", p.Name, err)
		}
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d Pods left in %s", len(list.Items), ns)
		}
		return nil
	}, "the test's Pods should be removed")
}

// --- Jobs ---

type jobOption func(*batchv1.Job)

func ttl(seconds int32) jobOption {
	return func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To(seconds) }
}

func protectedJob(j *batchv1.Job) {
	j.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
}

// createJob creates a Job that no controller runs; it is deleted when the
// test ends.
func createJob(t *testing.T, ns, name string, opts ...jobOption) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "example.com/image"}}}}},
	}
	for _, o := range opts {
		o(j)
	}
	if err := cp.Client.Create(framework.Context(t), j); err != nil {
		t.Fatalf("creating Job %s: %v", name, err)
	}
	// A Job left behind would be collected during a later test.
	t.Cleanup(func() {
		err := cp.Client.Delete(framework.Context(t), j, client.Preconditions{UID: &j.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			t.Errorf("deleting Job %s: %v", name, err)
		}
	})
	return j
}

// finish gives a Job a finished status, as the Job controller would:
// Complete (or Failed) since at.
func finish(t *testing.T, j *batchv1.Job, condition batchv1.JobConditionType, at time.Time) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &batchv1.Job{}
		if err := cp.Client.Get(framework.Context(t), client.ObjectKeyFromObject(j), cur); err != nil {
			return err
		}
		when := metav1.NewTime(at)
		cur.Status.StartTime = ptr.To(metav1.NewTime(at.Add(-time.Minute)))
		cond := func(c batchv1.JobConditionType) batchv1.JobCondition {
			return batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: when, LastProbeTime: when, Reason: "Test"}
		}
		if condition == batchv1.JobComplete {
			cur.Status.CompletionTime = &when
			cur.Status.Succeeded = 1
			cur.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
		} else {
			cur.Status.Failed = 1
			cur.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
		}
		return cp.Client.Status().Update(framework.Context(t), cur)
	})
	if err != nil {
		t.Fatalf("finishing Job %s: %v", j.Name, err)
	}
}

// jobStates describes Jobs by name: "deleted" once gone or being deleted in
// the foreground (as a TTL deletion leaves it where no owner-reference
// collector finishes it), "kept" otherwise.
func jobStates(t *testing.T, ns string, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		j := &batchv1.Job{}
		err := cp.Client.Get(framework.Context(t), client.ObjectKey{Namespace: ns, Name: name}, j)
		switch {
		case apierrors.IsNotFound(err):
			out[name] = "deleted"
		case err != nil:
			t.Fatal(err)
		case slices.Contains(j.Finalizers, metav1.FinalizerDeleteDependents):
			out[name] = "deleted"
		default:
			out[name] = "kept"
		}
	}
	return out
}

// --- CertificateSigningRequests ---

var csrKind = framework.Kind{GVR: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), Kind: "CertificateSigningRequest"}

// csrSpec describes a CertificateSigningRequest to create: its conditions
// with how long ago each was last updated, and its certificate.
type csrSpec struct {
	name       string
	conditions map[certificatesv1.RequestConditionType]time.Duration
	// certificateExpiresIn, when set, issues a certificate that expires
	// then (negative: already expired).
	certificateExpiresIn time.Duration
	protected            bool
}

// createCSR creates the request, sets its conditions (Approved and Denied
// through the approval subresource, Failed through status) and its
// certificate; it is deleted when the test ends.
func createCSR(t *testing.T, s csrSpec) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	ctx := framework.Context(t)
	csr, key := framework.NewCSR(t, s.name)
	if s.protected {
		csr.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
	}
	csrs := cp.Clientset.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CertificateSigningRequest %s: %v", s.name, err)
	}
	cp.DeleteOnCleanup(t, framework.Object{Kind: csrKind, Name: csr.Name, UID: csr.UID})
	now := time.Now()
	var approval, failed []certificatesv1.CertificateSigningRequestCondition
	for _, c := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		ago, ok := s.conditions[c]
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
			t.Fatalf("approving or denying %s: %v", s.name, err)
		}
	}
	if len(failed) > 0 || s.certificateExpiresIn != 0 {
		csr.Status.Conditions = append(csr.Status.Conditions, failed...)
		if s.certificateExpiresIn != 0 {
			csr.Status.Certificate = certificate(t, key, now.Add(s.certificateExpiresIn))
		}
		if csr, err = csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting the status of %s: %v", s.name, err)
		}
	}
	return csr
}

// certificate returns a PEM self-signed certificate that expires at
// notAfter.
func certificate(t *testing.T, key *ecdsa.PrivateKey, notAfter time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// csrsLeft returns which of the named requests still exist, by name.
func csrsLeft(t *testing.T, names []string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, name := range names {
		_, err := cp.Clientset.CertificatesV1().CertificateSigningRequests().Get(framework.Context(t), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Fatal(err)
		default:
			out[name] = true
		}
	}
	return out
}

// --- comparisons ---

// sortedKeys returns the keys of m whose value is v, sorted.
func sortedKeys[V comparable](m map[string]V, v V) []string {
	var out []string
	for k, got := range m {
		if got == v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// describe formats a state map one entry a line, sorted.
func describe[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s: %v", k, m[k])
	}
	return b.String()
}

// writesTo returns the requests user made that wrote to resource.
func writesTo(t *testing.T, user string, resources ...string) []framework.AuditEntry {
	t.Helper()
	writes, err := cp.Writes(user)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(writes, func(e framework.AuditEntry) bool { return !slices.Contains(resources, e.ObjectRef.Resource) })
}
