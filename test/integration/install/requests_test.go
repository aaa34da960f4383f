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

package install_test

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// serviceAccountUser is the user name the API server gives the
// ServiceAccount namespace/name.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// startRecordingCluster starts a control plane whose audit log records
// every request, stopped when the test ends, and applies manifests to it.
func startRecordingCluster(t *testing.T, what string, manifests []byte) *cluster {
	t.Helper()
	cp, err := framework.StartBareControlPlaneRecordingRequests()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	c := &cluster{ControlPlane: cp, namespace: systemNamespace, serviceAccount: serviceAccount}
	if err := c.apply(manifests); err != nil {
		t.Fatalf("applying %s: %v", what, err)
	}
	return c
}

// requestsOf returns the requests the installed ServiceAccount sent.
func (c *cluster) requestsOf(t *testing.T) []framework.Request {
	t.Helper()
	rs, err := c.Requests(serviceAccountUser(c.namespace, c.serviceAccount))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("the audit log holds no request of the manager's ServiceAccount")
	}
	return rs
}

// resourceOf is the request's resource, "resource/subresource" for a
// subresource; "" for a request to no resource.
func resourceOf(r framework.Request) string {
	if r.ObjectRef.Subresource != "" {
		return r.ObjectRef.Resource + "/" + r.ObjectRef.Subresource
	}
	return r.ObjectRef.Resource
}

// discoveryPaths are the requests to no resource that the manager sends:
// discovery, the API server's version and OpenAPI, which every
// authenticated user may read (system:discovery, system:public-info-viewer).
var discoveryPaths = []string{"/api", "/apis", "/version", "/openapi/"}

// checkRequests checks what the manager sent, as the API server recorded
// it: nothing was forbidden, everything is one of uses (requests to no
// resource only discovery's), and every verb of every use was sent at
// least once, unless the use says why the workload did not need it. It
// returns the verbs sent on resources the manager has no rule of its own
// for (those of the "*" rules).
func checkRequests(t *testing.T, rs []framework.Request, uses []use, home string) []string {
	t.Helper()
	var forbidden, unknown, nonResource []framework.Request
	seen := map[string]bool{}
	var wildcardVerbs []string
	for _, r := range rs {
		if r.ResponseStatus.Code == http.StatusForbidden {
			forbidden = append(forbidden, r)
		}
		res := resourceOf(r)
		if res == "" {
			path, _, _ := strings.Cut(r.RequestURI, "?")
			if r.Verb != "get" || !slices.ContainsFunc(discoveryPaths, func(p string) bool {
				return path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/")
			}) {
				nonResource = append(nonResource, r)
			}
			continue
		}
		covered := false
		for i, u := range uses {
			if u.covers(r.Verb, r.ObjectRef.APIGroup, res, r.ObjectRef.Namespace, home) {
				covered = true
				// The most specific use is the one that needs the verb.
				if u.resource != "*" || !specificUse(uses, r, home) {
					seen[fmt.Sprint(i, r.Verb)] = true
				}
			}
		}
		if !covered {
			unknown = append(unknown, r)
		}
		if !specificUse(uses, r, home) && !slices.Contains(wildcardVerbs, r.Verb) {
			wildcardVerbs = append(wildcardVerbs, r.Verb)
		}
	}
	if len(forbidden) > 0 {
		t.Errorf("%d requests of the manager were forbidden:%s", len(forbidden), describeRequests(firstOf(forbidden, 20)))
	}
	if len(unknown) > 0 {
		t.Errorf("%d requests of the manager are no use the tests know of (add the code that sends them to the uses, and its rule to the roles):%s",
			len(unknown), describeRequests(firstOf(unknown, 20)))
	}
	if len(nonResource) > 0 {
		t.Errorf("%d requests of the manager to no resource are not discovery:%s", len(nonResource), describeRequests(firstOf(nonResource, 20)))
	}
	for i, u := range uses {
		for _, verb := range u.verbs {
			if !seen[fmt.Sprint(i, verb)] && u.notDriven[verb] == "" {
				t.Errorf("the manager never sent %s on %s (%s): the roles grant it for nothing, or the workload misses it", verb, groupResource(u.group, u.resource), u.by)
			}
		}
	}
	sort.Strings(wildcardVerbs)
	return wildcardVerbs
}

// checkWildcardVerbs checks that the verbs the manager sent on resources
// with no use of their own are exactly those of the uses of every resource
// (which the "*" rule grants: TestShippedRolesGrantWhatTheManagerUsesAndNoMore),
// but those the workload did not need.
func checkWildcardVerbs(t *testing.T, sent []string, uses []use) {
	t.Helper()
	var want []string
	for _, u := range uses {
		if u.group != "*" || u.resource != "*" {
			continue
		}
		for _, v := range u.verbs {
			if u.notDriven[v] == "" {
				want = append(want, v)
			}
		}
	}
	sort.Strings(want)
	if !slices.Equal(sent, want) {
		t.Errorf("on resources with no rule of their own the manager sent %v, want %v (the verbs of the \"*\" rule the workload needs)", sent, want)
	}
}

// specificUse reports whether a use of a named resource covers r.
func specificUse(uses []use, r framework.Request, home string) bool {
	return slices.ContainsFunc(uses, func(u use) bool {
		return u.resource != "*" && u.covers(r.Verb, r.ObjectRef.APIGroup, resourceOf(r), r.ObjectRef.Namespace, home)
	})
}

func firstOf[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// TestManagerSendsOnlyWhatItsRolesAllow runs the manager as the
// ServiceAccount of dist/install.yaml, with exactly the RBAC it grants, on
// a control plane that records every request, through what it does: the
// three cascades, owners that never existed, an owner in another
// namespace, the GCPolicy it creates and the status it writes, the three
// API-level collectors (terminated Pods, a terminating unscheduled Pod, a
// Pod of a missing Node; a finished Job; a denied request), the metrics
// endpoint and leader election. Then it checks every request the manager
// sent against the uses the roles are checked against
// (TestShippedRolesGrantWhatTheManagerUsesAndNoMore): none was forbidden,
// each is a known use, each use was needed, and the verbs the "*" rule
// grants are exactly those the manager sent on resources with no rule of
// their own.
func TestManagerSendsOnlyWhatItsRolesAllow(t *testing.T) {
	c := startRecordingCluster(t, "dist/install.yaml", readRepoFile(t, "dist/install.yaml"))
	p := c.startManager(t, "requests", "--leader-elect", "--leader-election-namespace", c.namespace)
	p.waitReady(t)
	ctx := framework.Context(t)

	// The owner-reference collector.
	ns := framework.CreateNamespace(t, c.Client)
	elsewhere := framework.CreateNamespace(t, c.Client)
	cascades := c.StartCascades(t, ns, framework.Secrets)
	foreign := c.Create(t, framework.ConfigMaps, elsewhere, "foreign-owner")
	misplaced := c.Create(t, framework.ConfigMaps, ns, "owner-in-another-namespace", framework.OwnedBy(foreign.Ref(false)))

	cascades.WaitCollected(t)
	c.WaitGone(t, "its owner is in another namespace: the reference counts as absent", misplaced)

	// The GCPolicy, created by the manager with the defaults; then the
	// API-level collectors, enabled by an administrator.
	framework.WaitPolicyInForce(t, c.Client, "the manager should create the GCPolicy and write its status")
	podNS := framework.CreateNamespace(t, c.Client)
	older := c.createPod(t, podNS, "terminated-older", "")
	c.SetPodPhase(t, older, corev1.PodSucceeded, "")
	// Creation timestamps have a resolution of a second. The newer Pod is
	// within the threshold, until the Pods below are marked Failed.
	time.Sleep(1100 * time.Millisecond)
	newer := c.createPod(t, podNS, "terminated-newer", "")
	c.SetPodPhase(t, newer, corev1.PodSucceeded, "")
	unscheduled := c.createPod(t, podNS, "terminating-unscheduled", "", framework.HoldFinalizer)
	if err := c.Client.Delete(ctx, unscheduled); err != nil {
		t.Fatal(err)
	}
	lost := c.createPod(t, podNS, "bound-to-a-missing-node", "node-that-never-existed")
	job := c.createFinishedJob(t, podNS, "finished")
	csr := c.CreateCSR(t, framework.CSRSpec{Name: "denied-2h-ago",
		Conditions: map[certificatesv1.RequestConditionType]time.Duration{certificatesv1.CertificateDenied: 2 * time.Hour}})
	framework.SetPolicy(t, c.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Collectors.TerminatedPods = ownergcv1alpha1.TerminatedPodsCollector{Enabled: true, Threshold: ptr.To[int32](1)}
		s.Collectors.FinishedJobs.Enabled = true
		s.Collectors.CertificateSigningRequests = ownergcv1alpha1.CertificateSigningRequestsCollector{Enabled: true,
			DeniedAfter: &metav1.Duration{Duration: time.Hour}}
	})
	// A scrape: the manager reviews the scraper's token and access.
	scraperToken := c.NewIdentityWithClusterRole(t, c.namespace, scraper, metricsRole).Token
	if code, _ := p.get(t, "/metrics", scraperToken); code != http.StatusOK {
		t.Errorf("GET /metrics by the metrics reader answered %d", code)
	}

	framework.Eventually(t, framework.CascadeTimeout, func() error {
		var gone []string
		for _, o := range []client.Object{older, job, csr} {
			if framework.Exists(t, c.Client, o) {
				gone = append(gone, o.GetName())
			}
		}
		if len(gone) > 0 {
			return fmt.Errorf("still there: %v", gone)
		}
		return nil
	}, "the API-level collectors should delete the older terminated Pod, the finished Job and the denied request")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		cur := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(unscheduled), cur); err != nil {
			return err
		}
		if cur.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %s", cur.Status.Phase)
		}
		return nil
	}, "the terminating unscheduled Pod should be marked Failed")
	// The terminated-Pod collector waits 40 s before it checks that a
	// Node is gone.
	framework.WaitGone(t, c.Client, lost, 90*time.Second, "the Node it is bound to does not exist")
	// The manager gives its Lease back when it stops.
	p.Stop()

	rs := c.requestsOf(t)
	checkWildcardVerbs(t, checkRequests(t, rs, managerUses, c.namespace), managerUses)
	if t.Failed() {
		t.Logf("the manager's requests:%s", lines(distinct(rs)))
	}
}

// distinct returns one request of each verb, group, resource and namespace,
// sorted.
func distinct(rs []framework.Request) []string {
	set := map[string]bool{}
	for _, r := range rs {
		ns := r.ObjectRef.Namespace
		if ns == "" {
			ns = "-"
		}
		what := groupResource(r.ObjectRef.APIGroup, resourceOf(r))
		if what == "" {
			what, _, _ = strings.Cut(r.RequestURI, "?")
		}
		set[fmt.Sprintf("%-7s %s in %s (%d)", r.Verb, what, ns, r.ResponseStatus.Code)] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// createPod creates a Pod bound to node ("" for none), with finalizers.
func (c *cluster) createPod(t *testing.T, ns, name, node string, finalizers ...string) *corev1.Pod {
	t.Helper()
	p := framework.NewPod(ns, name, node)
	p.Finalizers = finalizers
	if err := c.Client.Create(framework.Context(t), p); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", ns, name, err)
	}
	if len(finalizers) > 0 {
		t.Cleanup(func() {
			cur := &corev1.Pod{}
			if err := c.Client.Get(framework.Context(t), client.ObjectKeyFromObject(p), cur); err == nil {
				cur.Finalizers = nil
				_ = c.Client.Update(framework.Context(t), cur)
			}
		})
	}
	return p
}

// createFinishedJob creates a Job, which no controller runs, with
// ttlSecondsAfterFinished 0, and makes it Complete, as the Job controller
// would.
func (c *cluster) createFinishedJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j := framework.NewJob(ns, name)
	j.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
	if err := c.Client.Create(framework.Context(t), j); err != nil {
		t.Fatalf("creating Job %s: %v", name, err)
	}
	c.FinishJob(t, j, batchv1.JobComplete, time.Now())
	return j
}
