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

package fleet_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/debug"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/test/framework"
)

// memberFixture is an owner of each of two kinds and their dependent in
// member beta, observed by beta's engine.
type memberFixture struct {
	ns                        string
	owner, secretOwner, child framework.Object
}

func newMemberFixture(t *testing.T, m *framework.FleetManager) memberFixture {
	t.Helper()
	beta := clusters[1]
	ns := framework.CreateNamespace(t, beta.Client)
	f := memberFixture{ns: ns}
	f.owner = beta.Create(t, framework.ConfigMaps, ns, "owner")
	f.secretOwner = beta.Create(t, framework.Secrets, ns, "secret-owner")
	f.child = beta.Create(t, framework.ConfigMaps, ns, "child", framework.OwnedBy(f.owner.Ref(false), f.secretOwner.Ref(false)))
	framework.Eventually(t, 30*time.Second, func() error {
		eng := m.Fleet.Engine(names[1])
		if eng == nil {
			return fmt.Errorf("member %s has no engine", names[1])
		}
		if eng.Graph().Node(f.child.UID) == nil {
			return fmt.Errorf("%s is not in member %s's graph", f.child, names[1])
		}
		return nil
	}, "member %s's engine should observe the fixture", names[1])
	return f
}

func (f memberFixture) query() string {
	return explain.Query(f.child.GVR, f.child.Namespace, f.child.Name).Encode()
}

// hostGrant is a host identity in the fleet's namespace allowed get on the
// subresources of the ClusterGCStatuses of members (none: no grant).
func hostGrant(t *testing.T, fleetNamespace, name string, subresources []string, members ...string) framework.Identity {
	t.Helper()
	if len(members) == 0 {
		return host().NewIdentity(t, fleetNamespace, name, false)
	}
	var resources []string
	for _, s := range subresources {
		resources = append(resources, "clustergcstatuses/"+s)
	}
	return host().NewIdentity(t, fleetNamespace, name, false, rbacv1.PolicyRule{
		APIGroups: []string{ownergcv1alpha1.GroupVersion.Group}, Resources: resources, ResourceNames: members, Verbs: []string{"get"}})
}

// In the fleet mode, /explain answers about a member's object only to a
// caller the member authorizes — its token reviewed by the member, the
// member's RBAC naming only what the caller may get — or to a host identity
// granted that member (get on clustergcstatuses/explain of it on the host),
// which is told everything of that member and nothing of the others. A
// token of one member gets nothing of another.
func TestExplainPerMemberAnswersOnlyWhomTheMemberOrTheHostAllows(t *testing.T) {
	m, ns := startFleet(t, framework.FleetOptions{Metrics: true})
	f := newMemberFixture(t, m)
	beta := clusters[1]

	// Callers of the member.
	configMapsOnly := beta.NewIdentity(t, f.ns, "configmaps-only", false, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	code, ex := m.Explain(t, names[1], configMapsOnly, f.query())
	if code != http.StatusOK {
		t.Fatalf("a caller beta allows to get %s: %d, want 200", f.child, code)
	}
	if ex.Object.Name != f.child.Name || len(ex.Owners) != 1 || ex.Owners[0].Name != f.owner.Name || ex.HiddenOwners != 1 {
		t.Errorf("a caller who may get ConfigMaps but not Secrets in beta should see the ConfigMap owner only, the Secret counted: %+v (hidden %d)", ex.Owners, ex.HiddenOwners)
	}
	if strings.Contains(ex.Decision, f.secretOwner.Name) {
		t.Errorf("the decision names an owner the caller may not get: %q", ex.Decision)
	}
	nobody := beta.NewIdentity(t, f.ns, "nobody", false)
	if code, _ := m.Explain(t, names[1], nobody, f.query()); code != http.StatusForbidden {
		t.Errorf("a caller of beta that may not get %s: %d, want 403", f.child, code)
	}
	for _, other := range []string{names[0], names[2], "no-such-member"} {
		if code, _ := m.Explain(t, other, configMapsOnly, f.query()); code != http.StatusUnauthorized {
			t.Errorf("beta's caller asking about member %s: %d, want 401 (that member does not know its token)", other, code)
		}
	}

	// Host identities.
	granted := hostGrant(t, ns, "granted-beta", []string{fleet.ExplainSubresource}, names[1], "not-engaged")
	code, ex = m.Explain(t, names[1], granted, f.query())
	if code != http.StatusOK {
		t.Fatalf("a host identity granted clustergcstatuses/explain of beta: %d, want 200", code)
	}
	if len(ex.Owners) != 2 || ex.HiddenOwners != 0 {
		t.Errorf("a host identity granted beta should see every owner: %+v (hidden %d)", ex.Owners, ex.HiddenOwners)
	}
	if code, _ := m.Explain(t, names[2], granted, f.query()); code != http.StatusForbidden {
		t.Errorf("a host identity granted beta, asking about gamma: %d, want 403", code)
	}
	if code, _ := m.Explain(t, "not-engaged", granted, f.query()); code != http.StatusNotFound {
		t.Errorf("a host identity granted a member that is not engaged: %d, want 404", code)
	}
	ungranted := hostGrant(t, ns, "ungranted", nil)
	for _, member := range []string{names[1], "not-engaged"} {
		if code, _ := m.Explain(t, member, ungranted, f.query()); code != http.StatusForbidden {
			t.Errorf("a host identity with no grant asking about %s: %d, want 403 (a host token is never sent to a member)", member, code)
		}
	}

	// Neither.
	if code, _ := m.Explain(t, names[1], framework.Identity{Name: "anonymous"}, f.query()); code != http.StatusUnauthorized {
		t.Errorf("an anonymous request: %d, want 401", code)
	}
	if code, _, err := m.Get(explain.Path+"?"+f.query(), granted.Token); err != nil || code != http.StatusBadRequest {
		t.Errorf("a request that names no member: %d (%v), want 400", code, err)
	}
	if code, _, err := m.Get(explain.Path+"?"+f.query()+"&cluster="+url.QueryEscape("../beta"), granted.Token); err != nil || code != http.StatusBadRequest {
		t.Errorf("a member name that is not a Secret's name: %d (%v), want 400", code, err)
	}
}

// /debug/graph?cluster= serves a member's graph to a host identity granted
// clustergcstatuses/graph of it, or to a caller the member allows the
// non-resource URL /debug/graph, as the single-cluster mode does.
func TestMemberGraphIsServedOnlyToWhomTheMemberOrTheHostAllows(t *testing.T) {
	m, ns := startFleet(t, framework.FleetOptions{Metrics: true})
	f := newMemberFixture(t, m)
	beta := clusters[1]
	path := debug.GraphPath + "?format=json&cluster=" + names[1]

	graphReader := beta.NewIdentity(t, f.ns, "graph-reader", true, rbacv1.PolicyRule{NonResourceURLs: []string{debug.GraphPath}, Verbs: []string{"get"}})
	granted := hostGrant(t, ns, "graph-granted", []string{fleet.GraphSubresource}, names[1])
	for _, who := range []framework.Identity{graphReader, granted} {
		code, body, err := m.Get(path, who.Token)
		if err != nil || code != http.StatusOK {
			t.Errorf("%s asking for beta's graph: %d (%v), want 200: %s", who.Name, code, err, body)
			continue
		}
		if !strings.Contains(string(body), string(f.child.UID)) {
			t.Errorf("beta's graph served to %s does not hold %s", who.Name, f.child)
		}
	}
	explainOnly := hostGrant(t, ns, "explain-only", []string{fleet.ExplainSubresource}, names[1])
	nobody := beta.NewIdentity(t, f.ns, "nobody", false)
	for _, tc := range []struct {
		who    framework.Identity
		member string
		want   int
	}{
		{explainOnly, names[1], http.StatusForbidden},
		{granted, names[2], http.StatusForbidden},
		{nobody, names[1], http.StatusForbidden},
		{graphReader, names[2], http.StatusUnauthorized},
		{framework.Identity{Name: "anonymous"}, names[1], http.StatusUnauthorized},
	} {
		code, _, err := m.Get(debug.GraphPath+"?cluster="+tc.member, tc.who.Token)
		if err != nil || code != tc.want {
			t.Errorf("%s asking for %s's graph: %d (%v), want %d", tc.who.Name, tc.member, code, err, tc.want)
		}
	}
}

// kubectl ownergc why --cluster and graph --cluster ask the fleet's manager
// about a member: a user of the member, whose kubeconfig knows only the
// member, reaches the manager at --server-url and is answered as the
// member's RBAC allows; an operator with contexts of the member and of the
// host is answered as the host grants when the manager is asked through
// the host's context (--manager-context), which sends the host's token.
func TestPluginAsksTheFleetAboutAMember(t *testing.T) {
	m, ns := startFleet(t, framework.FleetOptions{Metrics: true})
	f := newMemberFixture(t, m)
	beta := clusters[1]
	plugin, err := framework.BuildPlugin(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	server := []string{"--server-url", "https://" + m.MetricsAddr, "--manager-insecure-skip-tls-verify", "--cluster", names[1]}
	why := func(kubeconfig string, extra ...string) explainedBy {
		t.Helper()
		args := append([]string{"why", "-n", f.ns, "configmap/" + f.child.Name, "-o", "json"}, append(server, extra...)...)
		r := framework.RunPlugin(plugin, cache, kubeconfig, args...)
		if r.Err != nil {
			t.Fatalf("the plugin failed:\n%s", r)
		}
		var got explainedBy
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("decoding why -o json: %v\n%s", err, r)
		}
		if got.Source != "Manager" || got.Object.Name != f.child.Name {
			t.Fatalf("why --cluster %s should be answered by the fleet's manager about %s:\n%s", names[1], f.child, r)
		}
		return got
	}

	reader := beta.NewIdentity(t, f.ns, "plugin-reader", false, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}})
	memberOnly := beta.WriteKubeconfig(t, reader, f.ns)
	if got := why(memberOnly); len(got.Owners) != 1 || got.HiddenOwners != 1 {
		t.Errorf("a member's user who may not get Secrets should see one owner named, one counted: %+v (hidden %d)", got.Owners, got.HiddenOwners)
	}

	granted := hostGrant(t, ns, "plugin-operator", []string{fleet.ExplainSubresource, fleet.GraphSubresource}, names[1])
	both := twoContexts(t, beta, reader, host(), granted, f.ns)
	if got := why(both, "--context", "member", "--manager-context", "host"); len(got.Owners) != 2 || got.HiddenOwners != 0 {
		t.Errorf("through the host's context, an operator granted the member should see every owner: %+v (hidden %d)", got.Owners, got.HiddenOwners)
	}

	graph := framework.RunPlugin(plugin, cache, both, append([]string{"graph", "--context", "member", "-n", f.ns, "configmap/" + f.child.Name, "--manager-context", "host"}, server...)...)
	if graph.Err != nil || !strings.Contains(graph.Stdout, string(f.child.UID)) {
		t.Errorf("graph --cluster through the host's context should print the member's graph around %s:\n%s", f.child, graph)
	}
	refused := framework.RunPlugin(plugin, cache, memberOnly, append([]string{"graph", "-n", f.ns, "configmap/" + f.child.Name}, server...)...)
	if refused.Err == nil || !strings.Contains(refused.Stderr, "403") || !strings.Contains(refused.Stderr, "ownergc-graph-reader") {
		t.Errorf("graph --cluster for a member's user without the member's graph reader role should fail with 403 and say what to ask for:\n%s", refused)
	}
}

// explainedBy is what why -o json prints, as far as these tests read it.
type explainedBy struct {
	Source string `json:"source"`
	explain.Explanation
}

// twoContexts writes a kubeconfig with the contexts "member" (member, as
// memberUser, in namespace ns) and "host" (host, as hostUser).
func twoContexts(t *testing.T, member *framework.ControlPlane, memberUser framework.Identity, host *framework.ControlPlane, hostUser framework.Identity, ns string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for name, c := range map[string]struct {
		cp  *framework.ControlPlane
		who framework.Identity
		ns  string
	}{"member": {member, memberUser, ns}, "host": {host, hostUser, ""}} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.cp.Config.Host, CertificateAuthorityData: c.cp.Config.CAData}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: c.who.Token}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: c.ns}
	}
	cfg.CurrentContext = "member"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
