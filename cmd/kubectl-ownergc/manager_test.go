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
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const token = "the-users-token"

// recorder is a server that records the headers of the requests it gets
// and answers 200 {}.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	requests []http.Header
}

func newRecorder(t *testing.T, tls bool, handler http.HandlerFunc) *recorder {
	r := &recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Header.Clone())
		r.mu.Unlock()
		if handler != nil {
			handler(w, req)
			return
		}
		_, _ = w.Write([]byte("{}"))
	})
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) got() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// caFile writes the server's certificate as a CA file.
func (r *recorder) caFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ask connects to the manager with the flags and asks it for /explain.
func ask(c *clients, f managerFlags) error {
	if f.timeout == 0 {
		f.timeout = 10 * time.Second
	}
	if f.deployment == "" {
		f.deployment = "ownergc-controller-manager"
	}
	mc, err := c.connectManager(context.Background(), f)
	if err != nil {
		return err
	}
	defer mc.close()
	_, err = mc.get(context.Background(), "/explain", nil)
	return err
}

func withToken() *clients { return &clients{config: &rest.Config{BearerToken: token}} }

// --server-url http:// is refused before anything is sent.
func TestServerURLRefusesHTTP(t *testing.T) {
	srv := newRecorder(t, false, nil)
	err := ask(withToken(), managerFlags{serverURL: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "is refused: the plugin sends your bearer token to the manager, never in cleartext") {
		t.Errorf("an http:// URL: %v", err)
	}
	for _, bad := range []string{"ftp://x", "https://", "x:8443", "https://user:pw@x"} {
		if err := ask(withToken(), managerFlags{serverURL: bad}); err == nil || !strings.Contains(err.Error(), "is not an https://host:port URL") {
			t.Errorf("--server-url %s: %v", bad, err)
		}
	}
	if n := len(srv.got()); n > 0 {
		t.Errorf("the http:// server got %d requests", n)
	}
}

// The manager's certificate at --server-url is verified, against the system
// roots or --manager-ca-file; only --manager-insecure-skip-tls-verify skips
// that. kubectl's --insecure-skip-tls-verify (the rest.Config's Insecure)
// does not.
func TestServerURLVerifiesTheCertificate(t *testing.T) {
	srv := newRecorder(t, true, nil)
	c := withToken()
	c.config.Insecure = true // --insecure-skip-tls-verify: the API server's alone

	err := ask(c, managerFlags{serverURL: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "--manager-ca-file") ||
		!strings.Contains(err.Error(), "kubectl's --insecure-skip-tls-verify applies to the API server alone") {
		t.Errorf("an unknown certificate should be refused, saying what to do: %v", err)
	}
	if n := len(srv.got()); n > 0 {
		t.Fatalf("the server with an unknown certificate got %d requests", n)
	}

	// httptest's certificate is valid for 127.0.0.1 and example.com.
	if err := ask(c, managerFlags{serverURL: srv.URL, caFile: srv.caFile(t)}); err != nil {
		t.Errorf("with --manager-ca-file: %v", err)
	}
	if err := ask(c, managerFlags{serverURL: srv.URL, caFile: srv.caFile(t), serverName: "ownergc.example"}); err == nil {
		t.Error("with --manager-tls-server-name the certificate is not valid for, the request should fail")
	}
	if err := ask(c, managerFlags{serverURL: srv.URL, caFile: srv.caFile(t), serverName: "example.com"}); err != nil {
		t.Errorf("with --manager-tls-server-name example.com: %v", err)
	}
	if err := ask(c, managerFlags{serverURL: srv.URL, insecure: true}); err != nil {
		t.Errorf("with --manager-insecure-skip-tls-verify: %v", err)
	}
	got := srv.got()
	if len(got) != 3 {
		t.Fatalf("the server got %d requests, want 3", len(got))
	}
	for _, h := range got {
		if h.Get("Authorization") != "Bearer "+token {
			t.Errorf("the manager got Authorization %q", h.Get("Authorization"))
		}
	}

	if err := ask(c, managerFlags{serverURL: srv.URL, insecure: true, caFile: srv.caFile(t)}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both flags: %v", err)
	}
	if err := ask(c, managerFlags{serverURL: srv.URL, caFile: filepath.Join(t.TempDir(), "none")}); err == nil || !strings.Contains(err.Error(), "--manager-ca-file") {
		t.Errorf("a missing CA file: %v", err)
	}
}

// A redirect is not followed: it would take the token elsewhere. Nor are a
// user name and password, or impersonation headers, sent to the manager.
func TestManagerGetsOnlyTheBearerToken(t *testing.T) {
	elsewhere := newRecorder(t, false, nil)
	srv := newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusFound)
	})
	c := withToken()
	c.config.Username, c.config.Password = "user", "password"
	c.config.Impersonate = rest.ImpersonationConfig{UserName: "someone-else"}
	err := ask(c, managerFlags{serverURL: srv.URL, insecure: true})
	if err == nil || !strings.Contains(err.Error(), "which the plugin does not follow") {
		t.Errorf("a redirect: %v", err)
	}
	if n := len(elsewhere.got()); n > 0 {
		t.Errorf("the redirect was followed: %d requests", n)
	}
	got := srv.got()
	if len(got) != 1 {
		t.Fatalf("the manager got %d requests, want 1", len(got))
	}
	if a := got[0].Get("Authorization"); a != "Bearer "+token {
		t.Errorf("Authorization %q, want the bearer token", a)
	}
	if i := got[0].Get("Impersonate-User"); i != "" {
		t.Errorf("Impersonate-User %q sent to the manager", i)
	}
}

// manager is an installation of ownergc as the plugin sees it: the
// ClusterRoleBinding, the Deployment, its pods and the Lease.
func manager(podServiceAccount string, extra ...runtime.Object) *fake.Clientset {
	labels := map[string]string{"control-plane": "controller-manager"}
	objs := []runtime.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ownergc-manager-rolebinding"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ownergc-manager-role"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ownergc-system", Name: "ownergc-controller-manager"}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ownergc-system", Name: "ownergc-controller-manager"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ownergc-system", Name: leaseName},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("manager-b_1234")}},
	}
	for _, name := range []string{"manager-a", "manager-b"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ownergc-system", Name: name, Labels: labels},
			Spec: corev1.PodSpec{ServiceAccountName: podServiceAccount},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	}
	return fake.NewClientset(append(objs, extra...)...)
}

// forwarder stands for the port-forward: it records the pods it forwards
// to, and forwards to srv.
type forwarder struct {
	srv  *recorder
	pods []string
}

func (f *forwarder) forward(_ context.Context, namespace, pod string, _ int) (int, func(), error) {
	f.pods = append(f.pods, namespace+"/"+pod)
	_, port, err := net.SplitHostPort(f.srv.Listener.Addr().String())
	if err != nil {
		return 0, nil, err
	}
	p, err := strconv.Atoi(port)
	return p, func() {}, err
}

// The token goes through the port-forward only to a pod that runs as the
// ServiceAccount ownergc's ClusterRoleBinding names.
func TestPortForwardOnlyToTheManagersServiceAccount(t *testing.T) {
	srv := newRecorder(t, true, nil)
	fw := &forwarder{srv: srv}
	c := withToken()
	c.forward = fw.forward

	c.kube = manager("ownergc-controller-manager")
	if err := ask(c, managerFlags{}); err != nil {
		t.Fatalf("the manager's pod: %v", err)
	}
	if len(fw.pods) != 1 || fw.pods[0] != "ownergc-system/manager-b" {
		t.Errorf("forwarded to %v, want the leader ownergc-system/manager-b", fw.pods)
	}
	if got := srv.got(); len(got) != 1 || got[0].Get("Authorization") != "Bearer "+token {
		t.Errorf("the manager got %v", got)
	}

	for _, sa := range []string{"intruder", ""} {
		fw.pods = nil
		c.kube = manager(sa)
		err := ask(c, managerFlags{})
		want := "pod ownergc-system/manager-b runs as ServiceAccount ownergc-system/" + map[string]string{"intruder": "intruder", "": "default"}[sa] +
			", not as the manager's ServiceAccount ownergc-system/ownergc-controller-manager (bound to the manager's ClusterRole ownergc-manager-role by ClusterRoleBinding ownergc-manager-rolebinding): the plugin sends your token only to a pod running as the manager, and does not ask this one"
		if err == nil || err.Error() != want {
			t.Errorf("a pod running as %q:\n got: %v\nwant: %s", sa, err, want)
		}
		if len(fw.pods) > 0 {
			t.Errorf("a pod running as %q: forwarded to %v", sa, fw.pods)
		}
	}
	if n := len(srv.got()); n != 1 {
		t.Errorf("the manager got %d requests, want only the first one", n)
	}

	// A ServiceAccount of the manager's name in another namespace is
	// another ServiceAccount: --manager-namespace must match the binding.
	c.kube = manager("ownergc-controller-manager")
	if err := ask(c, managerFlags{namespace: "elsewhere"}); err == nil ||
		err.Error() != "clusterrolebinding ownergc-manager-rolebinding binds no ServiceAccount in namespace elsewhere (--manager-namespace): the plugin does not know which one the manager runs as" {
		t.Errorf("--manager-namespace elsewhere: %v", err)
	}
	if err := ask(c, managerFlags{namespace: "../x"}); err == nil || !strings.Contains(err.Error(), "cannot be the name of a namespace") {
		t.Errorf("--manager-namespace ../x: %v", err)
	}
	if err := ask(c, managerFlags{deployment: "../../x"}); err == nil || !strings.Contains(err.Error(), "cannot be an object's name") {
		t.Errorf("--manager-deployment ../../x: %v", err)
	}
	if len(fw.pods) > 0 {
		t.Errorf("forwarded to %v", fw.pods)
	}
}

func binding(name, role string, labelled bool, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	if labelled {
		b.Labels = map[string]string{"app.kubernetes.io/name": "ownergc"}
	}
	return b
}

func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

// The manager's ServiceAccount comes from ownergc's ClusterRoleBinding,
// found by its name or, installed under another name (a Helm release's
// prefix), by its label and the ClusterRole it binds.
// With --cluster, every request to the manager names the member.
func TestClusterNamesTheMemberInEveryRequest(t *testing.T) {
	var got []string
	r := newRecorder(t, false, func(w http.ResponseWriter, req *http.Request) {
		got = append(got, req.URL.Query().Get("cluster")+" "+req.URL.Query().Get("name"))
	})
	base, _ := url.Parse(r.URL)
	for _, cluster := range []string{"", "tenant-a"} {
		m := &managerClient{base: base, http: r.Client(), cluster: cluster}
		if _, err := m.get(context.Background(), "/explain", url.Values{"name": {"x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.get(context.Background(), "/debug/graph", nil); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{" x", " ", "tenant-a x", "tenant-a "}; !slices.Equal(got, want) {
		t.Errorf("cluster and name of the requests: %q, want %q", got, want)
	}
}

func TestFindManagerIdentity(t *testing.T) {
	user := rbacv1.Subject{Kind: rbacv1.UserKind, Name: "admin"}
	for _, c := range []struct {
		name     string
		objects  []runtime.Object
		flags    managerFlags
		want     managerIdentity
		wantErr  string
		reaction clienttesting.ReactionFunc
	}{{
		name:    "the default binding",
		objects: []runtime.Object{binding("ownergc-manager-rolebinding", "ownergc-manager-role", false, user, sa("ownergc-system", "ownergc-controller-manager"))},
		want:    managerIdentity{binding: "ownergc-manager-rolebinding", role: "ownergc-manager-role", namespace: "ownergc-system", serviceAccount: "ownergc-controller-manager"},
	}, {
		name: "a Helm release's prefix, found by its label and role",
		objects: []runtime.Object{
			binding("gc-ownergc-metrics-auth-rolebinding", "gc-ownergc-metrics-auth-role", true, sa("gc", "gc-ownergc-controller-manager")),
			binding("gc-ownergc-manager-rolebinding", "gc-ownergc-manager-role", true, sa("gc", "gc-ownergc-controller-manager")),
			binding("someone-elses-manager-rolebinding", "other-manager-role", false, sa("other", "other"))},
		want: managerIdentity{binding: "gc-ownergc-manager-rolebinding", role: "gc-ownergc-manager-role", namespace: "gc", serviceAccount: "gc-ownergc-controller-manager"},
	}, {
		name:    "a fleet's host, with --cluster: the binding of the reviews' role",
		objects: []runtime.Object{binding("ownergc-metrics-auth-rolebinding", "ownergc-metrics-auth-role", true, sa("ownergc-system", "ownergc-controller-manager"))},
		flags:   managerFlags{cluster: "tenant-a"},
		want:    managerIdentity{binding: "ownergc-metrics-auth-rolebinding", role: "ownergc-metrics-auth-role", namespace: "ownergc-system", serviceAccount: "ownergc-controller-manager"},
	}, {
		name:    "a fleet's host under a Helm release's prefix, with --cluster",
		objects: []runtime.Object{binding("gc-ownergc-metrics-auth-rolebinding", "gc-ownergc-metrics-auth-role", true, sa("gc", "gc-ownergc-controller-manager"))},
		flags:   managerFlags{cluster: "tenant-a"},
		want:    managerIdentity{binding: "gc-ownergc-metrics-auth-rolebinding", role: "gc-ownergc-metrics-auth-role", namespace: "gc", serviceAccount: "gc-ownergc-controller-manager"},
	}, {
		name:    "a single cluster's install, without --cluster, is not found by the reviews' role",
		objects: []runtime.Object{binding("ownergc-metrics-auth-rolebinding", "ownergc-metrics-auth-role", true, sa("ownergc-system", "ownergc-controller-manager"))},
		wantErr: "ownergc's clusterrolebinding not found: none is named ownergc-manager-rolebinding, and none labelled app.kubernetes.io/name=ownergc binds a ClusterRole *-manager-role: is ownergc installed? (name its binding with --manager-clusterrolebinding, or give --server-url)",
	}, {
		name:    "named by --manager-clusterrolebinding",
		objects: []runtime.Object{binding("mine", "my-manager-role", false, sa("mine", "gc"))},
		flags:   managerFlags{binding: "mine"},
		want:    managerIdentity{binding: "mine", role: "my-manager-role", namespace: "mine", serviceAccount: "gc"},
	}, {
		name:    "none",
		objects: []runtime.Object{binding("other-manager-rolebinding", "other-manager-role", false, sa("other", "x"))},
		wantErr: "ownergc's clusterrolebinding not found: none is named ownergc-manager-rolebinding, and none labelled app.kubernetes.io/name=ownergc binds a ClusterRole *-manager-role: is ownergc installed? (name its binding with --manager-clusterrolebinding, or give --server-url)",
	}, {
		name: "two releases",
		objects: []runtime.Object{binding("a-ownergc-manager-rolebinding", "a-ownergc-manager-role", true, sa("a", "x")),
			binding("b-ownergc-manager-rolebinding", "b-ownergc-manager-role", true, sa("b", "x"))},
		wantErr: "several clusterrolebindings bind a ClusterRole *-manager-role (a-ownergc-manager-rolebinding, b-ownergc-manager-rolebinding): name the manager's with --manager-clusterrolebinding",
	}, {
		name:    "the default name binds another role",
		objects: []runtime.Object{binding("ownergc-manager-rolebinding", "cluster-admin", false, sa("x", "x"))},
		wantErr: "clusterrolebinding ownergc-manager-rolebinding binds ClusterRole cluster-admin, not the manager's ClusterRole (*-manager-role): the plugin does not know which ServiceAccount the manager runs as (name its binding with --manager-clusterrolebinding, or give --server-url)",
	}, {
		name:    "several ServiceAccounts",
		objects: []runtime.Object{binding("ownergc-manager-rolebinding", "ownergc-manager-role", false, sa("a", "x"), sa("b", "y"))},
		wantErr: "clusterrolebinding ownergc-manager-rolebinding binds several ServiceAccounts (a/x, b/y): name the manager's namespace with --manager-namespace",
	}, {
		name:    "several ServiceAccounts, one in --manager-namespace",
		objects: []runtime.Object{binding("ownergc-manager-rolebinding", "ownergc-manager-role", false, sa("a", "x"), sa("b", "y"))},
		flags:   managerFlags{namespace: "b"},
		want:    managerIdentity{binding: "ownergc-manager-rolebinding", role: "ownergc-manager-role", namespace: "b", serviceAccount: "y"},
	}, {
		name:    "no ServiceAccount",
		objects: []runtime.Object{binding("ownergc-manager-rolebinding", "ownergc-manager-role", false, user)},
		wantErr: "clusterrolebinding ownergc-manager-rolebinding binds no ServiceAccount: the plugin does not know which one the manager runs as",
	}, {
		name:    "an invalid --manager-clusterrolebinding",
		flags:   managerFlags{binding: "../x"},
		wantErr: `--manager-clusterrolebinding "../x" cannot be an object's name: may not contain '/'`,
	}, {
		name: "forbidden",
		reaction: func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}, "ownergc-manager-rolebinding", errors.New("no"))
		},
		wantErr: "you may not get clusterrolebinding ownergc-manager-rolebinding to find the manager's ServiceAccount, the only one the plugin sends your token to (give --server-url, or ask for get and list on clusterrolebindings)",
	}} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(c.objects...)
			if c.reaction != nil {
				cs.PrependReactor("*", "clusterrolebindings", c.reaction)
			}
			id, err := (&clients{kube: cs}).findManagerIdentity(context.Background(), c.flags)
			switch {
			case c.wantErr != "" && (err == nil || err.Error() != c.wantErr):
				t.Errorf("error:\n got: %v\nwant: %s", err, c.wantErr)
			case c.wantErr == "" && (err != nil || id != c.want):
				t.Errorf("got %+v, %v; want %+v", id, err, c.want)
			}
		})
	}
}

// why's and graph's --cluster names the fleet member and leaves kubectl's
// --cluster (the kubeconfig's cluster) unset: the commands read through
// the context's cluster; tree's --cluster is kubectl's.
func TestClusterFlagOfWhyAndGraphNamesTheFleetMember(t *testing.T) {
	for _, name := range []string{"why", "graph"} {
		root := newRootCommand(genericiooptions.NewTestIOStreamsDiscard())
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags([]string{"--cluster", "tenant-a"}); err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("cluster")
		if f == nil || f.Value.String() != "tenant-a" || !strings.HasPrefix(f.Usage, "Member cluster of an ownergc fleet") {
			t.Errorf("%s --cluster: %+v, want the fleet member's flag set to tenant-a", name, f)
		}
		if kubeconfigCluster := root.PersistentFlags().Lookup("cluster"); kubeconfigCluster.Value.String() != "" {
			t.Errorf("%s --cluster also set kubectl's --cluster to %q", name, kubeconfigCluster.Value)
		}
	}
	root := newRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	tree, _, err := root.Find([]string{"tree"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.ParseFlags([]string{"--cluster", "kind-a"}); err != nil {
		t.Fatal(err)
	}
	if f := tree.Flags().Lookup("cluster"); f == nil || f.Value.String() != "kind-a" || strings.HasPrefix(f.Usage, "Member") {
		t.Errorf("tree --cluster should be kubectl's: %+v", f)
	}
}

// --cluster goes into every request's query: a value that cannot be a
// member's (a Secret's) name is refused before anything is sent.
func TestClusterFlagRefusesWhatCannotBeAName(t *testing.T) {
	for _, bad := range []string{"../x", "a/b", "..", "%2F"} {
		_, err := (&options{}).connectManager(context.Background(), &clients{}, managerFlags{cluster: bad})
		if err == nil || !strings.Contains(err.Error(), "--cluster") {
			t.Errorf("--cluster %q: %v, want it refused", bad, err)
		}
	}
}

// fleetHost is a fleet's host as the plugin sees it with --cluster: the
// binding of the reviews' role, two manager pods (replica-0 and replica-1,
// running as the manager's ServiceAccount unless in strangers, ready unless
// in unready) and the members' ClusterGCStatuses, each naming the replica
// that collects it. With deployment, the pods are config/fleet's
// Deployment's, whose leader is replica-0; without, a sharded host's
// StatefulSet's.
func fleetHost(statuses map[string]string, unready, strangers []string, deployment bool) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	labels := map[string]string{"control-plane": "controller-manager"}
	objs := []runtime.Object{binding("ownergc-metrics-auth-rolebinding", "ownergc-metrics-auth-role", true, sa("ownergc-system", "ownergc-controller-manager"))}
	if deployment {
		objs = append(objs,
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ownergc-system", Name: "ownergc-controller-manager"},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ownergc-system", Name: leaseName},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-0_1234")}})
	}
	for _, name := range []string{"replica-0", "replica-1"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ownergc-system", Name: name, Labels: labels},
			Spec: corev1.PodSpec{ServiceAccountName: "ownergc-controller-manager"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		if slices.Contains(unready, name) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		if slices.Contains(strangers, name) {
			p.Spec.ServiceAccountName = "intruder"
		}
		objs = append(objs, p)
	}
	var statusObjs []runtime.Object
	for member, replica := range statuses {
		statusObjs = append(statusObjs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ownergc.io/v1alpha1", "kind": "ClusterGCStatus",
			"metadata": map[string]any{"namespace": "ownergc-system", "name": member},
			"status":   map[string]any{"replica": replica},
		}})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusterGCStatuses: "ClusterGCStatusList"}, statusObjs...)
	return fake.NewClientset(objs...), dyn
}

// With --cluster, the port-forward goes to the replica that collects the
// member, as its ClusterGCStatus on the host says (a sharded host has no
// Deployment, and another replica answers 404 for a member it does not
// collect); a replica that is not ready, or does not run as the manager,
// is refused; a status that names no replica or no pod, that cannot be
// found or that the plugin may not read leaves the choice to the
// Deployment's leader, as without --cluster, and says how to do better
// where there is none.
func TestClusterPortForwardsToTheReplicaThatCollectsTheMember(t *testing.T) {
	srv := newRecorder(t, true, nil)
	statuses := map[string]string{"tenant-a": "replica-1", "tenant-b": "replica-0", "tenant-c": "", "tenant-d": "../x", "tenant-e": "replica-9"}
	const noDeployment = "deployment ownergc-system/ownergc-controller-manager not found"
	const hint = "With --cluster, the plugin port-forwards to the replica that collects the member, which the member's ClusterGCStatus in namespace ownergc-system names, when you may get it (the Role ownergc-fleet-member-reader on the fleet's host grants that)"
	for _, tc := range []struct {
		name, cluster      string
		unready, strangers []string
		forbidden          bool
		deployment         bool
		wantPod, wantErr   string
	}{
		{name: "collected by replica-1", cluster: "tenant-a", wantPod: "ownergc-system/replica-1"},
		{name: "collected by replica-0", cluster: "tenant-b", wantPod: "ownergc-system/replica-0"},
		{name: "collected by replica-1, not the Deployment's leader", cluster: "tenant-a", deployment: true, wantPod: "ownergc-system/replica-1"},
		{name: "its replica is not ready", cluster: "tenant-a", unready: []string{"replica-1"},
			wantErr: "pod ownergc-system/replica-1, the replica that collects member tenant-a (its ClusterGCStatus says), is not ready"},
		{name: "its replica runs as another ServiceAccount", cluster: "tenant-a", strangers: []string{"replica-1"},
			wantErr: "pod ownergc-system/replica-1 runs as ServiceAccount ownergc-system/intruder, not as the manager's"},
		{name: "a replica that cannot be a pod's name", cluster: "tenant-d", wantErr: "cannot be an object's name"},
		{name: "no status: the Deployment's leader", cluster: "tenant-z", deployment: true, wantPod: "ownergc-system/replica-0"},
		{name: "no replica named: the Deployment's leader", cluster: "tenant-c", deployment: true, wantPod: "ownergc-system/replica-0"},
		{name: "a replica that is no pod: the Deployment's leader", cluster: "tenant-e", deployment: true, wantPod: "ownergc-system/replica-0"},
		{name: "the status may not be read: the Deployment's leader", cluster: "tenant-a", forbidden: true, deployment: true, wantPod: "ownergc-system/replica-0"},
		{name: "the status may not be read, and no Deployment", cluster: "tenant-a", forbidden: true, wantErr: noDeployment},
		{name: "the status may not be read, and no Deployment: how to do better", cluster: "tenant-a", forbidden: true, wantErr: hint},
		{name: "no status, and no Deployment", cluster: "tenant-z", wantErr: noDeployment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw := &forwarder{srv: srv}
			c := withToken()
			c.forward = fw.forward
			var dyn *dynamicfake.FakeDynamicClient
			c.kube, dyn = fleetHost(statuses, tc.unready, tc.strangers, tc.deployment)
			if tc.forbidden {
				dyn.PrependReactor("get", "clustergcstatuses", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(clusterGCStatuses.GroupResource(), tc.cluster, errors.New("no"))
				})
			}
			c.dynamic = dyn
			err := ask(c, managerFlags{cluster: tc.cluster})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("asking about member %s: %v", tc.cluster, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("asking about member %s:\n got: %v\nwant: …%s…", tc.cluster, err, tc.wantErr)
			}
			var want []string
			if tc.wantPod != "" {
				want = []string{tc.wantPod}
			}
			if !slices.Equal(fw.pods, want) {
				t.Errorf("forwarded to %v, want %v", fw.pods, want)
			}
		})
	}
}
