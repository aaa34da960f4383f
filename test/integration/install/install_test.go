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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

const (
	leaseName   = "garbage-collector.ownergc.io"
	scraper     = "metrics-scraper"
	metricsRole = "ownergc-metrics-reader"
	graphReader = "graph-reader"
	graphRole   = "ownergc-graph-reader"
)

// TestManagerWorksWithTheInstalledRBAC runs the binary as the ServiceAccount
// of dist/install.yaml, with exactly the RBAC it grants.
func TestManagerWorksWithTheInstalledRBAC(t *testing.T) {
	checkManagerWorks(t, installed)
}

// checkManagerWorks runs the binary as the installed ServiceAccount, with
// leader election in the installed namespace, and plays a cascade, an
// orphaning and a foreground deletion; then it checks that the manager
// created the GCPolicy with the defaults and writes its status.
func checkManagerWorks(t *testing.T, c *cluster) {
	t.Helper()
	p := c.startManager(t, "rbac", "--leader-elect", "--leader-election-namespace", c.namespace)
	p.waitReady(t)

	ns := framework.CreateNamespace(t, c.Client)
	// Background cascade.
	owner := c.Create(t, framework.ConfigMaps, ns, "owner")
	child := c.Create(t, framework.ConfigMaps, ns, "child", framework.OwnedBy(owner.Ref(false)))
	c.Delete(t, owner)
	c.WaitGone(t, "its owner was deleted", child)

	// Orphaning.
	owner = c.Create(t, framework.ConfigMaps, ns, "orphan-owner")
	orphan := c.Create(t, framework.ConfigMaps, ns, "orphan", framework.OwnedBy(owner.Ref(true)))
	c.DeleteWith(t, owner, metav1.DeletePropagationOrphan)
	c.WaitGone(t, "ownergc removes the orphan finalizer once the dependent is orphaned", owner)
	if cur, ok := c.Get(t, orphan); !ok || len(cur.GetOwnerReferences()) != 0 {
		t.Fatalf("the orphaned dependent should survive without owner references: exists=%v %v", ok, framework.OwnerUIDs(cur))
	}

	// Foreground, held by a finalizer on the blocking dependent.
	owner = c.Create(t, framework.ConfigMaps, ns, "fg-owner")
	held := c.Create(t, framework.ConfigMaps, ns, "held", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	c.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	c.WaitDeleting(t, held, framework.HoldFinalizer, "ownergc deletes the blocking dependent of a foreground deletion")
	c.MustExist(t, "the owner must wait for its blocking dependent", owner)
	c.RemoveFinalizer(t, held, framework.HoldFinalizer)
	c.WaitGone(t, "its blocking dependent is gone", owner)

	// The leader creates the GCPolicy with the defaults (when none exists) and
	// writes its status.
	policy := framework.WaitPolicyInForce(t, c.Client, "the manager should create the GCPolicy and write its status with the installed RBAC")
	if policy.Labels[ownergcv1alpha1.LabelManagedBy] != ownergcv1alpha1.ManagedByOwnergc {
		t.Errorf("the GCPolicy has labels %v: want it created by the manager (%s=%s)",
			policy.Labels, ownergcv1alpha1.LabelManagedBy, ownergcv1alpha1.ManagedByOwnergc)
	}
	if strings.Contains(p.Log(), "forbidden") {
		t.Fatalf("the manager hit a permission error:\n%s", p.Tail(40))
	}
}

// TestMetricsAndGraphEndpointsRequireAuthorization checks the metrics
// server refuses anonymous and unauthorized requests, serves /metrics to a
// subject granted the metrics reader's role and the whole graph only to one
// granted the graph reader's: a Prometheus scraper must not read every
// object name in the cluster.
func TestMetricsAndGraphEndpointsRequireAuthorization(t *testing.T) {
	p := startManager(t, "metrics")
	p.waitReady(t)
	scraperToken := installed.NewIdentityWithClusterRole(t, systemNamespace, scraper, metricsRole).Token
	graphToken := installed.NewIdentityWithClusterRole(t, systemNamespace, graphReader, graphRole).Token
	denied := installed.NewIdentityWithClusterRole(t, systemNamespace, "nobody", "").Token

	for _, path := range []string{"/metrics", "/debug/graph"} {
		if code, _ := p.get(t, path, ""); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s answered %d, want 401", path, code)
		}
		if code, _ := p.get(t, path, denied); code != http.StatusForbidden {
			t.Errorf("GET %s by a subject without the role answered %d, want 403", path, code)
		}
	}
	code, body := p.get(t, "/metrics", scraperToken)
	if code != http.StatusOK || !strings.Contains(body, "ownergc_graph_nodes") || !strings.Contains(body, `name="ownergc_attempt_to_delete"`) {
		t.Fatalf("GET /metrics answered %d without ownergc's metrics:\n%s", code, framework.LastLines(body, 20))
	}
	if code, _ := p.get(t, "/debug/graph", scraperToken); code != http.StatusForbidden {
		t.Errorf("GET /debug/graph by the metrics reader answered %d, want 403", code)
	}
	if code, _ := p.get(t, "/metrics", graphToken); code != http.StatusForbidden {
		t.Errorf("GET /metrics by the graph reader answered %d, want 403", code)
	}
	code, body = p.get(t, "/debug/graph", graphToken)
	if code != http.StatusOK || !strings.HasPrefix(body, "strict digraph full {") {
		t.Fatalf("GET /debug/graph answered %d: %s", code, framework.LastLines(body, 5))
	}
}

var writeMetric = regexp.MustCompile(`(?m)^ownergc_api_requests_total\{verb="(delete|patch)"\} (\d+)`)

// writes returns the number of deletes and patches a manager has sent.
func (p *process) writes(t *testing.T, bearer string) int {
	t.Helper()
	code, body := p.get(t, "/metrics", bearer)
	if code != http.StatusOK {
		t.Fatalf("scraping %s: %d", p.Name, code)
	}
	n := 0
	for _, m := range writeMetric.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.Atoi(m[2])
		n += v
	}
	return n
}

// metric returns the value of a metric of the manager with the label
// name=<label>, 0 when absent.
func (p *process) metric(t *testing.T, bearer, metric, label string) float64 {
	t.Helper()
	code, body := p.get(t, "/metrics", bearer)
	if code != http.StatusOK {
		t.Fatalf("scraping %s: %d", p.Name, code)
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric) + `\{[^}]*\bname="` + regexp.QuoteMeta(label) + `"[^}]*\} (\S+)`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("metric %s of %s: %v", metric, p.Name, err)
	}
	return v
}

func leaseHolder(t *testing.T) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := installed.Client.Get(framework.Context(t), client.ObjectKey{Namespace: systemNamespace, Name: leaseName}, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return ""
		}
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// TestStandbyTakesOverAnInterruptedCascade runs two replicas with leader
// election, kills the leader in the middle of a cascade, and checks that the
// standby finishes it, and that it sent no write while the leader held the
// lease.
func TestStandbyTakesOverAnInterruptedCascade(t *testing.T) {
	bearer := installed.NewIdentityWithClusterRole(t, systemNamespace, scraper, metricsRole).Token
	args := []string{"--leader-elect", "--leader-election-namespace", systemNamespace, "--kube-api-qps=40", "--kube-api-burst=10"}

	// Wait for any earlier leader's lease to be released or expire.
	framework.Eventually(t, time.Minute, func() error {
		if h := leaseHolder(t); h != "" {
			lease := &coordinationv1.Lease{}
			_ = installed.Client.Get(framework.Context(t), client.ObjectKey{Namespace: systemNamespace, Name: leaseName}, lease)
			if lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) < 20*time.Second {
				return fmt.Errorf("lease held by %s", h)
			}
		}
		return nil
	}, "the lease should be free")

	previous := leaseHolder(t)
	leader := startManager(t, "leader", args...)
	leader.waitReady(t)
	var leaderID string
	framework.Eventually(t, time.Minute, func() error {
		if leaderID = leaseHolder(t); leaderID == "" || leaderID == previous {
			return fmt.Errorf("holder is %q", leaderID)
		}
		return nil
	}, "the first replica should take the lease")
	standby := startManager(t, "standby", args...)
	standby.waitReady(t)

	// A few cascades, and an owner reference to another namespace: the
	// standby queues nothing and records no events, the leader does both.
	warm := framework.CreateNamespace(t, installed.Client)
	elsewhere := framework.CreateNamespace(t, installed.Client)
	for c := range 3 {
		owner := installed.Create(t, framework.ConfigMaps, warm, fmt.Sprint("owner-", c))
		installed.CreateMany(t, framework.ConfigMaps, warm, fmt.Sprint("dep-", c), 30, framework.OwnedBy(owner.Ref(false)))
		installed.Delete(t, owner)
	}
	foreign := installed.Create(t, framework.ConfigMaps, elsewhere, "foreign-owner")
	misplaced := installed.Create(t, framework.ConfigMaps, warm, "names-an-owner-in-another-namespace", framework.OwnedBy(foreign.Ref(false)))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if n := installed.CountDependents(t, framework.ConfigMaps, warm); n > 0 {
			return fmt.Errorf("%d dependents left", n)
		}
		return nil
	}, "the leader should collect the dependents of the deleted owners and the object naming an owner in another namespace")
	for _, q := range []string{"ownergc_attempt_to_delete", "ownergc_attempt_to_orphan"} {
		for _, metric := range []string{"workqueue_depth", "workqueue_adds_total"} {
			if v := standby.metric(t, bearer, metric, q); v != 0 {
				t.Errorf("standby: %s{name=%q} is %v, want 0", metric, q, v)
			}
			if metric == "workqueue_adds_total" && leader.metric(t, bearer, metric, q) == 0 && q == "ownergc_attempt_to_delete" {
				t.Errorf("leader: %s{name=%q} is 0: the metric does not count what it should", metric, q)
			}
		}
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		events := &eventsv1.EventList{}
		if err := installed.Client.List(framework.Context(t), events, client.InNamespace(warm)); err != nil {
			return err
		}
		n := 0
		for _, e := range events.Items {
			if e.Regarding.UID == misplaced.UID && e.Reason == "OwnerRefInvalidNamespace" {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%d OwnerRefInvalidNamespace events about %s, want exactly one, the leader's", n, misplaced.Name)
		}
		return nil
	}, "only the leader records events")

	ns := framework.CreateNamespace(t, installed.Client)
	owner := installed.Create(t, framework.Secrets, ns, "owner")
	const n = 400
	installed.CreateMany(t, framework.ConfigMaps, ns, "dep", n, framework.OwnedBy(owner.Ref(false)))
	remaining := func() int { return installed.CountDependents(t, framework.ConfigMaps, ns) }
	installed.Delete(t, owner)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if left := remaining(); left > n-20 {
			return fmt.Errorf("%d dependents left", left)
		}
		return nil
	}, "the leader should be collecting")
	if w := standby.writes(t, bearer); w != 0 {
		t.Fatalf("the standby sent %d writes while the leader held the lease", w)
	}
	if left := remaining(); left < n/4 {
		t.Fatalf("the cascade is nearly over (%d left) before the leader could be killed; slow the leader down", left)
	}
	if h := leaseHolder(t); h != leaderID {
		t.Fatalf("lease holder changed to %q before the leader was killed", h)
	}
	leader.Kill()

	framework.Eventually(t, 90*time.Second, func() error {
		if left := remaining(); left > 0 {
			return fmt.Errorf("%d dependents left (lease holder %q)", left, leaseHolder(t))
		}
		return nil
	}, "the standby should take the lease over and finish the cascade")
	if h := leaseHolder(t); h == leaderID || h == "" {
		t.Fatalf("lease holder is %q, want the standby", h)
	}
	if w := standby.writes(t, bearer); w == 0 {
		t.Fatal("the standby finished the cascade without sending a write?")
	}
}
