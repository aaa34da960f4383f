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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// The plugin sends the user's token to a manager pod only when the pod runs
// as the manager's ServiceAccount, which it learns from ownergc's own
// ClusterRoleBinding: the binding of the manager's ClusterRole (delete on
// every resource). Writing that binding takes the right to grant that role;
// running a pod as that ServiceAccount takes creating pods in its
// namespace. Whoever may do either holds the manager's rights already: the
// token goes to no one who does not.

// leaseName is the manager's leader election Lease: its holder is the
// replica that runs the collector's queues.
const leaseName = "garbage-collector.ownergc.io"

const (
	// defaultManagerBinding is the name of the manager's ClusterRoleBinding
	// in dist/install.yaml, config/default and the Helm chart.
	defaultManagerBinding = "ownergc-manager-rolebinding"
	// managerRoleSuffix ends the name of the manager's ClusterRole
	// (ownergc-manager-role, with a prefix of the installer's choosing).
	managerRoleSuffix = "manager-role"
	// defaultFleetBinding and fleetRoleSuffix are those of a fleet's host
	// (config/fleet, the chart's fleet.enable), where the collector's
	// ClusterRole is not bound: the ClusterRole that lets the manager
	// review its callers' tokens and access is.
	defaultFleetBinding = "ownergc-metrics-auth-rolebinding"
	fleetRoleSuffix     = "metrics-auth-role"
	// ownergcNameLabel labels every object ownergc's installers create.
	ownergcNameLabel = "app.kubernetes.io/name=ownergc"
)

// managerIdentity is the ServiceAccount the manager runs as, and where the
// plugin learned it.
type managerIdentity struct {
	// binding is the ClusterRoleBinding, role the ClusterRole it binds.
	binding, role string
	// namespace and serviceAccount name the ServiceAccount.
	namespace, serviceAccount string
}

func (id managerIdentity) String() string {
	return fmt.Sprintf("ServiceAccount %s/%s (bound to the manager's ClusterRole %s by ClusterRoleBinding %s)",
		id.namespace, id.serviceAccount, id.role, id.binding)
}

// isManagerBinding reports whether b binds the ClusterRole named roleSuffix
// or *-roleSuffix.
func isManagerBinding(b *rbacv1.ClusterRoleBinding, roleSuffix string) bool {
	return b.RoleRef.APIGroup == rbacv1.GroupName && b.RoleRef.Kind == "ClusterRole" &&
		(b.RoleRef.Name == roleSuffix || strings.HasSuffix(b.RoleRef.Name, "-"+roleSuffix))
}

// bindingDefaults are the default name of the ClusterRoleBinding that names
// the manager's ServiceAccount and the suffix of the ClusterRole it binds:
// a single cluster's manager's, or with --cluster a fleet host's.
func (f managerFlags) bindingDefaults() (binding, roleSuffix string) {
	if f.cluster != "" {
		return defaultFleetBinding, fleetRoleSuffix
	}
	return defaultManagerBinding, managerRoleSuffix
}

// findManagerIdentity reads ownergc's ClusterRoleBinding — the one named
// by --manager-clusterrolebinding; otherwise ownergc-manager-rolebinding,
// or else the one binding a ClusterRole named *-manager-role among the
// bindings labelled app.kubernetes.io/name=ownergc (with --cluster, a fleet
// host's: ownergc-metrics-auth-rolebinding, *-metrics-auth-role) — and
// returns its ServiceAccount subject (the one in --manager-namespace, when
// given).
func (c *clients) findManagerIdentity(ctx context.Context, f managerFlags) (managerIdentity, error) {
	rbac := c.kube.RbacV1().ClusterRoleBindings()
	forbidden := func(verb, what string) error {
		return fmt.Errorf("you may not %s %s to find the manager's ServiceAccount, the only one the plugin sends your token to (give --server-url, or ask for get and list on clusterrolebindings)", verb, what)
	}
	var b *rbacv1.ClusterRoleBinding
	defaultBinding, roleSuffix := f.bindingDefaults()
	name := f.binding
	if name == "" {
		name = defaultBinding
	} else if err := validName("--manager-clusterrolebinding", name); err != nil {
		return managerIdentity{}, err
	}
	got, err := rbac.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && !isManagerBinding(got, roleSuffix):
		return managerIdentity{}, fmt.Errorf("clusterrolebinding %s binds %s %s, not the manager's ClusterRole (*-%s): the plugin does not know which ServiceAccount the manager runs as (name its binding with --manager-clusterrolebinding, or give --server-url)",
			name, got.RoleRef.Kind, display(got.RoleRef.Name), roleSuffix)
	case err == nil:
		b = got
	case isForbidden(err):
		return managerIdentity{}, forbidden("get", "clusterrolebinding "+name)
	case !isNotFound(err):
		return managerIdentity{}, fmt.Errorf("reading clusterrolebinding %s: %w", name, err)
	case f.binding != "":
		return managerIdentity{}, fmt.Errorf("clusterrolebinding %s not found (--manager-clusterrolebinding)", name)
	default:
		// Installed under another name: look among ownergc's objects.
		list, err := rbac.List(ctx, metav1.ListOptions{LabelSelector: ownergcNameLabel})
		switch {
		case isForbidden(err):
			return managerIdentity{}, forbidden("list", "the clusterrolebindings labelled "+ownergcNameLabel)
		case err != nil:
			return managerIdentity{}, fmt.Errorf("listing the clusterrolebindings labelled %s: %w", ownergcNameLabel, err)
		}
		var found []string
		for i := range list.Items {
			if isManagerBinding(&list.Items[i], roleSuffix) {
				b = &list.Items[i]
				found = append(found, b.Name)
			}
		}
		switch len(found) {
		case 0:
			return managerIdentity{}, fmt.Errorf("ownergc's clusterrolebinding not found: none is named %s, and none labelled %s binds a ClusterRole *-%s: is ownergc installed? (name its binding with --manager-clusterrolebinding, or give --server-url)",
				defaultBinding, ownergcNameLabel, roleSuffix)
		case 1:
		default:
			slices.Sort(found)
			return managerIdentity{}, fmt.Errorf("several clusterrolebindings bind a ClusterRole *-%s (%s): name the manager's with --manager-clusterrolebinding",
				roleSuffix, strings.Join(found, ", "))
		}
	}

	id := managerIdentity{binding: b.Name, role: b.RoleRef.Name}
	var accounts []string
	for _, s := range b.Subjects {
		if s.Kind != rbacv1.ServiceAccountKind || (f.namespace != "" && s.Namespace != f.namespace) {
			continue
		}
		id.namespace, id.serviceAccount = s.Namespace, s.Name
		accounts = append(accounts, display(s.Namespace)+"/"+display(s.Name))
	}
	in := ""
	if f.namespace != "" {
		in = " in namespace " + f.namespace + " (--manager-namespace)"
	}
	switch len(accounts) {
	case 0:
		return managerIdentity{}, fmt.Errorf("clusterrolebinding %s binds no ServiceAccount%s: the plugin does not know which one the manager runs as", b.Name, in)
	case 1:
	default:
		return managerIdentity{}, fmt.Errorf("clusterrolebinding %s binds several ServiceAccounts%s (%s): name the manager's namespace with --manager-namespace", b.Name, in, strings.Join(accounts, ", "))
	}
	if err := validNamespace("clusterrolebinding "+b.Name+"'s ServiceAccount namespace", id.namespace); err != nil {
		return managerIdentity{}, err
	}
	if err := validName("clusterrolebinding "+b.Name+"'s ServiceAccount", id.serviceAccount); err != nil {
		return managerIdentity{}, err
	}
	return id, nil
}

// managerPod picks the manager pod to ask, in the namespace of the
// manager's ServiceAccount: the leader when the Lease can be read (a
// standby has the graph but not the queues), otherwise any ready pod of
// the Deployment. It refuses a pod that does not run as that
// ServiceAccount.
func (c *clients) managerPod(ctx context.Context, id managerIdentity, deployment string) (string, error) {
	namespace := id.namespace
	if err := validName("--manager-deployment", deployment); err != nil {
		return "", err
	}
	d, err := c.kube.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
	switch {
	case isNotFound(err):
		return "", fmt.Errorf("deployment %s/%s not found: the manager runs as %s, is its Deployment named otherwise? (name it with --manager-deployment, or give --server-url)", namespace, deployment, id)
	case isForbidden(err):
		return "", fmt.Errorf("you may not get deployment %s/%s to find the manager's pod (give --server-url, or ask for get on deployments, list on pods and create on pods/portforward there)", namespace, deployment)
	case err != nil:
		return "", fmt.Errorf("reading deployment %s/%s: %w", namespace, deployment, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("deployment %s/%s: %w", namespace, deployment, err)
	}
	pods, err := c.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", fmt.Errorf("listing the pods of deployment %s/%s: %w", namespace, deployment, err)
	}
	leader := ""
	if l, err := c.kube.CoordinationV1().Leases(namespace).Get(ctx, leaseName, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
		leader, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_") // controller-runtime's identity: <hostname>_<uuid>
	}
	var pick *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !podServing(p) {
			continue
		}
		if pick == nil || p.Name == leader {
			pick = p
		}
	}
	if pick == nil {
		return "", fmt.Errorf("deployment %s/%s has no ready pod (%d pods)", namespace, deployment, len(pods.Items))
	}
	if err := checkManagerPod(pick, id); err != nil {
		return "", err
	}
	return pick.Name, nil
}

// clusterGCStatuses are the fleet host's reports on its members, each
// named after its member and naming the replica that collects it.
var clusterGCStatuses = ownergcv1alpha1.GroupVersion.WithResource("clustergcstatuses")

// replicaPod is, with --cluster, the manager pod that collects the member:
// the replica its ClusterGCStatus on the host names (a pod's name: one of
// a sharded host's StatefulSet, or the leader of config/fleet's
// Deployment), read in the namespace of the manager's ServiceAccount (the
// manager's --cluster-namespace by default). Empty, and no error, when the
// plugin may not read the status (ownergc-fleet-member-reader grants it),
// finds none (a member not reported yet, another --cluster-namespace), or
// the status names no replica or one that is no pod (a --replica-id of
// another kind): managerPod picks then, as without --cluster. It refuses a
// pod that is not ready or does not run as the manager's ServiceAccount.
func (c *clients) replicaPod(ctx context.Context, id managerIdentity, cluster string) (string, error) {
	if cluster == "" || c.dynamic == nil {
		return "", nil
	}
	u, err := c.dynamic.Resource(clusterGCStatuses).Namespace(id.namespace).Get(ctx, cluster, metav1.GetOptions{})
	switch {
	case isNotFound(err), isForbidden(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading ClusterGCStatus %s/%s to find the replica that collects the member: %w", id.namespace, cluster, err)
	}
	replica, _, _ := unstructured.NestedString(u.Object, "status", "replica")
	if replica == "" {
		return "", nil
	}
	if err := validName("ClusterGCStatus "+cluster+"'s status.replica", replica); err != nil {
		return "", err
	}
	pods, err := c.kube.CoreV1().Pods(id.namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", replica).String()})
	if err != nil {
		return "", fmt.Errorf("listing pod %s/%s, the replica that collects member %s: %w", id.namespace, replica, cluster, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Name != replica {
			continue
		}
		if !podServing(p) {
			return "", fmt.Errorf("pod %s/%s, the replica that collects member %s (its ClusterGCStatus says), is not ready: ask again once it is, or once another replica has taken the member", id.namespace, replica, cluster)
		}
		if err := checkManagerPod(p, id); err != nil {
			return "", err
		}
		return p.Name, nil
	}
	return "", nil
}

// podServing reports whether p can be asked: running, ready and not being
// deleted.
func podServing(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p)
}

// checkManagerPod returns an error unless p runs as the manager's
// ServiceAccount.
func checkManagerPod(p *corev1.Pod, id managerIdentity) error {
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default" // as the ServiceAccount admission plugin sets it
	}
	if p.Namespace == id.namespace && sa == id.serviceAccount {
		return nil
	}
	return fmt.Errorf("pod %s/%s runs as ServiceAccount %s/%s, not as the manager's %s: the plugin sends your token only to a pod running as the manager, and does not ask this one",
		p.Namespace, p.Name, p.Namespace, display(sa), id)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
