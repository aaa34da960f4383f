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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

// withPolicy returns a copy of the built-in defaults changed by change.
func withPolicy(change func(*policy.Policy)) *policy.Policy {
	p := *policy.Defaults()
	change(&p)
	return &p
}

func eventually(t *testing.T, cond func() error, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pod(name string, phase corev1.PodPhase, created time.Time, evicted bool) *podInfo {
	return &podInfo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Phase: phase, Evicted: evicted}
}

// The excess of terminated Pods is chosen as podgc chooses it: evicted Pods
// first, then the oldest, then by name; running Pods do not count;
// protected Pods count but are passed over.
func TestSelectTerminated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := []*podInfo{
		pod("running-oldest", corev1.PodRunning, t0, false),
		pod("b-old", corev1.PodSucceeded, t0.Add(time.Second), false),
		pod("a-old", corev1.PodFailed, t0.Add(time.Second), false),
		pod("new", corev1.PodSucceeded, t0.Add(3*time.Second), false),
		pod("evicted-newest", corev1.PodFailed, t0.Add(4*time.Second), true),
		pod("middle", corev1.PodFailed, t0.Add(2*time.Second), false),
	}
	names := func(ps []*podInfo) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	p := policy.Defaults()
	for threshold, want := range map[int][]string{
		5: nil,
		4: {"evicted-newest"},
		2: {"evicted-newest", "a-old", "b-old"},
		1: {"evicted-newest", "a-old", "b-old", "middle"},
	} {
		if got, _ := selectTerminated(all, threshold, p); !slices.Equal(names(got), want) {
			t.Errorf("threshold %d: selected %v, want %v", threshold, got, want)
		}
	}
	all[2].Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}
	selected, protected := selectTerminated(all, 2, p)
	if got, want := names(selected), []string{"evicted-newest", "b-old", "middle"}; !slices.Equal(got, want) {
		t.Errorf("with a-old protected: selected %v, want %v", got, want)
	}
	if got, want := names(protected), []string{"a-old"}; !slices.Equal(got, want) {
		t.Errorf("with a-old protected: passed over %v, want %v (to be reported)", got, want)
	}
}

// Each rule of the cleaner, in its order, with the durations of the policy;
// when none applies, the next deadline.
func TestDecideCSR(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	d := policy.CertificateSigningRequests{ApprovedAfter: time.Hour, DeniedAfter: 30 * time.Minute, PendingAfter: 24 * time.Hour}
	cond := func(t certificatesv1.RequestConditionType, age time.Duration) csrCondition {
		return csrCondition{Type: t, LastUpdateTime: ago(age)}
	}
	expired, valid := now.Add(-time.Second), now.Add(10*time.Hour)
	for _, tc := range []struct {
		name   string
		csr    csrInfo
		reason string
		next   time.Time
	}{
		{"issued, approved 2h ago", csrInfo{Issued: true, NotAfter: &valid, Conditions: []csrCondition{cond(certificatesv1.CertificateApproved, 2*time.Hour)}}, ReasonApproved, time.Time{}},
		{"issued, approved 10m ago", csrInfo{Issued: true, NotAfter: &valid, Conditions: []csrCondition{cond(certificatesv1.CertificateApproved, 10*time.Minute)}}, "", now.Add(50 * time.Minute)},
		{"issued, approved 10m ago, certificate expired", csrInfo{Issued: true, NotAfter: &expired, Conditions: []csrCondition{cond(certificatesv1.CertificateApproved, 10*time.Minute)}}, ReasonExpired, time.Time{}},
		{"issued, certificate expired, never approved", csrInfo{Issued: true, NotAfter: &expired}, ReasonPending, time.Time{}},
		{"denied 31m ago", csrInfo{Conditions: []csrCondition{cond(certificatesv1.CertificateDenied, 31*time.Minute)}}, ReasonDenied, time.Time{}},
		{"denied 29m ago", csrInfo{Conditions: []csrCondition{cond(certificatesv1.CertificateDenied, 29*time.Minute)}}, "", now.Add(time.Minute)},
		{"failed 2h ago", csrInfo{Conditions: []csrCondition{cond(certificatesv1.CertificateFailed, 2*time.Hour)}}, ReasonFailed, time.Time{}},
		{"approved, unissued 25h ago", csrInfo{Conditions: []csrCondition{cond(certificatesv1.CertificateApproved, 25*time.Hour)}}, ReasonApprovedUnissued, time.Time{}},
		{"approved, unissued 2h ago", csrInfo{Conditions: []csrCondition{cond(certificatesv1.CertificateApproved, 2*time.Hour)}}, "", now.Add(22 * time.Hour)},
		{"condition without lastUpdateTime", csrInfo{Conditions: []csrCondition{{Type: certificatesv1.CertificateDenied}}}, "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.csr
			c.CreationTimestamp = ago(48 * time.Hour)
			if len(c.Conditions) > 0 {
				c.CreationTimestamp = ago(0)
			}
			reason, _, next := decideCSR(&c, d, now)
			if reason != tc.reason || !next.Equal(tc.next) {
				t.Errorf("got %q (next %v), want %q (next %v)", reason, next, tc.reason, tc.next)
			}
		})
	}
	pending := csrInfo{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour)}}
	if reason, _, next := decideCSR(&pending, d, now); reason != "" || !next.Equal(now.Add(23*time.Hour)) {
		t.Errorf("pending for 1h: got %q, next %v; want nothing before %v", reason, next, now.Add(23*time.Hour))
	}
}

// The cache keeps what the rules read, nothing else.
func TestTrim(t *testing.T) {
	p, _ := trimPodsAndNodes(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{"big": strings.Repeat("x", 1000), ownergcv1alpha1.ProtectedAnnotation: "true"}},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "long"},
	})
	pi, ok := p.(*podInfo)
	if !ok || pi.NodeName != "n" || !pi.Evicted || pi.Labels != nil || len(pi.Annotations) != 1 || pi.ResourceVersion != "7" {
		t.Errorf("trimmed Pod %+v", p)
	}
	n, _ := trimPodsAndNodes(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}})
	if ni, ok := n.(*nodeInfo); !ok || ni.Ready || !ni.OutOfService {
		t.Errorf("trimmed Node %+v", n)
	}
	if again, _ := trimPodsAndNodes(p); again != p {
		t.Error("trimming is not idempotent")
	}
	j := trimJob(&batchv1.Job{Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ptr.To[int32](5)}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(100, 0)},
	}}})
	if !j.Finished || !j.FinishedAt.Equal(ptr.To(metav1.Unix(100, 0))) || *j.TTLSecondsAfterFinished != 5 {
		t.Errorf("trimmed Job %+v", j)
	}
}

// Marking a Pod Failed is a status patch conditional on its UID and
// resourceVersion; an orphan gets podgc's DisruptionTarget condition.
func TestFailedStatusPatch(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "42", Generation: 3},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	data, err := failedStatusPatch(p, true)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Status   corev1.PodStatus  `json:"status"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		t.Fatal(err)
	}
	if patch.Metadata.UID != "u1" || patch.Metadata.ResourceVersion != "42" || patch.Status.Phase != corev1.PodFailed || patch.Status.ObservedGeneration != 3 {
		t.Errorf("patch %s", data)
	}
	found := false
	for _, c := range patch.Status.Conditions {
		found = found || (c.Type == corev1.DisruptionTarget && c.Reason == "DeletionByPodGC" && c.Status == corev1.ConditionTrue)
	}
	if !found {
		t.Errorf("patch %s has no DisruptionTarget condition", data)
	}
}

// The finished-Job collector decides again from the live Job: a TTL raised
// since the cache saw the Job keeps it; once the live TTL has expired, the
// Job is deleted in the foreground with preconditions.
func TestJobTTLIsCheckedLive(t *testing.T) {
	finished := metav1.NewTime(time.Now().Add(-time.Hour))
	live := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "j1", ResourceVersion: "5"},
		Spec:       batchv1.JobSpec{TTLSecondsAfterFinished: ptr.To[int32](7200)},
		Status:     batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: finished}}},
	}
	cs := fake.NewClientset(live)
	store := policy.NewStore()
	store.Set(withPolicy(func(p *policy.Policy) { p.Collectors.FinishedJobs.Enabled = true }))
	r := NewFinishedJobs(Options{Client: cs, Policy: store}).(*runner[string])
	s := &session[string]{r: r,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer s.queue.ShutDown()
	w := startJobs(s).(*jobs)
	stale := trimJob(live)
	stale.TTLSecondsAfterFinished = ptr.To[int32](0)
	if err := w.jobs.GetStore().Add(stale); err != nil {
		t.Fatal(err)
	}
	deletes := func() []k8stesting.DeleteActionImpl {
		var out []k8stesting.DeleteActionImpl
		for _, a := range cs.Actions() {
			if d, ok := a.(k8stesting.DeleteActionImpl); ok {
				out = append(out, d)
			}
		}
		return out
	}
	if err := w.process(context.Background(), "ns/job"); err != nil {
		t.Fatal(err)
	}
	if d := deletes(); len(d) != 0 {
		t.Fatalf("the Job was deleted although its live TTL (2h) has not expired: %+v", d)
	}

	live.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
	live.ResourceVersion = "6"
	if _, err := cs.BatchV1().Jobs("ns").Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.process(context.Background(), "ns/job"); err != nil {
		t.Fatal(err)
	}
	d := deletes()
	if len(d) != 1 {
		t.Fatalf("deletes %+v, want one", d)
	}
	opts := d[0].DeleteOptions
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationForeground ||
		opts.Preconditions == nil || *opts.Preconditions.UID != "j1" || opts.Preconditions.ResourceVersion == nil {
		t.Errorf("delete options %+v: want Foreground with UID and resourceVersion preconditions", opts)
	}
}

func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "test"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCertificateNotAfter(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	notAfter := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := certificateNotAfter(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); got == nil || !got.Equal(notAfter) {
		t.Errorf("NotAfter %v, want %v", got, notAfter)
	}
	if got := certificateNotAfter([]byte("not PEM")); got != nil {
		t.Errorf("NotAfter of garbage %v, want none", got)
	}
}

// A collector costs nothing while disabled (no request at all), runs while
// enabled, decides without writing in DryRun, leaves protected objects,
// deletes the others with preconditions in Enforce, and stops when
// disabled again.
//
// Run with a pool of the session's own, and with the workers a fleet's
// members share: their deletions run on the shared workers, and once
// disabled the collector holds none.
func TestCollectorLifecycle(t *testing.T) {
	t.Run("own pool", func(t *testing.T) { collectorLifecycle(t, nil) })
	t.Run("shared workers", func(t *testing.T) { collectorLifecycle(t, workers.NewShared(0)) })
}

func collectorLifecycle(t *testing.T, shared *workers.Shared) {
	old := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	denied := func(name string, annotations map[string]string) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1", Annotations: annotations},
			Spec:       certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(t)},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
				{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, LastUpdateTime: old}}},
		}
	}
	cs := fake.NewClientset(denied("stale", nil), denied("protected", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}))
	// deletes counts the deletions, onShared those made while a shared
	// worker ran.
	var deletes, onShared atomic.Int32
	cs.PrependReactor("delete", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes.Add(1)
		if shared != nil && shared.Running() > 0 {
			onShared.Add(1)
		}
		return false, nil, nil
	})
	store := policy.NewStore()
	c := NewCertificateSigningRequests(Options{Client: cs, Policy: store, Shared: shared})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	eventually(t, func() error {
		if c.(*runner[string]).kicksHandled.Load() == 0 {
			return fmt.Errorf("the collector has not looked at the policy yet")
		}
		return nil
	}, "the collector should look at the policy when it starts")
	if a := cs.Actions(); len(a) != 0 {
		t.Fatalf("the disabled collector sent requests: %v", a)
	}
	if st := c.Status(); st.Enabled || st.Running {
		t.Fatalf("status %+v, want disabled", st)
	}

	store.Set(withPolicy(func(p *policy.Policy) {
		p.Collectors.CertificateSigningRequests = policy.CertificateSigningRequests{Enabled: true, ApprovedAfter: time.Hour, DeniedAfter: time.Hour, PendingAfter: 24 * time.Hour}
		p.DryRun = true
	}))
	eventually(t, func() error {
		if st := c.Status(); !st.Synced || st.DryRunDeletions != 1 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}, "enabled in DryRun, the collector should sync and decide one deletion")
	list, _ := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if len(list.Items) != 2 {
		t.Fatalf("%d requests left in DryRun, want 2", len(list.Items))
	}

	store.Set(withPolicy(func(p *policy.Policy) {
		p.Collectors.CertificateSigningRequests = policy.CertificateSigningRequests{Enabled: true, ApprovedAfter: time.Hour, DeniedAfter: time.Hour, PendingAfter: 24 * time.Hour}
	}))
	eventually(t, func() error {
		list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != "protected" {
			return fmt.Errorf("%d requests left", len(list.Items))
		}
		return nil
	}, "in Enforce the stale request should be deleted, the protected one kept")
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			if p := d.DeleteOptions.Preconditions; p == nil || p.UID == nil || p.ResourceVersion == nil {
				t.Errorf("delete %s without UID and resourceVersion preconditions", d.Name)
			}
		}
	}
	if st := c.Status(); st.Deleted != 1 || st.LastRun.IsZero() {
		t.Errorf("status %+v, want 1 deleted and a last run", st)
	}

	if shared != nil && (deletes.Load() == 0 || onShared.Load() != deletes.Load()) {
		t.Errorf("%d of %d deletions made while a shared worker ran, want all", onShared.Load(), deletes.Load())
	}

	store.Set(policy.Defaults())
	eventually(t, func() error {
		if st := c.Status(); st.Running || st.Enabled {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}, "disabled, the collector should stop")
	if shared != nil {
		if n := shared.Running(); n != 0 {
			t.Errorf("%d shared workers run once the collector is disabled, want none", n)
		}
	}
}

// A Pod selected beyond the threshold is deleted only while there are still
// more terminated Pods than the policy's threshold when its turn comes: the
// threshold may have been raised, or other deletions reached it, since the
// sweep that selected it.
func TestThresholdIsCheckedAgainWhenAPodsTurnComes(t *testing.T) {
	store := policy.NewStore()
	setThreshold := func(n int) {
		store.Set(withPolicy(func(p *policy.Policy) {
			p.Collectors.TerminatedPods = policy.TerminatedPods{Enabled: true, Threshold: n}
		}))
	}
	w := &pods{session: &session[podItem]{r: &runner[podItem]{opts: Options{Policy: store}}}}
	t0 := time.Now()
	running := pod("running", corev1.PodRunning, t0, false)
	var done []*podInfo
	for i := range 3 {
		p := pod(fmt.Sprint("done-", i), corev1.PodSucceeded, t0, false)
		w.count(nil, p)
		done = append(done, p)
	}
	w.count(nil, running)
	setThreshold(2)
	if !w.stillApplies(done[0], ReasonTerminated) {
		t.Fatal("3 terminated Pods, threshold 2: the selected one should still be deleted")
	}
	setThreshold(3)
	if w.stillApplies(done[0], ReasonTerminated) {
		t.Fatal("threshold raised to 3: no terminated Pod is beyond it any more")
	}
	setThreshold(2)
	w.count(done[2], nil) // deleted meanwhile
	if w.stillApplies(done[0], ReasonTerminated) {
		t.Fatal("another deletion reached the threshold: nothing more to delete")
	}
	finished := *running
	finished.Phase = corev1.PodFailed
	w.count(running, &finished)
	if !w.stillApplies(done[0], ReasonTerminated) {
		t.Fatal("a Pod that terminated meanwhile counts")
	}
}

// A Pod protected after the cache's copy was decided on is neither marked
// Failed nor deleted: the live read before the writes checks again.
func TestPodProtectedSinceTheDecisionIsLeftAlone(t *testing.T) {
	live := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p", ResourceVersion: "2",
			Annotations: map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}},
		Spec:   corev1.PodSpec{NodeName: "gone"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	cs := fake.NewClientset(live)
	store := policy.NewStore()
	store.Set(withPolicy(func(p *policy.Policy) {
		p.Collectors.TerminatedPods = policy.TerminatedPods{Enabled: true, Threshold: 10}
	}))
	r := newRunner(definition[podItem]{metrics: metrics.TerminatedPods}, Options{Client: cs, Policy: store})
	w := &pods{session: &session[podItem]{r: r}, handled: lru.New(10)}
	cached := &podInfo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p", ResourceVersion: "1"}, NodeName: "gone", Phase: corev1.PodRunning}
	d := deletion{object: &cached.ObjectMeta, kind: "Pod", reason: ReasonOrphaned}
	if err := w.markFailedAndDelete(context.Background(), cached, d); err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a protected Pod was written to: %s %s", a.GetVerb(), a.GetSubresource())
		}
	}
}

// A collector whose cache cannot sync (RBAC forbids the list, say) says why
// in its status.
func TestCollectorThatCannotListSaysWhy(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "certificatesigningrequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(certificatesv1.Resource("certificatesigningrequests"), "", fmt.Errorf("RBAC says no"))
	})
	store := policy.NewStore()
	c := NewCertificateSigningRequests(Options{Client: cs, Policy: store})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	store.Set(withPolicy(func(p *policy.Policy) {
		p.Collectors.CertificateSigningRequests = policy.CertificateSigningRequests{Enabled: true, ApprovedAfter: time.Hour, DeniedAfter: time.Hour, PendingAfter: time.Hour}
	}))
	eventually(t, func() error {
		if st := c.Status(); st.Synced || !strings.Contains(st.ListError, "RBAC says no") {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}, "the status should say why the cache does not sync")
}

// Each collector's session builds its informers from the typed clients,
// with the indexers its work adds.
func TestEverySessionBuildsItsInformers(t *testing.T) {
	cs := fake.NewClientset()
	opts := Options{Client: cs, Policy: policy.NewStore()}
	pods := &session[podItem]{r: NewTerminatedPods(opts).(*runner[podItem])}
	startPods(pods, time.Minute)
	jobs := &session[string]{r: NewFinishedJobs(opts).(*runner[string])}
	startJobs(jobs)
	csrs := &session[string]{r: NewCertificateSigningRequests(opts).(*runner[string])}
	startCSRs(csrs)
	for name, got := range map[string]int{"terminated Pods": len(pods.informers), "finished Jobs": len(jobs.informers), "CSRs": len(csrs.informers)} {
		want := map[string]int{"terminated Pods": 2, "finished Jobs": 1, "CSRs": 1}[name]
		if got != want {
			t.Errorf("the %s collector's session has %d informers, want %d", name, got, want)
		}
	}
}
