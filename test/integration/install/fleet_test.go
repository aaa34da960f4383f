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
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/test/framework"
)

// driven returns uses with the verbs of those that match left out of what
// a test must see sent, for why.
func driven(uses []use, match func(use) bool, why string) []use {
	out := make([]use, len(uses))
	for i, u := range uses {
		out[i] = u
		if !match(u) {
			continue
		}
		out[i].notDriven = map[string]string{}
		for _, v := range u.verbs {
			out[i].notDriven[v] = why
		}
	}
	return out
}

// listsDormantKinds is uses with the list verb of the "*" rule driven: a
// fleet's engines check their dormant kinds (kinds with no object, not
// watched) by a LIST of one item, and the workload's orphaning and
// foreground cascades make them check before they complete.
func listsDormantKinds(uses []use) []use {
	out := slices.Clone(uses)
	for i, u := range out {
		if u.group == "*" && u.resource == "*" && u.notDriven["list"] != "" {
			out[i].notDriven = maps.Clone(u.notDriven)
			delete(out[i].notDriven, "list")
		}
	}
	return out
}

// TestFleetSendsOnlyWhatItsRolesAllow installs config/fleet on a host and
// config/fleet/member on a member, each a control plane that records every
// request, and runs the manager binary in the fleet mode, sharding, as the
// host's ServiceAccount, with a kubeconfig Secret on the host holding a
// token of the member's ServiceAccount, and another whose kubeconfig it
// refuses. It plays the three cascades on the
// member (and an owner that never existed, which it reads live), waits for the member's GCPolicy and its ClusterGCStatus on the
// host and the Warning event on the refused Secret, scrapes the metrics
// endpoint, and deletes the member's Secret. Then it
// checks the requests of both identities: nothing forbidden, each a known
// use (on the host, only in the install namespace, but the metrics
// endpoint's reviews), and the uses' verbs sent.
func TestFleetSendsOnlyWhatItsRolesAllow(t *testing.T) {
	host := startRecordingCluster(t, "config/fleet", kustomizeBuild(t, "config/fleet"))
	member := startRecordingCluster(t, "config/fleet/member", kustomizeBuild(t, "config/fleet/member"))
	ctx := framework.Context(t)

	// The member's kubeconfig, with a token of the ServiceAccount of
	// config/fleet/member, in a Secret of the host's install namespace.
	kubeconfig, err := os.ReadFile(member.kubeconfigFor(t, "tenant-a", member.Token(t, member.namespace, member.serviceAccount)))
	if err != nil {
		t.Fatal(err)
	}
	secret := framework.WriteKubeconfigSecretWith(t, host.ControlPlane, host.namespace, "tenant-a", kubeconfig)
	// A kubeconfig the manager refuses (an exec plugin; the command does
	// not exist): a Warning event on its Secret.
	refused := clientcmdapi.NewConfig()
	refused.Clusters["x"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	refused.AuthInfos["x"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
		Command: "/nonexistent/ownergc-test-plugin", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	refused.Contexts["x"] = &clientcmdapi.Context{Cluster: "x", AuthInfo: "x"}
	refused.CurrentContext = "x"
	refusedData, err := clientcmd.Write(*refused)
	if err != nil {
		t.Fatal(err)
	}
	refusedSecret := framework.WriteKubeconfigSecretWith(t, host.ControlPlane, host.namespace, "refused", refusedData)
	p := host.startManager(t, "fleet", "--cluster-source=kubeconfig-secrets", "--cluster-namespace="+host.namespace, "--shard", "--replica-id=replica-0")
	p.waitReady(t)

	// The member is collected with its own GCPolicy, and reported on the
	// host.
	framework.WaitPolicyInForce(t, member.Client, "the manager should create the member's GCPolicy and write its status")
	framework.Eventually(t, 2*time.Minute, func() error {
		st := &ownergcv1alpha1.ClusterGCStatus{}
		if err := host.Client.Get(ctx, client.ObjectKey{Namespace: host.namespace, Name: secret.Name}, st); err != nil {
			return err
		}
		if !apimeta.IsStatusConditionTrue(st.Status.Conditions, ownergcv1alpha1.ConditionReady) {
			return fmt.Errorf("conditions %+v", st.Status.Conditions)
		}
		return nil
	}, "the member's ClusterGCStatus should be Ready")
	member.StartCascades(t, framework.CreateNamespace(t, member.Client), framework.ConfigMaps).WaitCollected(t)

	framework.Eventually(t, time.Minute, func() error {
		events := &eventsv1.EventList{}
		if err := host.Client.List(ctx, events, client.InNamespace(host.namespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == refusedSecret.Name && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("%d events, none a Warning about Secret %s", len(events.Items), refusedSecret.Name)
	}, "the manager should record a Warning event on the Secret whose kubeconfig it refuses")

	scraperToken := host.NewIdentityWithClusterRole(t, host.namespace, scraper, metricsRole).Token
	if code, _ := p.get(t, "/metrics", scraperToken); code != http.StatusOK {
		t.Errorf("GET /metrics by the metrics reader answered %d", code)
	}

	// Users of the member ask the host's manager about the member: their
	// tokens and access are reviewed at the member, by the member's
	// ServiceAccount, which config/fleet/member allows the reviews.
	mns := framework.CreateNamespace(t, member.Client)
	explained := member.Create(t, framework.ConfigMaps, mns, "explained")
	reader := member.NewIdentity(t, mns, "reader", false, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	q := explain.Query(explained.GVR, mns, explained.Name)
	q.Set("cluster", secret.Name)
	if code, body := p.get(t, explain.Path+"?"+q.Encode(), reader.Token); code != http.StatusOK {
		t.Errorf("GET /explain?cluster=%s by a user the member allows to get the ConfigMap answered %d: %s", secret.Name, code, body)
	}
	grapher := member.NewIdentityWithClusterRole(t, mns, "grapher", graphRole)
	if code, body := p.get(t, "/debug/graph?cluster="+secret.Name, grapher.Token); code != http.StatusOK {
		t.Errorf("GET /debug/graph?cluster=%s by the member's graph reader answered %d: %s", secret.Name, code, body)
	}

	// The member leaves the fleet: its status goes.
	if err := host.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() error {
		err := host.Client.Get(ctx, client.ObjectKey{Namespace: host.namespace, Name: secret.Name}, &ownergcv1alpha1.ClusterGCStatus{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the status is still there (%v)", err)
		}
		return nil
	}, "the manager should delete the status of a member whose Secret is gone")
	p.Stop()

	t.Run("host", func(t *testing.T) {
		rs := host.requestsOf(t)
		checkRequests(t, rs, fleetHostUses, host.namespace)
		if t.Failed() {
			t.Logf("the manager's requests to the host:%s", lines(distinct(rs)))
		}
	})
	t.Run("member", func(t *testing.T) {
		rs := member.requestsOf(t)
		// The single cluster's test drives the API-level collectors.
		uses := driven(memberUses, func(u use) bool { return strings.HasPrefix(u.by, "internal/apigc") },
			"the API-level collectors are driven by TestManagerSendsOnlyWhatItsRolesAllow")
		uses = listsDormantKinds(uses)
		checkWildcardVerbs(t, checkRequests(t, rs, uses, member.namespace), uses)
		if t.Failed() {
			t.Logf("the manager's requests to the member:%s", lines(distinct(rs)))
		}
	})
}
