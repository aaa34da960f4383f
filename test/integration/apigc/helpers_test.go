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
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	p := framework.NewPod(ns, name, node)
	for _, o := range opts {
		o(p)
	}
	if err := cp.Client.Create(framework.Context(t), p); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", ns, name, err)
	}
	return p
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
		cp.SetPodPhase(t, createPod(t, ns, name, node), phase, "")
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
	return states(t, ns, names, func() *corev1.Pod { return &corev1.Pod{} }, "gone", podState)
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
	pods(t, ns, names).keep(t, framework.Quiet, want, why)
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
	j := framework.NewJob(ns, name)
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

// jobStates describes Jobs by name: "deleted" once gone or being deleted in
// the foreground (as a TTL deletion leaves it where no owner-reference
// collector finishes it), "kept" otherwise.
func jobStates(t *testing.T, ns string, names []string) map[string]string {
	t.Helper()
	return states(t, ns, names, func() *batchv1.Job { return &batchv1.Job{} }, "deleted", func(j *batchv1.Job) string {
		if slices.Contains(j.Finalizers, metav1.FinalizerDeleteDependents) {
			return "deleted"
		}
		return "kept"
	})
}

// states describes the objects of ns by name: gone once deleted,
// otherwise what state says of it.
func states[T client.Object](t *testing.T, ns string, names []string, empty func() T, gone string, state func(T) string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		o := empty()
		err := cp.Client.Get(framework.Context(t), client.ObjectKey{Namespace: ns, Name: name}, o)
		switch {
		case apierrors.IsNotFound(err):
			out[name] = gone
		case err != nil:
			t.Fatal(err)
		default:
			out[name] = state(o)
		}
	}
	return out
}

// --- CertificateSigningRequests ---

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

// observed is what a test reads of its objects, by name (podStates,
// jobStates, csrsLeft), and what it calls them in messages.
type observed[V comparable] struct {
	what string
	read func() map[string]V
}

func pods(t *testing.T, ns string, names []string) observed[string] {
	return observed[string]{"Pods", func() map[string]string { return podStates(t, ns, names) }}
}

func jobs(t *testing.T, ns string, names []string) observed[string] {
	return observed[string]{"Jobs", func() map[string]string { return jobStates(t, ns, names) }}
}

// reach waits up to within until the objects are as want, and returns
// what it read last.
func (o observed[V]) reach(t *testing.T, within time.Duration, want map[string]V, why string) map[string]V {
	t.Helper()
	var got map[string]V
	framework.Eventually(t, within, func() error {
		if got = o.read(); !maps.Equal(got, want) {
			return fmt.Errorf("%s:%s", o.what, describe(got))
		}
		return nil
	}, "%s", why)
	return got
}

// keep checks that the objects stay as want for d.
func (o observed[V]) keep(t *testing.T, d time.Duration, want map[string]V, why string) {
	t.Helper()
	framework.Consistently(t, d, func() error {
		if got := o.read(); !maps.Equal(got, want) {
			return fmt.Errorf("%s:%s\nwant:%s", o.what, describe(got), describe(want))
		}
		return nil
	}, "%s", why)
}

// sameAsKCM waits up to within until kube-controller-manager, started at
// start, has left its objects (kcm) as ownergc left its own, then checks
// that it deletes nothing more for the quiet period.
func sameAsKCM[V comparable](t *testing.T, kcm observed[V], ownergc map[string]V, start time.Time, within time.Duration) {
	t.Helper()
	var got map[string]V
	err := framework.Poll(within, func() error {
		if got = kcm.read(); !maps.Equal(got, ownergc) {
			return fmt.Errorf("not the same yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after %s kube-controller-manager's %s differ from ownergc's:\nkube-controller-manager:%s\nownergc:%s",
			time.Since(start).Round(time.Second), kcm.what, describe(got), describe(ownergc))
	}
	kcm.keep(t, framework.Quiet, ownergc, "kube-controller-manager should delete nothing more")
}
