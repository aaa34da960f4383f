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
	"regexp"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

// An owner deleted in the foreground and held by a dependent's finalizer:
// tree shows the owner waiting in the foreground and the dependent that
// holds it with its finalizer; why, from the manager and from API reads
// alone, names the dependent and its finalizer.
func TestForegroundDeletionBlockedByAFinalizer(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	kc := kubeconfig(t, user(t, ns), ns)
	owner := cp.Create(t, framework.ConfigMaps, ns, "fg-owner")
	held := cp.Create(t, framework.ConfigMaps, ns, "held", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	manager.WaitObserved(t, owner, held)
	cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
	cp.WaitDeleting(t, held, framework.HoldFinalizer, "ownergc deletes the blocking dependent")

	tree := mustRun(t, kc, "tree", "configmap/fg-owner")
	wantLines(t, tree, "tree of the owner",
		`NAMESPACE +NAME +REF +AGE +STATUS`,
		q(ns)+` +ConfigMap/fg-owner +\w+ +Deleting for \w+ \(foreground: waits for 1 blocking dependent\); finalizers: foregroundDeletion`,
		q(ns)+` +└─ConfigMap/held +blocking +\w+ +Deleting for \w+; finalizers: `+q(framework.HoldFinalizer))

	why := mustRun(t, kc, append([]string{"why", "cm", "fg-owner"}, withManager()...)...)
	wantLines(t, why, "the manager's explanation of the owner",
		`Object: +ConfigMap `+q(ns+"/fg-owner")+` \(uid `+q(string(owner.UID))+`\)`,
		`Explained by: +the ownergc manager \(https://`+q(manager.MetricsAddr)+`\)`,
		`Graph: +Observed \(.*\)`,
		`Deletion: +being deleted for \w+ \(since .*\), in the foreground: it waits for its blocking dependents; finalizers: foregroundDeletion`,
		`Dependents: +1 \(1 blocking shown\)`,
		`  ConfigMap/held \[blocking\]: remains: it carries finalizers `+q(framework.HoldFinalizer),
		`Queue: +no failed attempts`,
		`Decision: +being deleted in the foreground: it waits until its blocking dependents are gone \(1 listed, 0 hidden\)`)
	noLines(t, why, "the manager's explanation", `Not known without the manager:`)

	var asJSON struct {
		Source     string
		Dependents []struct{ Name, Remains string }
	}
	decode(t, mustRun(t, kc, append([]string{"why", "configmap/fg-owner", "-o", "json"}, withManager()...)...), &asJSON)
	if asJSON.Source != "Manager" || len(asJSON.Dependents) != 1 || asJSON.Dependents[0].Name != "held" ||
		!strings.Contains(asJSON.Dependents[0].Remains, framework.HoldFinalizer) {
		t.Errorf("why -o json: %+v", asJSON)
	}

	// Without --server-url the plugin looks for the manager's
	// ClusterRoleBinding, which the user may not read.
	fallback := mustRun(t, kc, "why", "configmap/fg-owner")
	wantLines(t, fallback, "the explanation from API reads alone",
		`Explained by: +API reads alone, since the ownergc manager could not answer: you may not get clusterrolebinding ownergc-manager-rolebinding to find the manager's ServiceAccount, the only one the plugin sends your token to \(give --server-url, .*\)`,
		`Graph: +Unknown \(not known without the manager\)`,
		`Deletion: +being deleted for .*, in the foreground: it waits for its blocking dependents; finalizers: foregroundDeletion`,
		`  ConfigMap/held \[blocking\]: remains: it carries finalizers `+q(framework.HoldFinalizer),
		`Queue: +not known without the manager`,
		`Decision: +being deleted in the foreground: it waits until its blocking dependents are gone \(1 listed, 0 hidden\)`,
		`Not known without the manager:`,
		`  - the collector's queue: .*`)

	// One who may list ConfigMaps but not Secrets is told that dependents
	// among the Secrets, if any, are not shown.
	narrow := kubeconfig(t, cp.NewIdentity(t, ns, "configmaps-only", false, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}), ns)
	tree = mustRun(t, narrow, "tree", "configmap/fg-owner")
	wantLines(t, tree, "tree for one who may list only ConfigMaps", q(ns)+` +└─ConfigMap/held +blocking .*`)
	if !regexp.MustCompile(`^Warning: dependents in these resources are not shown, they could not be listed: \d+ resources you may not list \(.*\)\n$`).MatchString(tree.Stderr) {
		t.Errorf("tree should warn about the resources it could not list:\n%s", tree)
	}
	wantLines(t, mustRun(t, narrow, "why", "configmap/fg-owner"), "why from API reads alone for one who may list only ConfigMaps",
		`  - dependents in resources that could not be listed: \d+ resources you may not list \(.*\)`)

	cp.RemoveFinalizer(t, held, framework.HoldFinalizer)
	cp.WaitGone(t, "the foreground deletion completes once the finalizer is removed", held, owner)
}

// A background cascade in progress: the top owner is gone, a middle owner
// is held by its finalizer with its own dependents still there, and a
// dependent of the top owner cannot be deleted (an admission policy refuses).
// tree shows what remains and the dangling owner; why says the dependent
// will be deleted because its owner is gone, and (from the manager) why it
// is not yet.
func TestBackgroundCascadeInProgress(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	kc := kubeconfig(t, user(t, ns), ns)
	refuseDeletions(t, ns)

	top := cp.Create(t, framework.ConfigMaps, ns, "top")
	middle := cp.Create(t, framework.ConfigMaps, ns, "middle", framework.OwnedBy(top.Ref(false)), framework.WithFinalizers(framework.HoldFinalizer))
	leaf1 := cp.Create(t, framework.ConfigMaps, ns, "leaf-1", framework.OwnedBy(controllerRef(middle)))
	leaf2 := cp.Create(t, framework.ConfigMaps, ns, "leaf-2", framework.OwnedBy(middle.Ref(false)))
	stuck := cp.Create(t, framework.ConfigMaps, ns, "stuck", framework.OwnedBy(top.Ref(false)), framework.WithLabels(map[string]string{undeletable: "true"}))
	manager.WaitObserved(t, top, middle, leaf1, leaf2, stuck)

	tree := mustRun(t, kc, "tree", "configmap/top")
	wantLines(t, tree, "tree before the deletion",
		q(ns)+` +ConfigMap/top +\w+`,
		q(ns)+` +├─ConfigMap/middle +- +\w+ +finalizers: `+q(framework.HoldFinalizer),
		q(ns)+` +│ ├─ConfigMap/leaf-1 +controller,blocking +\w+`,
		q(ns)+` +│ └─ConfigMap/leaf-2 +- +\w+`,
		q(ns)+` +└─ConfigMap/stuck +- +\w+`)

	cp.DeleteWith(t, top, metav1.DeletePropagationBackground)
	cp.WaitDeleting(t, middle, framework.HoldFinalizer, "ownergc deletes the middle owner once the top one is gone")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		var ex struct{ Queue struct{ Failures int } }
		r := mustRun(t, kc, append([]string{"why", "configmap/stuck", "-o", "json"}, withManager()...)...)
		decode(t, r, &ex)
		if ex.Queue.Failures == 0 {
			return fmt.Errorf("the collector has not failed to delete it yet")
		}
		return nil
	}, "the collector should try to delete %s, and fail", stuck)

	tree = mustRun(t, kc, "tree", "configmap/middle")
	wantLines(t, tree, "tree of the middle owner, being deleted",
		q(ns)+` +ConfigMap/middle +\w+ +Deleting for \w+; finalizers: `+q(framework.HoldFinalizer),
		q(ns)+` +├─ConfigMap/leaf-1 +controller,blocking +\w+`,
		q(ns)+` +└─ConfigMap/leaf-2 +- +\w+`)

	up := mustRun(t, kc, "tree", "configmap/leaf-1", "--up")
	wantLines(t, up, "owners of a leaf",
		q(ns)+` +ConfigMap/leaf-1 +\w+`,
		q(ns)+` +└─ConfigMap/middle +controller,blocking +\w+ +Deleting for \w+; finalizers: `+q(framework.HoldFinalizer),
		q(ns)+` +  └─ConfigMap/top +- +- +Dangling: no such object`)

	why := mustRun(t, kc, append([]string{"why", "configmap/stuck"}, withManager()...)...)
	wantLines(t, why, "the manager's explanation of the dependent it cannot delete",
		`Owners: +1`,
		`  ConfigMap/top: Dangling: .*`,
		`Queue: +\d+ failed attempts? in a row; last error: .*`+q(refusal)+`.*`,
		`Decision: +will be deleted with propagation Background: all its owners are gone`)

	fallback := mustRun(t, kc, "why", "configmap/stuck", "--server-url", "https://127.0.0.1:1", "--manager-insecure-skip-tls-verify")
	wantLines(t, fallback, "the explanation from API reads alone",
		`Explained by: +API reads alone, since the ownergc manager could not answer: requesting /explain from the manager \(https://127.0.0.1:1\): .*connection refused`,
		`  ConfigMap/top: Dangling: no such object`,
		`Decision: +will be deleted with propagation Background \(unless the GCPolicy, which could not be read, says otherwise\): all its owners are gone`,
		`  - the collector's queue: whether it is working on the object, its retries and last error .*`)

	why = mustRun(t, kc, append([]string{"why", "configmap/leaf-2"}, withManager()...)...)
	wantLines(t, why, "the manager's explanation of a leaf whose owner is being deleted",
		`  ConfigMap/middle: Solid: .*`,
		`Decision: +kept: owner ConfigMap middle exists`)

	allowDeletion(t, stuck)
	cp.WaitGone(t, "the collector deletes the dependent once the policy allows it", stuck)
	cp.RemoveFinalizer(t, middle, framework.HoldFinalizer)
	cp.WaitGone(t, "the cascade completes once the middle owner's finalizer is removed", middle, leaf1, leaf2)
}

// An owner reference to a kind that is not served: why says the owner
// cannot be verified, from the manager and from API reads alone; tree --up
// says so too.
func TestUnverifiableOwner(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	kc := kubeconfig(t, user(t, ns), ns)
	ghost := metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "ghost", UID: uuid.NewUUID()}
	dep := cp.Create(t, framework.ConfigMaps, ns, "haunted", framework.OwnedBy(ghost))
	manager.WaitObserved(t, dep)

	why := mustRun(t, kc, append([]string{"why", "configmaps/haunted"}, withManager()...)...)
	wantLines(t, why, "the manager's explanation",
		// The caller's access to an owner of an unserved kind cannot be
		// checked: the manager counts it without naming it.
		`Owners: +1`,
		`  Ghost/ghost: not classified for you: the manager names only the owners it can tell you may get`,
		`Decision: +kept: owner .* cannot be verified; the collector never deletes on what it cannot verify`)

	fallback := mustRun(t, kc, "why", "configmaps/haunted")
	wantLines(t, fallback, "the explanation from API reads alone",
		`  Ghost/ghost: Unverifiable: its kind nope.example.com/v1, Kind=Ghost is not served by the API server: it cannot be verified, and that is never a reason to delete`,
		`Decision: +kept: owner Ghost ghost cannot be verified; the collector never deletes on what it cannot verify`,
		`  - how the collector classifies the owners shown Unverifiable or Unknown here: .*`)

	up := mustRun(t, kc, "tree", "cm/haunted", "--up")
	wantLines(t, up, "owners of the dependent",
		q(ns)+` +ConfigMap/haunted +\w+`,
		` +└─Ghost/ghost +- +- +Unverifiable: its kind nope.example.com/v1, Kind=Ghost is not served by the API server: .*`)
	cp.Survive(t, "an owner that cannot be verified is never a reason to delete", dep)
}

// Events are ignored by default: why says the collector leaves them alone.
func TestIgnoredResource(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	kc := kubeconfig(t, user(t, ns), ns)
	events := framework.Kind{GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
	cp.Create(t, events, ns, "an-event", func(u *unstructured.Unstructured) {
		u.Object["involvedObject"] = map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "x"}
		u.Object["reason"], u.Object["message"] = "Test", "an event"
	})

	// The manager creates the policy with the defaults.
	framework.WaitPolicyInForce(t, cp.Client, "the manager should create the GCPolicy default")
	why := mustRun(t, kc, append([]string{"why", "ev/an-event"}, withManager()...)...)
	wantLines(t, why, "the manager's explanation of an event",
		`Object: +Event `+q(ns+"/an-event")+` .*`,
		`Graph: +Ignored \(its resource is ignored by the GCPolicy\)`,
		`Decision: +left alone: its resource events is ignored by the GCPolicy`)

	// The user may not read the GCPolicy: the plugin says what the default is.
	fallback := mustRun(t, kc, "why", "event", "an-event")
	wantLines(t, fallback, "the explanation from API reads alone",
		`Decision: +left alone: its resource events is ignored by default \(unless the GCPolicy, which could not be read, says otherwise\)`,
		`  - the GCPolicy in force \(ignored resources, protection, propagation, mode\), so the decision assumes its defaults: you may not get the GCPolicy default`)

	// One who may read it learns that the GCPolicy ignores events.
	reader := cp.NewIdentity(t, ns, "policy-reader", true,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"ownergc.io"}, Resources: []string{"gcpolicies"}, Verbs: []string{"get"}})
	fallback = mustRun(t, kubeconfig(t, reader, ns), "why", "events/an-event")
	wantLines(t, fallback, "the explanation from API reads alone, for one who may read the GCPolicy",
		`Decision: +left alone: its resource events is ignored by the GCPolicy`)
}

// kubectl's ways of naming objects: short names, plurals, group-qualified
// resources, KIND NAME; and the tree of a Deployment.
func TestTreeOfADeployment(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	kc := kubeconfig(t, user(t, ns), "default") // the namespace comes from -n
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)}}
	create(t, deploy)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-7d4b9", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{controllerOf(deploy, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)}}
	create(t, rs)
	tmpl := podTemplate(labels)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-7d4b9-x2x9q", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{controllerOf(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}, Spec: tmpl.Spec}
	create(t, pod)

	for _, args := range [][]string{{"deploy/web"}, {"deployment", "web"}, {"deployments.apps/web"}, {"deployments.v1.apps/web"}, {"Deployment/web"}} {
		tree := mustRun(t, kc, append([]string{"tree", "-n", ns}, args...)...)
		wantLines(t, tree, "tree of the Deployment",
			q(ns)+` +Deployment/web +\w+`,
			q(ns)+` +└─ReplicaSet/web-7d4b9 +controller,blocking +\w+`,
			q(ns)+` +  └─Pod/web-7d4b9-x2x9q +controller,blocking +\w+`)
	}
	up := mustRun(t, kc, "tree", "-n", ns, "po/web-7d4b9-x2x9q", "--up")
	wantLines(t, up, "owners of the Pod",
		q(ns)+` +Pod/web-7d4b9-x2x9q +\w+`,
		q(ns)+` +└─ReplicaSet/web-7d4b9 +controller,blocking +\w+`,
		q(ns)+` +  └─Deployment/web +controller,blocking +\w+`)

	var tree struct {
		Direction string
		Root      struct {
			Object   struct{ Kind, Name string }
			Children []struct {
				Object    struct{ Kind, Name string }
				Reference struct{ Controller, BlockOwnerDeletion bool }
				Children  []struct{ Object struct{ Kind, Name string } }
			}
		}
	}
	decode(t, mustRun(t, kc, "tree", "-n", ns, "replicasets.apps/web-7d4b9", "-o", "json"), &tree)
	if tree.Direction != "Dependents" || tree.Root.Object.Name != "web-7d4b9" || len(tree.Root.Children) != 1 ||
		tree.Root.Children[0].Object.Kind != "Pod" || !tree.Root.Children[0].Reference.Controller {
		t.Errorf("tree -o json: %+v", tree)
	}
	out := mustRun(t, kc, "tree", "-n", ns, "rs/web-7d4b9", "-o", "yaml")
	if !strings.Contains(out.Stdout, "direction: Dependents\n") {
		t.Errorf("tree -o yaml:\n%s", out)
	}

	for _, bad := range [][]string{{"tree", "-n", ns, "nosuchkind/x"}, {"tree", "-n", ns, "deploy/nope"}, {"tree", "web"}} {
		if r := runPlugin(t, kc, bad...); r.Err == nil || !strings.HasPrefix(r.Stderr, "error: ") {
			t.Errorf("a wrong argument should fail with an error:\n%s", r)
		}
	}
}

// graph prints the manager's graph around an object, as DOT or JSON, to
// one with the graph grant, and refuses others with what to ask for.
func TestGraph(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "graph-owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "graph-dep", framework.OwnedBy(owner.Ref(true)))
	manager.WaitObserved(t, owner, dep)
	grapher := cp.NewIdentity(t, ns, "grapher", true,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{NonResourceURLs: []string{"/debug/graph"}, Verbs: []string{"get"}})
	kc := kubeconfig(t, grapher, ns)

	dot := mustRun(t, kc, append([]string{"graph", "configmap/graph-owner"}, withManager()...)...)
	wantLines(t, dot, "DOT around the owner",
		`strict digraph full \{`,
		`  "`+q(string(dep.UID))+`" -> "`+q(string(owner.UID))+`";`,
		`    name="graph-dep"`)

	var g struct {
		Nodes []struct {
			UID    string
			Name   string
			Owners []struct{ UID string }
		}
	}
	decode(t, mustRun(t, kc, append([]string{"graph", "configmap/graph-owner", "-o", "json"}, withManager()...)...), &g)
	names := map[string]bool{}
	for _, n := range g.Nodes {
		names[n.Name] = true
	}
	if len(g.Nodes) != 2 || !names["graph-owner"] || !names["graph-dep"] {
		t.Errorf("graph -o json around the owner: %+v", g)
	}

	r := runPlugin(t, kubeconfig(t, user(t, ns), ns), append([]string{"graph", "configmap/graph-owner"}, withManager()...)...)
	if r.Err == nil || !strings.Contains(r.Stderr, "403 Forbidden") || !strings.Contains(r.Stderr, "--clusterrole=ownergc-graph-reader") {
		t.Errorf("graph for one without the grant should fail, saying which ClusterRole it needs:\n%s", r)
	}
}

// Without --server-url, why learns the manager's ServiceAccount from
// ownergc's ClusterRoleBinding, looks for the manager's Deployment in that
// ServiceAccount's namespace, picks its leader pod (by the leader election
// Lease) and port-forwards to it through the API server — only if the pod
// runs as that ServiceAccount. It says what it found at each step when it
// cannot. (This control plane has no kubelet: the port-forward itself
// fails; the audit log shows whether the plugin tried it.)
func TestWhyFindsTheManagerPod(t *testing.T) {
	const ns = "ownergc-system"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create"}},
	}
	operator := cp.NewIdentity(t, ns, "operator", false, rules...)
	kc := kubeconfig(t, operator, ns)
	deploy, lease := managerDeployment(ns, podTemplate(managerLabels)), leaderLease(ns)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	accounts := []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ownergc-controller-manager"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ownergc-manager-rolebinding"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ownergc-manager-role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "ownergc-controller-manager"}}}
	// As the Helm chart of release "gc" would name it.
	helmBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gc-ownergc-manager-rolebinding",
		Labels: map[string]string{"app.kubernetes.io/name": "ownergc"}}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gc-ownergc-manager-role"},
		Subjects: binding.Subjects}
	var pods []*corev1.Pod
	t.Cleanup(func() { // the namespace is not the test's own
		for _, o := range []client.Object{deploy, lease, settings, accounts[0], accounts[1], binding, helmBinding} {
			if err := cp.Client.Delete(framework.Context(t), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
			}
		}
	})
	create(t, settings)
	explainedBy := func(why string) string {
		return `Explained by: +API reads alone, since the ownergc manager could not answer: ` + why
	}

	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "one who may not read ClusterRoleBindings",
		explainedBy(`you may not get clusterrolebinding ownergc-manager-rolebinding to find the manager's ServiceAccount, the only one the plugin sends your token to \(give --server-url, or ask for get and list on clusterrolebindings\)`))

	// The operator may also read ClusterRoleBindings.
	operator = cp.NewIdentity(t, ns, "operator", true,
		rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list"}})
	kc = kubeconfig(t, operator, ns)
	waitOutput(t, kc, "ownergc's clusterrolebinding not found",
		"the operator's grant to read ClusterRoleBindings should be honoured", "why", "configmap/settings")
	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "no ClusterRoleBinding",
		explainedBy(`ownergc's clusterrolebinding not found: none is named ownergc-manager-rolebinding, and none labelled app.kubernetes.io/name=ownergc binds a ClusterRole \*-manager-role: is ownergc installed\? .*`))

	create(t, binding)
	managerSA := `ServiceAccount ownergc-system/ownergc-controller-manager \(bound to the manager's ClusterRole ownergc-manager-role by ClusterRoleBinding ownergc-manager-rolebinding\)`
	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "no Deployment",
		explainedBy(`deployment ownergc-system/ownergc-controller-manager not found: the manager runs as `+managerSA+`, is its Deployment named otherwise\? .*`))

	create(t, deploy)
	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "no pod",
		explainedBy(`deployment ownergc-system/ownergc-controller-manager has no ready pod \(0 pods\)`))

	for _, sa := range accounts {
		create(t, sa)
	}
	// Pods of the Deployment's labels, ready, the leader among them, that
	// run as another ServiceAccount than the manager's: anyone who may
	// create pods there could make them.
	startPods := func(serviceAccount string) {
		t.Helper()
		for _, p := range pods {
			if err := cp.Client.Delete(framework.Context(t), p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("deleting pod %s: %v", p.Name, err)
			}
			framework.WaitGone(t, cp.Client, p, framework.CascadeTimeout, "the pod is deleted (it runs on no node)")
		}
		spec := podTemplate(managerLabels).Spec
		spec.ServiceAccountName = serviceAccount
		pods = startManagerPods(t, ns, spec)
	}
	startPods("intruder")
	create(t, lease)
	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "the leader's pod, which runs as another ServiceAccount",
		explainedBy(`pod ownergc-system/manager-b runs as ServiceAccount ownergc-system/intruder, not as the manager's `+managerSA+
			`: the plugin sends your token only to a pod running as the manager, and does not ask this one`))

	// Installed by Helm, the binding carries the release's prefix: the
	// plugin finds it by its label and the ClusterRole it binds.
	if err := cp.Client.Delete(framework.Context(t), binding); err != nil {
		t.Fatalf("deleting the ClusterRoleBinding: %v", err)
	}
	create(t, helmBinding)
	startPods("ownergc-controller-manager")
	wantLines(t, mustRun(t, kc, "why", "configmap/settings"), "the leader's pod, which runs as the manager's ServiceAccount on no node",
		explainedBy(`port-forwarding to pod ownergc-system/manager-b: .*does not have a host assigned.*`))

	// The audit log: one port-forward, to the pod that runs as the
	// manager; none to the one that does not (so no token could go there).
	operatorUser := "system:serviceaccount:" + ns + ":operator"
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		writes, err := cp.Writes(operatorUser)
		if err != nil {
			return err
		}
		var forwards []string
		for _, w := range writes {
			if w.ObjectRef.Resource == "pods" && w.ObjectRef.Subresource == "portforward" {
				forwards = append(forwards, w.String())
			}
		}
		if len(forwards) != 1 || !strings.Contains(forwards[0], ns+"/manager-b") {
			return fmt.Errorf("the operator's port-forwards: %v, want one, to the pod that runs as the manager", forwards)
		}
		return nil
	}, "the plugin should port-forward once, to the pod that runs as the manager's ServiceAccount")
}

// undeletable labels the ConfigMaps refuseDeletions protects; refusal is in
// the message of the refusal.
const (
	undeletable = "ownergc.test/undeletable"
	refusal     = "ownergc test: this ConfigMap may not be deleted"
)

// refuseDeletions makes the API server refuse to delete the ConfigMaps of
// ns labelled undeletable=true, with a ValidatingAdmissionPolicy, and waits
// until it does.
func refuseDeletions(t *testing.T, ns string) {
	t.Helper()
	refuse(t, ns, admissionregistrationv1.Delete)
}

// refuse makes the API server refuse the operations on the ConfigMaps of
// ns labelled undeletable=true (deletions among them), and waits until it
// refuses deletions.
func refuse(t *testing.T, ns string, ops ...admissionregistrationv1.OperationType) {
	t.Helper()
	configMapPolicy{
		name:       "refuse-" + ns,
		ops:        ops,
		validation: admissionregistrationv1.Validation{Expression: "false", Message: refusal},
		namespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		objects:    &metav1.LabelSelector{MatchLabels: map[string]string{undeletable: "true"}},
	}.enforce(t, func() error {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe", Labels: map[string]string{undeletable: "true"}}}
		create(t, probe)
		err := cp.Client.Delete(framework.Context(t), probe)
		if err == nil || !strings.Contains(err.Error(), refusal) {
			return fmt.Errorf("deleting a protected ConfigMap: %v", err)
		}
		return nil
	}, "the admission policy should refuse deletions")
}

// configMapPolicy is a ValidatingAdmissionPolicy and its binding: the API
// server refuses the operations ops on the ConfigMaps that namespaces and
// objects select, unless validation passes.
type configMapPolicy struct {
	name                string
	ops                 []admissionregistrationv1.OperationType
	variables           []admissionregistrationv1.Variable
	validation          admissionregistrationv1.Validation
	namespaces, objects *metav1.LabelSelector
}

// enforce creates the policy and its binding, deletes them when the test
// ends, and waits until inForce says the policy is in force.
func (p configMapPolicy) enforce(t *testing.T, inForce func() error, msg string) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: p.ops,
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}}},
			Variables:   p.variables,
			Validations: []admissionregistrationv1.Validation{p.validation},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: p.name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        p.name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: p.namespaces, ObjectSelector: p.objects},
		}}
	create(t, policy)
	create(t, binding)
	t.Cleanup(func() {
		_ = cp.Client.Delete(framework.Context(t), binding)
		_ = cp.Client.Delete(framework.Context(t), policy)
	})
	framework.Eventually(t, framework.CascadeTimeout, inForce, "%s", msg)
}

// allowDeletion removes the label that protects o from deletion.
func allowDeletion(t *testing.T, o framework.Object) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + undeletable + `":null}}}`)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
	if err := cp.Client.Patch(framework.Context(t), cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("unlabelling %s: %v", o, err)
	}
}

func controllerRef(o framework.Object) metav1.OwnerReference {
	r := o.Ref(true)
	r.Controller = ptr.To(true)
	return r
}

func controllerOf(o client.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	r := framework.OwnerRef(o, gvk, true)
	r.Controller = ptr.To(true)
	return r
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
}

// A stand-in manager, which why looks for (but for its ClusterRoleBinding)
// to port-forward to its leader: the Deployment ownergc-controller-manager
// in ns, whose pods carry managerLabels, the leader election Lease, held by
// manager-b, and the pods manager-a and manager-b (startManagerPods).
var managerLabels = map[string]string{"control-plane": "controller-manager"}

func managerDeployment(ns string, template corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ownergc-controller-manager"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: managerLabels}, Template: template}}
}

func leaderLease(ns string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "garbage-collector.ownergc.io"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("manager-b_6c0b3f4e-0b5e-4a8e-9d0c-2f0c1d2e3f4a")}}
}

// startManagerPods creates the stand-in manager's pods manager-a and
// manager-b in ns, of spec, running and ready. No kubelet runs them: a
// port-forward to one is authorized, then fails. They are deleted when the
// test ends.
func startManagerPods(t *testing.T, ns string, spec corev1.PodSpec) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for _, name := range []string{"manager-a", "manager-b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: managerLabels}, Spec: *spec.DeepCopy()}
		create(t, pod)
		t.Cleanup(func() {
			if err := cp.Client.Delete(framework.Context(t), pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting pod %s: %v", pod.Name, err)
			}
		})
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := cp.Client.Status().Update(framework.Context(t), pod); err != nil {
			t.Fatalf("making pod %s ready: %v", pod.Name, err)
		}
		pods = append(pods, pod)
	}
	return pods
}

func create(t *testing.T, o client.Object) {
	t.Helper()
	if err := cp.Client.Create(framework.Context(t), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}
