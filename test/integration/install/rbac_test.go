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
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// use is what one part of the manager does with the API: the requests its
// roles must allow, and all they may allow.
type use struct {
	// by names the code that sends the requests.
	by string
	// group and resource ("resource/subresource") of the requests; "*"
	// for every group or resource the API server serves.
	group, resource string
	verbs           []string
	// inNamespace: only in the manager's namespace, granted by a Role
	// there.
	inNamespace bool
	// notDriven says, by verb, why the tests' workloads need not make the
	// manager send that request.
	notDriven map[string]string
}

// The collector, on each cluster it collects: a single cluster's manager,
// and a fleet's manager in each member.
var collectorUses = []use{
	{by: "internal/discovery, internal/monitor: the metadata informers of every served resource (list: in a fleet's members, also the dormant kinds' checks)",
		group: "*", resource: "*", verbs: []string{"list", "watch"}, notDriven: streamingLists},
	{by: "internal/collector: live reads of objects and owners, orphaning and foreground deletions (owner references and finalizers, by patch), deletions",
		group: "*", resource: "*", verbs: []string{"get", "patch", "delete"}},
	{by: "internal/apigc (terminated Pods, Pods of missing Nodes)", resource: "pods", verbs: []string{"get", "list", "watch", "delete"},
		notDriven: streamingLists},
	{by: "internal/apigc: a Pod is marked Failed before it is deleted", resource: "pods/status", verbs: []string{"patch"}},
	{by: "internal/apigc: the Nodes Pods are bound to, a missing one confirmed by a live read", resource: "nodes", verbs: []string{"get", "list", "watch"},
		notDriven: streamingLists},
	{by: "internal/apigc (finished Jobs)", group: "batch", resource: "jobs", verbs: []string{"get", "list", "watch", "delete"},
		notDriven: map[string]string{"get": "a Job is deleted with its UID as a precondition, from the informer's copy", "list": streamingLists["list"]}},
	{by: "internal/apigc (stale CertificateSigningRequests)", group: "certificates.k8s.io", resource: "certificatesigningrequests",
		verbs:     []string{"get", "list", "watch", "delete"},
		notDriven: map[string]string{"get": "a request is deleted with its UID as a precondition, from the informer's copy", "list": streamingLists["list"]}},
	{by: "internal/collector, controllers (GCPolicy): events about objects and the policy (client-go's events.k8s.io recorder)",
		group: "events.k8s.io", resource: "events", verbs: []string{"create", "patch"},
		notDriven: map[string]string{"patch": "an event recorded again within its series' interval"}},
	{by: "controllers (GCPolicy): the policy in force, and `default` created with the defaults",
		group: "ownergc.io", resource: "gcpolicies", verbs: []string{"list", "watch", "create"}, notDriven: streamingLists},
	{by: "controllers (GCPolicy): its status", group: "ownergc.io", resource: "gcpolicies/status", verbs: []string{"patch"}},
}

// streamingLists: informers list by watching (client-go's streaming lists,
// sendInitialEvents), and send a list only to an API server that cannot.
var streamingLists = map[string]string{"list": "informers list with a watch (streaming lists) on this API server; list is their fallback on one that cannot"}

// metricsUses authenticate and authorize the requests to the metrics
// endpoint (/metrics, /debug/graph, /explain: controller-runtime's filters
// and internal/access).
var metricsUses = []use{
	{by: "the metrics endpoint: callers' tokens", group: "authentication.k8s.io", resource: "tokenreviews", verbs: []string{"create"}},
	{by: "the metrics endpoint: callers' access", group: "authorization.k8s.io", resource: "subjectaccessreviews", verbs: []string{"create"}},
}

// memberUses are a fleet's manager's in each member: the collector's, and
// the reviews of the member's own users who ask the fleet about it.
var memberUses = slices.Concat(collectorUses, []use{
	{by: "internal/fleet (endpoints.go): the tokens of the member's users who ask the fleet's /explain and /debug/graph about the member",
		group: "authentication.k8s.io", resource: "tokenreviews", verbs: []string{"create"}},
	{by: "internal/fleet (endpoints.go): their access to the member's objects and to /debug/graph, at the member",
		group: "authorization.k8s.io", resource: "subjectaccessreviews", verbs: []string{"create"}},
})

// managerUses are a single cluster's manager's.
var managerUses = slices.Concat(collectorUses, metricsUses, []use{
	{by: "main.go: leader election (--leader-elect), its Lease", group: "coordination.k8s.io", resource: "leases",
		verbs: []string{"get", "create", "update"}, inNamespace: true},
	{by: "main.go: leader election's events (controller-runtime's core/v1 recorder)", resource: "events",
		verbs: []string{"create", "patch"}, inNamespace: true,
		notDriven: map[string]string{"patch": "an event recorded again within its series' interval"}},
})

// fleetHostUses are a fleet's manager's on its host.
var fleetHostUses = slices.Concat(metricsUses, []use{
	{by: "fleet.go, internal/fleet: the kubeconfig Secrets, through the host manager's cache", resource: "secrets",
		verbs: []string{"get", "list", "watch"}, inNamespace: true,
		notDriven: map[string]string{"get": "the Secrets are read from the cache", "list": streamingLists["list"]}},
	{by: "controllers (ClusterGCStatus): a status per member, deleted with its Secret", group: "ownergc.io", resource: "clustergcstatuses",
		verbs: []string{"get", "list", "watch", "create", "delete"}, inNamespace: true,
		notDriven: map[string]string{"get": "the statuses are read from the cache", "list": streamingLists["list"]}},
	{by: "controllers (ClusterGCStatus)", group: "ownergc.io", resource: "clustergcstatuses/status",
		verbs: []string{"update"}, inNamespace: true},
	{by: "internal/fleet: leader election, or with --shard multicluster-runtime's peer and shard Leases and the engine Leases",
		group: "coordination.k8s.io", resource: "leases", verbs: []string{"get", "list", "watch", "create", "update"}, inNamespace: true,
		notDriven: streamingLists},
	{by: "internal/fleet: Warning events on refused kubeconfig Secrets (events.k8s.io recorder)", group: "events.k8s.io", resource: "events",
		verbs: []string{"create", "patch"}, inNamespace: true,
		notDriven: map[string]string{"patch": "an event recorded again within its series' interval"}},
	{by: "main.go: leader election's events (core/v1 recorder; the fleet test shards instead)", resource: "events",
		verbs: []string{"create", "patch"}, inNamespace: true,
		notDriven: map[string]string{"create": "with --leader-elect; the fleet test runs with --shard", "patch": "an event recorded again"}},
})

// forbiddenOnEveryResource are verbs that no rule covering every resource
// may grant: the collector never creates or updates what it collects, and
// the others would let it grant itself more.
var forbiddenOnEveryResource = []string{"*", "create", "update", "deletecollection", "escalate", "bind", "impersonate"}

// grant is a rule of a role bound to the manager's ServiceAccount.
type grant struct {
	role string
	// namespace of the Role, "" for a ClusterRole bound cluster-wide.
	namespace string
	rule      rbacv1.PolicyRule
}

// grantsOf returns the rules that the roles among manifests grant to the
// ServiceAccount namespace/name through the bindings among manifests.
func grantsOf(t *testing.T, manifests []byte, namespace, name string) []grant {
	t.Helper()
	objs := objectsByKind(t, manifests)
	convert := func(u *unstructured.Unstructured, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	boundTo := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name
		})
	}
	var out []grant
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			convert(u, &b)
			if !boundTo(b.Subjects) {
				continue
			}
			role, ok := objs["ClusterRole/"+b.RoleRef.Name]
			if !ok {
				t.Fatalf("ClusterRoleBinding %s binds ClusterRole %s, which the manifests do not have", b.Name, b.RoleRef.Name)
			}
			var r rbacv1.ClusterRole
			convert(role, &r)
			for _, rule := range r.Rules {
				out = append(out, grant{role: "ClusterRole " + r.Name, rule: rule})
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			convert(u, &b)
			if !boundTo(b.Subjects) {
				continue
			}
			if b.RoleRef.Kind != "Role" {
				t.Fatalf("RoleBinding %s binds a %s: the tests know only Roles there", b.Name, b.RoleRef.Kind)
			}
			role, ok := objs["Role/"+b.RoleRef.Name]
			if !ok || role.GetNamespace() != b.Namespace {
				t.Fatalf("RoleBinding %s/%s binds Role %s, which the manifests do not have in its namespace", b.Namespace, b.Name, b.RoleRef.Name)
			}
			var r rbacv1.Role
			convert(role, &r)
			for _, rule := range r.Rules {
				out = append(out, grant{role: "Role " + r.Namespace + "/" + r.Name, namespace: r.Namespace, rule: rule})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no role of the manifests is bound to ServiceAccount %s/%s", namespace, name)
	}
	return out
}

// coversGroup reports whether a rule's or a use's group pattern covers
// group ("*" covers every group).
func coversGroup(pattern, group string) bool { return pattern == "*" || pattern == group }

// coversResource reports whether a resource pattern covers resource
// ("resource/subresource"); "*" covers every resource and subresource.
func coversResource(pattern, resource string) bool { return pattern == "*" || pattern == resource }

// allows reports whether g allows verb on group/resource, in namespace ns
// ("" for a request that is not namespaced, or for every namespace).
func (g grant) allows(verb, group, resource, ns string) bool {
	if g.namespace != "" && g.namespace != ns {
		return false
	}
	r := g.rule
	return slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "*" || v == verb }) &&
		slices.ContainsFunc(r.APIGroups, func(p string) bool { return coversGroup(p, group) }) &&
		slices.ContainsFunc(r.Resources, func(p string) bool { return coversResource(p, resource) }) &&
		len(r.ResourceNames) == 0
}

// covers reports whether u says the manager sends verb on group/resource in
// namespace ns, where the manager's namespace is home.
func (u use) covers(verb, group, resource, ns, home string) bool {
	return slices.Contains(u.verbs, verb) && coversGroup(u.group, group) && coversResource(u.resource, resource) &&
		(!u.inNamespace || ns == home)
}

// checkGrantsMatchUses checks that the grants allow every request of uses,
// in the manager's namespace home, and nothing that none of the uses needs:
// each verb of each rule, on each group and resource it names, is a use's,
// and a rule that covers every group or resource grants none of
// forbiddenOnEveryResource.
func checkGrantsMatchUses(t *testing.T, grants []grant, uses []use, home string) {
	t.Helper()
	for _, u := range uses {
		for _, verb := range u.verbs {
			ns := ""
			if u.inNamespace {
				ns = home
			}
			if !slices.ContainsFunc(grants, func(g grant) bool {
				// A use of every resource needs a rule of every resource.
				return g.allows(verb, u.group, u.resource, ns) && (u.resource != "*" || slices.Contains(g.rule.Resources, "*")) &&
					(u.group != "*" || slices.Contains(g.rule.APIGroups, "*"))
			}) {
				t.Errorf("no role grants %s on %s (%s)", verb, groupResource(u.group, u.resource), u.by)
			}
		}
	}
	for _, g := range grants {
		r := g.rule
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("%s grants non-resource URLs %v: the manager requests only discovery, which every authenticated user may", g.role, r.NonResourceURLs)
		}
		if len(r.ResourceNames) > 0 {
			t.Errorf("%s names resources (%v): the tests' uses know no names", g.role, r.ResourceNames)
		}
		everything := slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*")
		for _, verb := range r.Verbs {
			if everything && slices.Contains(forbiddenOnEveryResource, verb) {
				t.Errorf("%s grants %s on %s/%s: no rule covering every group or resource may grant any of %v",
					g.role, verb, r.APIGroups, r.Resources, forbiddenOnEveryResource)
			}
			for _, group := range r.APIGroups {
				for _, resource := range r.Resources {
					if !slices.ContainsFunc(uses, func(u use) bool {
						// A rule of every group or resource is a use's
						// only if the use is of every one too.
						return slices.Contains(u.verbs, verb) && (u.group == "*" || u.group == group && group != "*") &&
							(u.resource == "*" || u.resource == resource && resource != "*") &&
							(!u.inNamespace || g.namespace == home)
					}) {
						t.Errorf("%s grants %s on %s, which no part of the manager needs (%s)", g.role, verb, groupResource(group, resource), where(g))
					}
				}
			}
		}
	}
}

func where(g grant) string {
	if g.namespace == "" {
		return "cluster-wide"
	}
	return "in namespace " + g.namespace
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return group + "/" + resource
}

// kustomizeBuild renders a directory of config/ as `kustomize build` does.
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as the kustomize command: Namespaces and CRDs first
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out
}

// TestShippedRolesGrantWhatTheManagerUsesAndNoMore checks, for each way of
// installing ownergc, the roles bound to the manager's ServiceAccount
// against the uses of the code that runs with them: a single cluster's
// manager (dist/install.yaml, which the chart renders by default), a
// fleet's manager on its host (config/fleet and config/fleet/sharded, the
// chart's fleet.enable) and
// the identity the fleet collects with in each member
// (config/fleet/member). The requests the manager actually sends are
// checked against the same uses by TestManagerSendsOnlyWhatItsRolesAllow
// and TestFleetSendsOnlyWhatItsRolesAllow.
func TestShippedRolesGrantWhatTheManagerUsesAndNoMore(t *testing.T) {
	for _, c := range []struct {
		name      string
		manifests func(t *testing.T) []byte
		uses      []use
	}{
		{"dist/install.yaml", func(t *testing.T) []byte { return readRepoFile(t, "dist/install.yaml") }, managerUses},
		{"config/fleet", func(t *testing.T) []byte { return kustomizeBuild(t, "config/fleet") }, fleetHostUses},
		{"config/fleet/sharded", func(t *testing.T) []byte { return kustomizeBuild(t, "config/fleet/sharded") }, fleetHostUses},
		{"config/fleet/member", func(t *testing.T) []byte { return kustomizeBuild(t, "config/fleet/member") }, memberUses},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGrantsMatchUses(t, grantsOf(t, c.manifests(t), systemNamespace, serviceAccount), c.uses, systemNamespace)
		})
	}
}

// pluginUses are what kubectl ownergc why and graph send to find the
// manager's pod and port-forward to it (cmd/kubectl-ownergc), with the
// user's own credentials: the roles ownergc-plugin-user grant them.
var pluginUses = []use{
	{by: "cmd/kubectl-ownergc/managerpod.go: ownergc's ClusterRoleBinding by its name, or among those labelled app.kubernetes.io/name=ownergc, names the manager's ServiceAccount",
		group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", verbs: []string{"get", "list"}},
	{by: "cmd/kubectl-ownergc/managerpod.go: the manager's Deployment, whose selector finds its pods", group: "apps", resource: "deployments",
		verbs: []string{"get"}, inNamespace: true},
	{by: "cmd/kubectl-ownergc/managerpod.go: the Deployment's pods, the one running as the manager's ServiceAccount", resource: "pods",
		verbs: []string{"list"}, inNamespace: true},
	{by: "cmd/kubectl-ownergc/managerpod.go: the leader-election Lease, to pick the leader", group: "coordination.k8s.io", resource: "leases",
		verbs: []string{"get"}, inNamespace: true},
	{by: "cmd/kubectl-ownergc/portforward.go: the port-forward to the manager's pod (SPDY: a POST)", resource: "pods/portforward",
		verbs: []string{"create"}, inNamespace: true},
}

// pluginUserRole is the name of the plugin users' ClusterRole and Role.
const pluginUserRole = "ownergc-plugin-user"

// TestPluginUserRolesGrantWhatWhyUses checks the roles for the users of
// kubectl ownergc why and graph against the requests the plugin sends to
// reach the manager (test/integration/plugin runs why as a user bound only
// to them): in a single cluster's install (dist/install.yaml, the chart
// by default) and on a fleet's host (config/fleet, config/fleet/sharded,
// the chart's fleet.enable: why --cluster asks the host's manager) they
// grant those and nothing more, in the manager's namespace but the
// ClusterRoleBindings, and are bound to no one; a fleet's member has
// neither (no manager runs there).
func TestPluginUserRolesGrantWhatWhyUses(t *testing.T) {
	installs := map[string][]byte{"dist/install.yaml": readRepoFile(t, "dist/install.yaml")}
	for _, dir := range []string{"config/fleet", "config/fleet/sharded"} {
		installs[dir] = kustomizeBuild(t, dir)
	}
	for name, manifests := range installs {
		t.Run(name, func(t *testing.T) {
			objs := objectsByKind(t, manifests)
			var grants []grant
			for _, key := range []string{"ClusterRole/" + pluginUserRole, "Role/" + pluginUserRole} {
				u, ok := objs[key]
				if !ok {
					t.Fatalf("%s has no %s", name, key)
				}
				var r rbacv1.Role // a ClusterRole's rules are a Role's
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
					t.Fatal(err)
				}
				if u.GetKind() == "Role" && r.Namespace != systemNamespace {
					t.Errorf("%s is in namespace %q, not the manager's %s", key, r.Namespace, systemNamespace)
				}
				for _, rule := range r.Rules {
					grants = append(grants, grant{role: key, namespace: r.Namespace, rule: rule})
				}
				for k := range u.GetLabels() {
					if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
						t.Errorf("%s aggregates into a built-in role (%s): it is bound by a cluster administrator only", key, k)
					}
				}
			}
			checkGrantsMatchUses(t, grants, pluginUses, systemNamespace)
			for key, u := range objs {
				if kind := u.GetKind(); kind != "ClusterRoleBinding" && kind != "RoleBinding" {
					continue
				}
				if name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name"); name == pluginUserRole {
					t.Errorf("%s binds %s: the install binds it to no one", key, pluginUserRole)
				}
			}
		})
	}
	for key := range objectsByKind(t, kustomizeBuild(t, "config/fleet/member")) {
		if strings.HasSuffix(key, "/"+pluginUserRole) {
			t.Errorf("config/fleet/member has %s: no manager runs in a member", key)
		}
	}
}

// TestFleetMemberReaderRole checks the host's Role for people asking the
// fleet about its members as host identities: get on the explain and graph
// subresources of clustergcstatuses, and on the ClusterGCStatus itself
// (the plugin's port-forward goes to the replica it names), in the
// manager's namespace, and nothing more, bound to no one.
func TestFleetMemberReaderRole(t *testing.T) {
	for _, dir := range []string{"config/fleet", "config/fleet/sharded"} {
		objs := objectsByKind(t, kustomizeBuild(t, dir))
		u, ok := objs["Role/"+fleetMemberReaderRole]
		if !ok {
			t.Fatalf("%s has no Role %s", dir, fleetMemberReaderRole)
		}
		var r rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			t.Fatal(err)
		}
		want := []rbacv1.PolicyRule{{APIGroups: []string{"ownergc.io"}, Resources: []string{"clustergcstatuses", "clustergcstatuses/explain", "clustergcstatuses/graph"}, Verbs: []string{"get"}}}
		if r.Namespace != systemNamespace || !equality.Semantic.DeepEqual(r.Rules, want) {
			t.Errorf("%s: Role %s in %q grants %+v, want %+v in %s", dir, fleetMemberReaderRole, r.Namespace, r.Rules, want, systemNamespace)
		}
		for key, b := range objs {
			if name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name"); name == fleetMemberReaderRole {
				t.Errorf("%s: %s binds %s: the install binds it to no one", dir, key, fleetMemberReaderRole)
			}
		}
	}
}

// fleetMemberReaderRole is the name of that Role.
const fleetMemberReaderRole = "ownergc-fleet-member-reader"

// TestGCPolicyRolesForPeople checks the aggregation of the roles for
// people: into nothing — changing the policy is a cluster administrator's
// decision, and its status names objects that view may not read
// (docs/gcpolicy.md).
func TestGCPolicyRolesForPeople(t *testing.T) {
	objs := objectsByKind(t, readRepoFile(t, "dist/install.yaml"))
	aggregation := func(name string) []string {
		role, ok := objs["ClusterRole/"+name]
		if !ok {
			t.Fatalf("dist/install.yaml has no ClusterRole %s", name)
		}
		var out []string
		for k, v := range role.GetLabels() {
			if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") && v == "true" {
				out = append(out, strings.TrimPrefix(k, "rbac.authorization.k8s.io/aggregate-to-"))
			}
		}
		sort.Strings(out)
		return out
	}
	if got := aggregation("ownergc-gcpolicy-editor-role"); len(got) != 0 {
		t.Errorf("the GCPolicy editor role aggregates into %v: changing the policy is for cluster administrators only", got)
	}
	if got := aggregation("ownergc-gcpolicy-viewer-role"); len(got) != 0 {
		t.Errorf("the GCPolicy viewer role aggregates into %v: its status names objects that those roles may not read", got)
	}
	// No role of the install aggregates into admin, edit or view anything
	// that writes.
	for key, u := range objs {
		if u.GetKind() != "ClusterRole" {
			continue
		}
		var r rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			t.Fatal(err)
		}
		if len(aggregation(r.Name)) == 0 {
			continue
		}
		for _, rule := range r.Rules {
			for _, verb := range rule.Verbs {
				if !slices.Contains([]string{"get", "list", "watch"}, verb) {
					t.Errorf("%s aggregates into a built-in role and grants %s on %v", key, verb, rule.Resources)
				}
			}
		}
	}
}

// describeRequests lists requests, one a line.
func describeRequests[T fmt.Stringer](rs []T) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return lines(out)
}

// lines puts each string on a line of its own, indented.
func lines(ss []string) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "\n  %s", s)
	}
	return b.String()
}
