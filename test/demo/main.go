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

// Command demo shows ownergc at work on a throwaway local control plane: it
// starts the real kube-apiserver and etcd (built by `make demo` into
// bin/k8s), installs the CRDs and a `default` GCPolicy, runs the manager
// binary against it with its metrics server on, and plays a short story with
// Deployment -> ReplicaSet -> Pods chains: a background cascade, an orphaning
// delete, and a foreground delete held by a finalizer and then released;
// while it is held, the kubectl plugin (cmd/kubectl-ownergc, built by `make
// demo`) shows it with `tree` and explains it with `why`. No workload
// controllers run there, so the demo creates the chains itself; every
// deletion after the first of each scene is ownergc's.
//
// Run it with `make demo`. It keeps the control plane running for you to try
// kubectl, the plugin, and the metrics and graph endpoints against it until
// Ctrl-C, or exits after the story with DEMO_EXIT=1. Whichever way it ends
// (Ctrl-C, SIGTERM, a closed terminal, a broken pipe, or SIGKILL: see
// reaper.go), kube-apiserver, etcd and the manager stop and its temporary
// directory goes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

const (
	ns   = "demo"
	hold = "demo.ownergc.io/hold"

	// What docs/operating.md creates to read the metrics and the graph.
	readerNamespace = "ownergc-system"
	readerAccount   = "graph-reader"
	readerRoles     = "ownergc-metrics-reader and ownergc-graph-reader"
	// The demo also lets the reader get the objects of its namespace: the
	// manager's /explain (`kubectl ownergc why`) answers only about objects
	// the caller may get.
	viewerRole = "ownergc-demo-viewer"
)

// viewerRules are what viewerRole allows; a RoleBinding grants them in
// namespace ns only.
var viewerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get"}},
}

var (
	c   client.Client
	ctx = context.Background()
)

func main() {
	if marker := os.Getenv(reaperEnv); marker != "" {
		os.Exit(reap(marker, os.Args[1:]))
	}
	assets := flag.String("assets", "", "directory holding kube-apiserver and etcd (default: $KUBEBUILDER_ASSETS or bin/k8s/v<version>)")
	managerBin := flag.String("manager", "", "the ownergc manager binary (default: build it from the working tree into the demo's temporary directory)")
	pluginBin := flag.String("plugin", "", "the kubectl-ownergc plugin binary (default: build it from the working tree into the demo's temporary directory)")
	managerLog := flag.String("manager-log", "", "where to write the manager's log (default: a file in the demo's temporary directory, removed at exit)")
	flag.Parse()
	if *assets != "" {
		os.Setenv("KUBEBUILDER_ASSETS", *assets)
	}
	d := &demo{managerBin: *managerBin, pluginBin: *pluginBin, managerLog: *managerLog}
	os.Exit(d.main())
}

type demo struct {
	managerBin, pluginBin, managerLog string

	dir        string
	kubeconfig string
	token      string // file holding the graph reader's token
	cfg        *rest.Config

	mu   sync.Mutex // guards cp and mgr, which the signal handler stops
	cp   *framework.ControlPlane
	mgr  *framework.ManagerProcess
	once sync.Once

	interrupted atomic.Bool
	storyDone   atomic.Bool
}

func (d *demo) main() int {
	marker, err := markChildren()
	if err == nil {
		d.dir, err = os.MkdirTemp("", "ownergc-demo-")
	}
	if err == nil {
		// Every temporary file and directory, the demo's (envtest's: etcd's
		// data, kube-apiserver's certificates, webhook certificates) and
		// its children's, goes under d.dir: removing it leaves nothing.
		err = os.Setenv("TMPDIR", d.dir)
	}
	if err == nil {
		err = startReaper(marker, d.dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		if d.dir != "" {
			os.RemoveAll(d.dir)
		}
		return 1
	}
	// SIGPIPE too: with it handled, a write to a broken stdout fails
	// instead of killing the demo before it can clean up.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		s := <-sigs
		d.interrupted.Store(true)
		fmt.Println()
		d.cleanup()
		code := 0 // stopped after the story, as the demo asks
		if !d.storyDone.Load() {
			code = 128 + int(s.(syscall.Signal))
		}
		os.Exit(code)
	}()

	err = d.run()
	if d.interrupted.Load() {
		select {} // the signal handler cleans up and exits
	}
	d.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return 0
}

// cleanup stops the manager and the control plane and removes the demo's
// directory (the reaper does it if the demo dies before it can).
func (d *demo) cleanup() {
	d.once.Do(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		step("Stopping ownergc and the control plane, removing %s", d.dir)
		if d.mgr != nil {
			d.mgr.Stop()
		}
		if d.cp != nil {
			d.cp.Stop()
		}
		_ = os.RemoveAll(d.dir)
	})
}

func (d *demo) run() error {
	if d.managerBin == "" {
		step("Building the manager (go build -o %s/manager .)", d.dir)
		var err error
		if d.managerBin, err = framework.BuildManager(d.dir); err != nil {
			return err
		}
	}
	if d.pluginBin == "" {
		step("Building the kubectl plugin (go build -o %s/kubectl-ownergc ./cmd/kubectl-ownergc)", d.dir)
		var err error
		if d.pluginBin, err = framework.BuildPlugin(d.dir); err != nil {
			return err
		}
	}

	step("Starting a local control plane (kube-apiserver and etcd, no kube-controller-manager) in %s", d.dir)
	cp, err := framework.StartControlPlane()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.cp = cp
	d.mu.Unlock()
	d.cfg, c = cp.Config, cp.Client
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if _, err := cp.WriteAdminKubeconfig("demo-admin", d.kubeconfig); err != nil {
		return err
	}

	step("Installing the default GCPolicy, namespace %s, and ServiceAccount %s/%s bound to ClusterRoles %s, and in namespace %s to ClusterRole %s (get on Deployments, ReplicaSets, Pods and ConfigMaps)",
		ns, readerNamespace, readerAccount, readerRoles, ns, viewerRole)
	policy := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
	if err := c.Create(ctx, policy); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	if err := d.createGraphReader(); err != nil {
		return err
	}

	step("Starting ownergc (%s), its metrics server on 127.0.0.1", d.managerBin)
	logPath := d.managerLog
	if logPath == "" {
		logPath = filepath.Join(d.dir, "manager.log")
	}
	m, err := framework.StartManagerProcess(framework.ManagerProcessOptions{
		Binary: d.managerBin, Kubeconfig: d.kubeconfig, Metrics: true, LogPath: logPath,
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.mgr = m
	d.mu.Unlock()
	fmt.Printf("   manager log: %s\n", logPath)
	if err := m.WaitReady(2 * time.Minute); err != nil {
		return err
	}
	if err := d.checkEndpoints(m); err != nil {
		return err
	}
	if err := waitPolicyReady(); err != nil {
		return err
	}
	start := printPolicy(time.Time{}, func(int64) string {
		return "the graph holds every object of the control plane: namespaces, ServiceAccounts, RBAC, ..."
	})

	orphans, err := d.story(m, start)
	if err != nil {
		return err
	}
	d.storyDone.Store(true)

	step("What is left: the orphans of scene 2")
	printTree("")
	d.tryIt(m, orphans)

	if os.Getenv("DEMO_EXIT") == "1" {
		return nil
	}
	select {} // until a signal: the handler cleans up and exits
}

// createGraphReader creates what docs/operating.md creates to read the
// metrics and the graph: a ServiceAccount bound to the two ClusterRoles the
// installation has (ownergc-metrics-reader allows GET on /metrics,
// ownergc-graph-reader on /debug/graph); checkEndpoints writes a token of
// it to a file. The demo also binds it, in namespace ns, to viewerRole: the
// manager's /explain answers only about the objects the caller may get.
func (d *demo) createGraphReader() error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: readerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: readerNamespace, Name: readerAccount}},
	}
	for role, path := range map[string]string{"ownergc-metrics-reader": "/metrics", "ownergc-graph-reader": "/debug/graph"} {
		objs = append(objs,
			&rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: role},
				Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{path}, Verbs: []string{"get"}}},
			},
			&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role + "-demo"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: readerNamespace, Name: readerAccount}},
			})
	}
	objs = append(objs,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: viewerRole}, Rules: viewerRules},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: viewerRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewerRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: readerNamespace, Name: readerAccount}},
		})
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// checkEndpoints creates the reader's token (what `kubectl create token`
// does), writes it to a file, and checks that the commands tryIt prints
// work with it.
func (d *demo) checkEndpoints(m *framework.ManagerProcess) error {
	cs, err := kubernetes.NewForConfig(d.cfg)
	if err != nil {
		return err
	}
	expiry := int64(24 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(readerNamespace).CreateToken(ctx, readerAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating a token for %s/%s: %w", readerNamespace, readerAccount, err)
	}
	d.token = filepath.Join(d.dir, "token")
	if err := os.WriteFile(d.token, []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	// A newly granted permission can take a moment to be honoured.
	for _, path := range []string{"/metrics", "/debug/graph"} {
		if err := framework.Poll(time.Minute, func() error {
			code, _, err := m.GetMetrics(path, tr.Status.Token)
			if err == nil && code != 200 {
				err = fmt.Errorf("GET %s answered %d", path, code)
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) tryIt(m *framework.ManagerProcess, orphans types.UID) {
	until := "until you press Ctrl-C"
	if os.Getenv("DEMO_EXIT") == "1" {
		until = "only until the demo exits (DEMO_EXIT=1)"
	}
	why := fmt.Sprintf("--server-url %s --manager-insecure-skip-tls-verify --token-file %s", m.MetricsURL(""), d.token)
	fmt.Print(strings.NewReplacer(
		"{until}", until, "{kubeconfig}", d.kubeconfig, "{ns}", ns, "{hold}", hold,
		"{pluginDir}", filepath.Dir(d.pluginBin), "{plugin}", d.pluginBin, "{why}", why,
		"{orphans}", rsName("api"), "{orphan}", rsName("api")+"-k2x9q",
		"{reader}", readerNamespace+"/"+readerAccount, "{readerNamespace}", readerNamespace, "{readerAccount}", readerAccount,
		"{roles}", readerRoles, "{viewer}", viewerRole, "{token}", d.token,
		"{metrics}", m.MetricsURL("/metrics"), "{graph}", m.MetricsURL("/debug/graph"),
		"{orphansGraph}", m.MetricsURL("/debug/graph?format=json&uid="+string(orphans)),
		"{log}", m.LogPath,
	).Replace(`
==> Try it yourself. The control plane keeps running {until}.

   export KUBECONFIG={kubeconfig}
   export PATH={pluginDir}:$PATH   # kubectl ownergc: {plugin}
   kubectl get gcpolicy
   kubectl -n {ns} get all                           # the orphans of scene 2
   kubectl ownergc tree -n {ns} replicaset/{orphans}
   kubectl ownergc tree -n {ns} pod/{orphan} --up
   kubectl ownergc why -n {ns} replicaset/{orphans} \
     {why}
   kubectl -n {ns} create configmap owner
   kubectl -n {ns} create configmap child
   kubectl -n {ns} patch configmap child --type=merge -p \
     "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"owner\",\"blockOwnerDeletion\":true,\"uid\":\"$(kubectl -n {ns} get configmap owner -o jsonpath='{.metadata.uid}')\"}]}}"
   kubectl ownergc tree -n {ns} configmap/owner
   kubectl ownergc why -n {ns} configmap/child \
     {why}
   kubectl -n {ns} delete configmap owner            # ownergc deletes child
   kubectl -n {ns} get configmaps

   Or, instead of that delete, scene 3 with them, held as long as you like:

   kubectl -n {ns} patch configmap child --type=merge -p '{"metadata":{"finalizers":["{hold}"]}}'
   kubectl -n {ns} delete configmap owner --cascade=foreground --wait=false
   kubectl ownergc tree -n {ns} configmap/owner
   kubectl ownergc why -n {ns} configmap/owner \
     {why}
   kubectl -n {ns} describe configmap owner          # after 5 minutes, a Warning event DeletionBlocked
   kubectl -n {ns} patch configmap child --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'

   tree reads the API server with your kubeconfig. why asks ownergc itself,
   at its metrics server, as ServiceAccount {reader}, which may get
   Deployments, ReplicaSets, Pods and ConfigMaps in namespace {ns}
   (ClusterRole {viewer}): ownergc explains only the objects the caller may get.

   Metrics and the ownership graph (docs/metrics.md, docs/operating.md), as
   ServiceAccount {reader}, bound to ClusterRoles {roles}:

   export TOKEN=$(cat {token})   # or: kubectl -n {readerNamespace} create token {readerAccount}
   curl -sk -H "Authorization: Bearer $TOKEN" {metrics} | grep ^ownergc_
   curl -sk -H "Authorization: Bearer $TOKEN" {graph}    # the whole graph, DOT (| dot -Tsvg > graph.svg)
   # the orphaned ReplicaSet of scene 2 and its Pods, JSON:
   curl -sk -H "Authorization: Bearer $TOKEN" "{orphansGraph}"

   manager log: {log}
`))
}

func step(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

func waitPolicyReady() error {
	return framework.Poll(time.Minute, func() error {
		p := &ownergcv1alpha1.GCPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		if !apimeta.IsStatusConditionTrue(p.Status.Conditions, ownergcv1alpha1.ConditionReady) {
			return errors.New("GCPolicy is not Ready yet")
		}
		return nil
	})
}

// printPolicy prints the GCPolicy status once it has been refreshed after
// since (the status is refreshed every 10 seconds), then what note says
// about the graph's size, and returns the size.
func printPolicy(since time.Time, note func(nodes int64) string) int64 {
	p := &ownergcv1alpha1.GCPolicy{}
	err := framework.Poll(30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		if t := p.Status.LastSyncTime; t == nil || !t.After(since) {
			return errors.New("status not refreshed yet")
		}
		return nil
	})
	if p.Name == "" {
		fmt.Println("   (cannot read the GCPolicy:", err, ")")
		return -1
	}
	ready := apimeta.FindStatusCondition(p.Status.Conditions, ownergcv1alpha1.ConditionReady)
	state := "unknown"
	if ready != nil {
		state = string(ready.Status) + " (" + ready.Reason + ")"
	}
	stale := ""
	if err != nil {
		stale = "  (not refreshed since the scene ended)"
	}
	fmt.Printf("   gcpolicy/default: Ready=%s  monitored=%d  graph nodes=%d  virtual=%d%s\n",
		state, p.Status.MonitoredResources, p.Status.Graph.Nodes, p.Status.Graph.VirtualNodes, stale)
	if n := note(p.Status.Graph.Nodes); n != "" {
		fmt.Printf("   (%s)\n", n)
	}
	return p.Status.Graph.Nodes
}

// refreshed waits for the GCPolicy status to be refreshed after the scene,
// then prints it.
func refreshed(note func(nodes int64) string) int64 {
	fmt.Println("   Waiting for the GCPolicy status to refresh (every 10 s) ...")
	return printPolicy(time.Now(), note)
}

// compared describes a graph size against an earlier one.
func compared(before int64, when, same, fourMore string) func(int64) string {
	return func(nodes int64) string {
		switch {
		case before < 0:
			return ""
		case nodes == before && same != "":
			return "as many nodes as " + when + ": " + same
		case nodes == before+4 && fourMore != "":
			return "four more nodes than " + when + ": " + fourMore
		default:
			return fmt.Sprintf("%+d nodes since %s", nodes-before, when)
		}
	}
}

// story plays the three scenes, given the graph's size before them, and
// returns the UID of the ReplicaSet that scene 2 orphans (it stays, with its
// Pods, until the demo ends).
func (d *demo) story(m *framework.ManagerProcess, start int64) (types.UID, error) {
	step("Scene 1: background cascade. A Deployment owns a ReplicaSet that owns three Pods")
	if _, err := deleteChain("web", false, metav1.DeletePropagationBackground); err != nil {
		return "", err
	}
	if err := emptied("web", "ownergc deleted the ReplicaSet, then its Pods:"); err != nil {
		return "", err
	}
	refreshed(compared(start, "before the scene", "the chain's five objects left the graph as they were deleted", ""))

	step("Scene 2: orphaning. The same chain, deleted with --cascade=orphan")
	dep, err := deleteChain("api", false, metav1.DeletePropagationOrphan)
	if err != nil {
		return "", err
	}
	if err := framework.Poll(30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return errors.New("the Deployment still exists")
		}
		return nil
	}); err != nil {
		return "", err
	}
	fmt.Println("   ownergc removed the Deployment from the ReplicaSet's owners, then let the Deployment go; the rest survives:")
	printTree("api")
	rs := &appsv1.ReplicaSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rsName("api")}, rs); err != nil {
		return "", err
	}

	step("Scene 3: foreground deletion held by a finalizer. One Pod carries the finalizer %s", hold)
	if _, err := deleteChain("db", true, metav1.DeletePropagationForeground); err != nil {
		return "", err
	}
	if err := framework.Poll(30*time.Second, func() error {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "db"}); err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp == nil {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	}); err != nil {
		return "", err
	}
	fmt.Println("   The deletion waits for the held Pod: the Deployment and ReplicaSet stay, being deleted in the foreground.")
	fmt.Println("   kubectl ownergc tree shows it, from the API server alone:")
	if !d.plugin("tree", "-n", ns, "deployment/db") {
		printTree("db")
	}
	fmt.Printf("   kubectl ownergc why asks ownergc itself (its /explain, on the metrics server), as ServiceAccount %s/%s:\n", readerNamespace, readerAccount)
	d.plugin(d.whyArgs(m, "deployment/db")...)
	fmt.Println("   (Held longer than spec.diagnostics.blockedDeletionAfter, 5m by default, the deletion would also get Warning events")
	fmt.Println("   DeletionBlocked on the Deployment and the ReplicaSet, saying what each waits for: kubectl describe shows them.)")
	step("Releasing the Pod: removing its %s finalizer", hold)
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "db"}); err != nil {
		return "", err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		patch := client.MergeFrom(p.DeepCopy())
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == hold })
		if err := c.Patch(ctx, p, patch); err != nil {
			return "", err
		}
	}
	if err := emptied("db", "The Pod went, then ownergc finished the ReplicaSet and the Deployment:"); err != nil {
		return "", err
	}
	refreshed(compared(start, "before the story", "", "the orphans of scene 2"))
	return rs.UID, nil
}

// whyArgs are the arguments of `kubectl ownergc why` for the object in
// namespace ns: asking the manager at its metrics server, with the reader's
// token (the server's certificate is self-signed).
func (d *demo) whyArgs(m *framework.ManagerProcess, object string) []string {
	return []string{"why", "-n", ns, object, "--server-url", m.MetricsURL(""), "--manager-insecure-skip-tls-verify", "--token-file", d.token}
}

// plugin runs `kubectl ownergc args...` with the demo's kubeconfig and
// prints the command and its output, indented under the narration. It
// reports whether the plugin succeeded (a failure is shown, and does not end
// the demo).
func (d *demo) plugin(args ...string) bool {
	fmt.Printf("\n     $ kubectl ownergc %s\n", strings.Join(args, " "))
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, d.pluginBin, append([]string{"--kubeconfig", d.kubeconfig}, args...)...)
	// Its discovery cache goes with the demo's directory, not in ~/.kube.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(d.dir, "kube-cache"), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Printf("     %s\n", line)
	}
	fmt.Println()
	if err != nil {
		fmt.Printf("   (kubectl ownergc failed: %v)\n", err)
		return false
	}
	return true
}

func rsName(app string) string { return app + "-5d8f6c" }

// deleteChain creates the chain of app (see chain), shows it, and deletes
// its Deployment with policy, as kubectl would.
func deleteChain(app string, held bool, policy metav1.DeletionPropagation) (*appsv1.Deployment, error) {
	dep, err := chain(app, held)
	if err != nil {
		return nil, err
	}
	printTree(app)
	cascade := map[metav1.DeletionPropagation]string{
		metav1.DeletePropagationOrphan: " --cascade=orphan", metav1.DeletePropagationForeground: " --cascade=foreground"}[policy]
	step("kubectl -n demo delete deployment %s%s   (propagationPolicy=%s)", app, cascade, policy)
	return dep, c.Delete(ctx, dep, client.PropagationPolicy(policy))
}

// chain creates a Deployment -> ReplicaSet -> 3 Pods chain labelled
// app=name, as the workload controllers would; with held, the last Pod
// carries a finalizer.
func chain(name string, held bool) (*appsv1.Deployment, error) {
	labels := map[string]string{"app": name}
	replicas := int32(3)
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}
	if err := c.Create(ctx, dep); err != nil {
		return nil, err
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rsName(name), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef(dep, "apps/v1", "Deployment")}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}
	if err := c.Create(ctx, rs); err != nil {
		return nil, err
	}
	for i, suffix := range []string{"k2x9q", "m7c4w", "t1z8p"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rs.Name + "-" + suffix, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{controllerRef(rs, "apps/v1", "ReplicaSet")}},
			Spec: template.Spec,
		}
		if held && i == 2 {
			pod.Finalizers = []string{hold}
		}
		if err := c.Create(ctx, pod); err != nil {
			return nil, err
		}
	}
	return dep, nil
}

func controllerRef(owner client.Object, apiVersion, kind string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}
}

// emptied waits until no object of app is left, then says what ownergc did
// and shows the tree (empty).
func emptied(app, what string) error {
	if err := waitEmpty(app); err != nil {
		return err
	}
	fmt.Println("   " + what)
	printTree(app)
	return nil
}

func waitEmpty(app string) error {
	return framework.Poll(30*time.Second, func() error {
		if n := len(objects(app)); n > 0 {
			return fmt.Errorf("%d objects labelled app=%s left in namespace %s", n, app, ns)
		}
		return nil
	})
}

type item struct {
	kind, name string
	uid        types.UID
	owners     []metav1.OwnerReference
	deleting   bool
	finalizers []string
}

// objects lists the Deployments, ReplicaSets and Pods of the demo
// namespace labelled app=app (all of them if app is empty).
func objects(app string) []item {
	var out []item
	add := func(kind string, o client.Object) {
		out = append(out, item{kind: kind, name: o.GetName(), uid: o.GetUID(), owners: o.GetOwnerReferences(),
			deleting: o.GetDeletionTimestamp() != nil, finalizers: o.GetFinalizers()})
	}
	opts := []client.ListOption{client.InNamespace(ns)}
	if app != "" {
		opts = append(opts, client.MatchingLabels{"app": app})
	}
	deps, rss, pods := &appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}
	_ = c.List(ctx, deps, opts...)
	_ = c.List(ctx, rss, opts...)
	_ = c.List(ctx, pods, opts...)
	for i := range deps.Items {
		add("Deployment", &deps.Items[i])
	}
	for i := range rss.Items {
		add("ReplicaSet", &rss.Items[i])
	}
	for i := range pods.Items {
		add("Pod", &pods.Items[i])
	}
	return out
}

// printTree prints the objects labelled app=app (all of them if app is
// empty) as an ownership tree.
func printTree(app string) {
	items := objects(app)
	if len(items) == 0 {
		if app == "" {
			fmt.Printf("   (namespace %s is empty)\n", ns)
		} else {
			fmt.Printf("   (no object labelled app=%s is left in namespace %s)\n", app, ns)
		}
		return
	}
	byUID := map[types.UID]item{}
	children := map[types.UID][]item{}
	for _, it := range items {
		byUID[it.uid] = it
	}
	var roots []item
	for _, it := range items {
		hasOwner := false
		for _, o := range it.owners {
			if _, ok := byUID[o.UID]; ok {
				children[o.UID] = append(children[o.UID], it)
				hasOwner = true
			}
		}
		if !hasOwner {
			roots = append(roots, it)
		}
	}
	sortItems(roots)
	for _, r := range roots {
		printItem(r, "   ", "", children)
	}
}

func sortItems(items []item) {
	sort.Slice(items, func(i, j int) bool { return items[i].kind+items[i].name < items[j].kind+items[j].name })
}

func printItem(it item, indent, branch string, children map[types.UID][]item) {
	var notes []string
	if len(it.owners) == 0 && it.kind != "Deployment" {
		notes = append(notes, "no owner")
	}
	if it.deleting {
		notes = append(notes, "being deleted, finalizers: "+strings.Join(it.finalizers, ","))
	} else if len(it.finalizers) > 0 {
		notes = append(notes, "finalizers: "+strings.Join(it.finalizers, ","))
	}
	suffix := ""
	if len(notes) > 0 {
		suffix = "  [" + strings.Join(notes, "; ") + "]"
	}
	fmt.Printf("%s%s%s/%s%s\n", indent, branch, it.kind, it.name, suffix)
	kids := children[it.uid]
	sortItems(kids)
	next := indent
	switch branch {
	case "├── ":
		next += "│   "
	case "└── ":
		next += "    "
	}
	for i, k := range kids {
		b := "├── "
		if i == len(kids)-1 {
			b = "└── "
		}
		printItem(k, next, b, children)
	}
}
