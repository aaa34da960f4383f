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

package plugin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// pluginUserRole names the ClusterRole and the Role that dist/install.yaml
// ships for the users of why and graph (config/rbac/plugin_user_role.yaml).
const pluginUserRole = "ownergc-plugin-user"

// shippedPluginUserRoles returns the ClusterRole and the Role
// ownergc-plugin-user of dist/install.yaml.
func shippedPluginUserRoles(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	var clusterRole *rbacv1.ClusterRole
	var role *rbacv1.Role
	for _, obj := range objs {
		if obj.GetName() != pluginUserRole {
			continue
		}
		var into any
		switch obj.GetKind() {
		case "ClusterRole":
			clusterRole = &rbacv1.ClusterRole{}
			into = clusterRole
		case "Role":
			role = &rbacv1.Role{}
			into = role
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	if clusterRole == nil || role == nil {
		t.Fatalf("dist/install.yaml should have a ClusterRole and a Role %s", pluginUserRole)
	}
	return clusterRole, role
}

// pluginUserRoles returns the shipped roles ownergc-plugin-user (the Role
// in managerNS) and the bindings of who, a ServiceAccount of ns, to them,
// as docs/operating.md's kubectl create clusterrolebinding and rolebinding
// make them.
func pluginUserRoles(t *testing.T, managerNS, ns string, who framework.Identity) (roles []client.Object, clusterBinding *rbacv1.ClusterRoleBinding, binding *rbacv1.RoleBinding) {
	t.Helper()
	shippedClusterRole, shippedRole := shippedPluginUserRoles(t)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: who.Name}}
	roles = []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: pluginUserRole}, Rules: shippedClusterRole.Rules},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: pluginUserRole}, Rules: shippedRole.Rules},
	}
	clusterBinding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ownergc-plugin-" + ns}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: pluginUserRole}}
	binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: "ownergc-plugin-" + ns}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: pluginUserRole}}
	return roles, clusterBinding, binding
}

// createForTest creates objs, each deleted when the test ends.
func createForTest(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		create(t, o)
		t.Cleanup(func() {
			if err := cp.Client.Delete(framework.Context(t), o, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
			}
		})
	}
}

// TestWhyAsAUserBoundToThePluginUserRoles runs why without --server-url as
// a user bound, as docs/operating.md says, to nothing but the shipped roles
// ownergc-plugin-user (the ClusterRole cluster-wide, the Role in the
// manager's namespace) and the right to read the objects of its own
// namespace. The plugin finds ownergc's ClusterRoleBinding (by its label,
// after looking for it by name), the Deployment, its pods and the leader in
// the Lease, and port-forwards to the leader's pod, which runs as the
// manager's ServiceAccount: this control plane has no kubelet, so the
// port-forward itself fails, after it was authorized, and the audit log
// shows it. Without the Role, it stops at the Deployment.
func TestWhyAsAUserBoundToThePluginUserRoles(t *testing.T) {
	const managerNS = "ownergc-plugin-user-test"
	const managerSA = "ownergc-controller-manager"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNS}})

	// The user: it may read the objects of its namespace (with its own
	// rights, as /explain requires), and is bound to the plugin's roles as
	// the docs' kubectl create clusterrolebinding and rolebinding do.
	ns := framework.CreateNamespace(t, cp.Client)
	who := cp.NewIdentity(t, ns, "plugin-user", false, rbacv1.PolicyRule{
		APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}})
	roles, clusterBinding, binding := pluginUserRoles(t, managerNS, ns, who)

	// ownergc's objects, installed by a Helm release named "roles": the
	// binding carries the release's prefix and the label.
	managerBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "roles-ownergc-manager-rolebinding",
		Labels: map[string]string{"app.kubernetes.io/name": "ownergc"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "roles-ownergc-manager-role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNS, Name: managerSA}}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: managerLabels}, Spec: corev1.PodSpec{
		ServiceAccountName: managerSA, Containers: []corev1.Container{{Name: "manager", Image: "ownergc"}}}}
	createForTest(t, append(roles, clusterBinding, managerBinding, managerDeployment(managerNS, template), leaderLease(managerNS),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: managerSA}})...)
	startManagerPods(t, managerNS, template.Spec)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	create(t, settings)
	kc := kubeconfig(t, who, ns)
	explainedBy := func(why string) string {
		return `Explained by: +API reads alone, since the ownergc manager could not answer: ` + why
	}

	// The ClusterRole alone: the plugin finds the manager's ServiceAccount,
	// and may not read its Deployment.
	waitOutput(t, kc, "you may not get deployment "+managerNS+"/ownergc-controller-manager",
		"with the ClusterRole alone, why should find ownergc's binding and be refused the Deployment", "why", "configmap/settings")

	// With the Role too: up to the port-forward, to the leader.
	createForTest(t, binding)
	waitOutput(t, kc, "port-forwarding to pod "+managerNS+"/manager-b:",
		"with both roles, why should port-forward to the leader's pod", "why", "configmap/settings")
	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "a user bound to the plugin's roles",
		explainedBy(`port-forwarding to pod `+q(managerNS)+`/manager-b: .*does not have a host assigned.*`))

	// The audit log: port-forwards to the leader's pod, authorized.
	user := "system:serviceaccount:" + ns + ":" + who.Name
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		writes, err := cp.Writes(user)
		if err != nil {
			return err
		}
		if len(writes) == 0 {
			return fmt.Errorf("the audit log has no port-forward by %s", user)
		}
		for _, w := range writes {
			if w.ObjectRef.Resource != "pods" || w.ObjectRef.Subresource != "portforward" || w.Verb != "create" ||
				w.ObjectRef.Namespace != managerNS || w.ObjectRef.Name != "manager-b" || w.ResponseStatus.Code == 403 {
				return fmt.Errorf("the user's write %s: want only authorized port-forwards to the leader's pod %s/manager-b", w, managerNS)
			}
		}
		return nil
	}, "the plugin's only writes should be port-forwards to the leader's pod, authorized by the Role")
}

// TestWhyClusterPortForwardsToTheReplicaItsStatusNames runs why --cluster
// as a user of a fleet's host bound to ownergc-plugin-user, as
// TestWhyAsAUserBoundToThePluginUserRoles does, against a stand-in host:
// the manager's ServiceAccount bound by the reviews' ClusterRoleBinding (a
// fleet host has no collector binding), the Deployment's pods manager-a
// and manager-b (the leader) and the member's ClusterGCStatus naming
// manager-a, the replica that collects it. Without a grant on the status,
// the plugin port-forwards to the Deployment's leader, as without
// --cluster; bound to the Role ownergc-fleet-member-reader (for this member
// only, with resourceNames), to manager-a. The audit log shows both.
func TestWhyClusterPortForwardsToTheReplicaItsStatusNames(t *testing.T) {
	const managerNS = "ownergc-fleet-host-test"
	const managerSA = "ownergc-controller-manager"
	const member = "tenant-a"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNS}})
	ns := framework.CreateNamespace(t, cp.Client)
	who := cp.NewIdentity(t, ns, "fleet-plugin-user", false, rbacv1.PolicyRule{
		APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}})
	roles, clusterBinding, binding := pluginUserRoles(t, managerNS, ns, who)
	// ownergc-fleet-member-reader as config/fleet ships it (the install
	// tests hold it to these rules), in a copy for one member.
	memberReader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: "tenant-a-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"ownergc.io"}, Resources: []string{"clustergcstatuses", "clustergcstatuses/explain", "clustergcstatuses/graph"},
			Verbs: []string{"get"}, ResourceNames: []string{member}}}}
	readerBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: "tenant-a-reader-" + ns}, Subjects: binding.Subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: memberReader.Name}}

	// The fleet host's binding of the reviews' role names the manager's
	// ServiceAccount.
	hostBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ownergc-metrics-auth-rolebinding",
		Labels: map[string]string{"app.kubernetes.io/name": "ownergc"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ownergc-metrics-auth-role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNS, Name: managerSA}}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: managerLabels}, Spec: corev1.PodSpec{
		ServiceAccountName: managerSA, Containers: []corev1.Container{{Name: "manager", Image: "ownergc"}}}}
	status := &ownergcv1alpha1.ClusterGCStatus{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: member}}
	createForTest(t, append(roles, memberReader, clusterBinding, binding, hostBinding, managerDeployment(managerNS, template), leaderLease(managerNS),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: managerNS, Name: managerSA}}, status)...)
	status.Status.Cluster, status.Status.Replica = member, "manager-a"
	if err := cp.Client.Status().Update(framework.Context(t), status); err != nil {
		t.Fatalf("writing the status of member %s: %v", member, err)
	}
	startManagerPods(t, managerNS, template.Spec)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	create(t, settings)
	kc := kubeconfig(t, who, ns)

	// The plugin may not read the status: the Deployment's leader.
	waitOutput(t, kc, "port-forwarding to pod "+managerNS+"/manager-b:",
		"without a grant on the member's ClusterGCStatus, why --cluster should port-forward to the Deployment's leader", "why", "--cluster", member, "configmap/settings")

	// Granted the member's status: the replica it names.
	createForTest(t, readerBinding)
	waitOutput(t, kc, "port-forwarding to pod "+managerNS+"/manager-a:",
		"granted get on the member's ClusterGCStatus, why --cluster should port-forward to the replica it names", "why", "--cluster", member, "configmap/settings")

	// The audit log: authorized port-forwards to both, nothing else written.
	user := "system:serviceaccount:" + ns + ":" + who.Name
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		writes, err := cp.Writes(user)
		if err != nil {
			return err
		}
		to := map[string]bool{}
		for _, w := range writes {
			if w.ObjectRef.Resource != "pods" || w.ObjectRef.Subresource != "portforward" || w.Verb != "create" ||
				w.ObjectRef.Namespace != managerNS || w.ResponseStatus.Code == 403 {
				return fmt.Errorf("the user's write %s: want only authorized port-forwards to the manager's pods in %s", w, managerNS)
			}
			to[w.ObjectRef.Name] = true
		}
		if !to["manager-a"] || !to["manager-b"] {
			return fmt.Errorf("port-forwards to %v, want manager-b (the leader) and then manager-a (the member's replica)", to)
		}
		return nil
	}, "the plugin's only writes should be port-forwards, first to the leader, then to the member's replica")
}
