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

package main

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// What an idle member costs: the fleet process at rest with none, K and 2K
// engaged members (memory, goroutines, CPU, the host's writes), against one
// kube-controller-manager at rest on one member (memory, goroutines, CPU,
// that member's writes). Per member is the slope between K and 2K.

// idleWindow is how long a process at rest is watched for its CPU and the
// writes it causes. Two minutes: much of an idle member's work comes once
// a minute or more rarely (the dormant kinds' checks, the status
// heartbeats, the rediscovery every 5 minutes, the Go runtime's forced
// collection every 2), at the same moments for members engaged together,
// and a one-minute window held it once or not at all: across four full
// runs the CPU per idle member measured 0.25 to 1.10 millicores, the last
// three fleet profiles' two-minute windows (-fleet-profile=10,20) 0.61 to
// 0.88.
const idleWindow = 2 * time.Minute

// idleSettle is how long after every member is Ready the measurement waits:
// the engagement's own work (first statuses, events, Lease claims) is done.
const idleSettle = 30 * time.Second

// idleState is a collector process at rest.
type idleState struct {
	members    int
	rss        int64
	goroutines float64
	cpu        float64 // cores
	writes     float64 // per second, to the API server of the measure
}

// writeVerbs are the verbs of apiserver_request_total that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true, "APPLY": true}

// writesIn sums the writes of a difference of two scrapes.
func writesIn(r requests) float64 {
	var n float64
	for k, v := range r {
		if writeVerbs[k.verb] {
			n += v
		}
	}
	return n
}

// measureIdle watches p at rest for idleWindow: its CPU, the writes the API
// server of cs serves meanwhile (p's and any other client's: a baseline
// without p, or a slope, takes the others out), then its resident memory
// and goroutines.
func (b *bench) measureIdle(p *proc, members int, cs kubernetes.Interface) (idleState, error) {
	st := idleState{members: members}
	cpu0 := b.cpuNow(p)["collector"]
	writes, elapsed, err := writesOver(cs)
	if err != nil {
		return st, err
	}
	st.cpu = (b.cpuNow(p)["collector"] - cpu0) / elapsed
	st.writes = writes
	if st.rss, err = steadyRSS(p); err != nil {
		return st, err
	}
	if st.goroutines, err = p.goroutines(); err != nil {
		return st, err
	}
	b.logf("    %s at rest with %d members: %.1f MiB resident, %.0f goroutines, %.1f millicores, %.3f writes/s to the API server measured",
		p.name, members, mib(st.rss), st.goroutines, 1000*st.cpu, st.writes)
	return st, nil
}

// writesOver is the write rate the API server of cs serves over
// idleWindow, and the window's length in seconds.
func writesOver(cs kubernetes.Interface) (perSecond, elapsed float64, err error) {
	before, err := scrapeOf(cs)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	time.Sleep(idleWindow)
	after, err := scrapeOf(cs)
	if err != nil {
		return 0, 0, err
	}
	elapsed = time.Since(t0).Seconds()
	return writesIn(after.minus(before)) / elapsed, elapsed, nil
}

// perMember is the slope of an idle figure between two fleet sizes.
func perMember(a, b idleState, v func(idleState) float64) float64 {
	return (v(b) - v(a)) / float64(b.members-a.members)
}

// metricsReaderToken returns a token of a ServiceAccount in ns that may get
// /metrics on the API server of cs (ownergc's metrics server authorizes by
// it).
func metricsReaderToken(cs kubernetes.Interface, ns string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "bench-metrics-reader"
	if err := createdOrExists(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})); err != nil {
		return "", err
	}
	if err := createdOrExists(cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})); err != nil {
		return "", err
	}
	if err := createdOrExists(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})); err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// createdOrExists is a create's error, nil when the object exists already.
func createdOrExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
