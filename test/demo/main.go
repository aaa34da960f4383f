// Command demo shows ownergc at work on a throwaway local control plane: it
// starts the real kube-apiserver and etcd (built by `make envtest-assets`),
// installs the CRDs and a `default` GCPolicy, runs the manager binary against
// it, and plays a short story with a Deployment -> ReplicaSet -> Pods chain:
// a background cascade, an orphaning delete, and a foreground delete held by
// a finalizer and then released. No workload controllers run there, so the
// demo creates the chain itself; every deletion after the first is ownergc's.
//
// Run it with `make demo`. It keeps the control plane running for you to try
// kubectl against it until Ctrl-C, or exits after the story with DEMO_EXIT=1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

const (
	ns   = "demo"
	hold = "demo.ownergc.io/hold"
)

var (
	c          client.Client
	ctx        = context.Background()
	managerLog string
)

func main() {
	assets := flag.String("assets", "", "directory holding kube-apiserver and etcd (default: bin/k8s/v<version>)")
	managerBin := flag.String("manager", "bin/manager", "the ownergc manager binary")
	flag.StringVar(&managerLog, "manager-log", "", "where to write the manager's log (default: a file in the demo's temporary directory, removed at exit)")
	flag.Parse()
	if *assets != "" {
		os.Setenv("KUBEBUILDER_ASSETS", *assets)
	}
	if err := run(*managerBin); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(managerBin string) error {
	dir, err := os.MkdirTemp("", "ownergc-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("Starting a local control plane (kube-apiserver and etcd, no kube-controller-manager)")
	env, err := framework.NewEnvironment()
	if err != nil {
		return err
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() {
		step("Stopping the control plane and cleaning up")
		_ = env.Stop()
	}()
	admin, err := env.AddUser(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return err
	}
	kubeconfigData, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kubeconfigData, 0o600); err != nil {
		return err
	}
	if c, err = client.New(cfg, client.Options{Scheme: framework.Scheme}); err != nil {
		return err
	}

	step("Installing the default GCPolicy")
	policy := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
	if err := c.Create(ctx, policy); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}

	step("Starting ownergc (%s)", managerBin)
	stopManager, logPath, err := startManager(managerBin, kubeconfig, dir)
	if err != nil {
		return err
	}
	defer stopManager()
	fmt.Printf("   manager log: %s\n", logPath)
	if err := waitPolicyReady(); err != nil {
		return err
	}
	printPolicy()

	if err := story(); err != nil {
		return err
	}

	fmt.Printf(`
==> Try it yourself. The control plane keeps running%s.

   export KUBECONFIG=%s
   kubectl get gcpolicy
   kubectl wait --for=condition=Ready gcpolicy/default
   kubectl -n demo create configmap owner
   kubectl -n demo create configmap child
   kubectl -n demo patch configmap child --type=merge -p \
     "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"owner\",\"uid\":\"$(kubectl -n demo get configmap owner -o jsonpath='{.metadata.uid}')\"}]}}"
   kubectl -n demo delete configmap owner            # ownergc deletes child
   kubectl -n demo get configmaps

   manager log: %s
`, untilWhat(), kubeconfig, logPath)

	if os.Getenv("DEMO_EXIT") == "1" {
		return nil
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Println()
	return nil
}

func untilWhat() string {
	if os.Getenv("DEMO_EXIT") == "1" {
		return " only until the demo exits (DEMO_EXIT=1)"
	}
	return " until you press Ctrl-C"
}

func step(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startManager(bin, kubeconfig, dir string) (stop func(), logPath string, err error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	logPath = managerLog
	if logPath == "" {
		logPath = filepath.Join(dir, "manager.log")
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--metrics-bind-address=0",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting %s (run 'make build' first): %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		logFile.Close()
	}
	err = framework.Poll(2*time.Minute, func() error {
		select {
		case <-exited:
			return errors.New("the manager exited; see " + logPath)
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		stop()
		return nil, "", fmt.Errorf("waiting for the manager to be ready: %w", err)
	}
	return stop, logPath, nil
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

func printPolicy() {
	p := &ownergcv1alpha1.GCPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
		fmt.Println("   (cannot read the GCPolicy:", err, ")")
		return
	}
	ready := apimeta.FindStatusCondition(p.Status.Conditions, ownergcv1alpha1.ConditionReady)
	state := "unknown"
	if ready != nil {
		state = string(ready.Status) + " (" + ready.Reason + ")"
	}
	fmt.Printf("   gcpolicy/default: Ready=%s  monitored=%d  graph nodes=%d  virtual=%d\n",
		state, p.Status.MonitoredResources, p.Status.Graph.Nodes, p.Status.Graph.VirtualNodes)
}

// story plays the three scenes.
func story() error {
	step("Scene 1: background cascade. A Deployment owns a ReplicaSet that owns three Pods")
	dep, err := chain("web", false)
	if err != nil {
		return err
	}
	printTree()
	step("kubectl delete deployment web   (propagationPolicy=Background)")
	if err := c.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return err
	}
	if err := waitEmpty(); err != nil {
		return err
	}
	fmt.Println("   ownergc deleted the ReplicaSet, then its Pods:")
	printTree()
	printPolicy()

	step("Scene 2: orphaning. The same chain, deleted with --cascade=orphan")
	dep, err = chain("api", false)
	if err != nil {
		return err
	}
	printTree()
	step("kubectl delete deployment api --cascade=orphan   (propagationPolicy=Orphan)")
	if err := c.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		return err
	}
	if err := framework.Poll(30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return errors.New("the Deployment still exists")
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Println("   ownergc removed the Deployment from the ReplicaSet's owners, then let the Deployment go; the rest survives:")
	printTree()
	rs := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, rs, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range rs.Items {
		if err := c.Delete(ctx, &rs.Items[i]); err != nil {
			return err
		}
	}
	if err := waitEmpty(); err != nil {
		return err
	}

	step("Scene 3: foreground deletion held by a finalizer. One Pod carries the finalizer %s", hold)
	dep, err = chain("db", true)
	if err != nil {
		return err
	}
	printTree()
	step("kubectl delete deployment db --cascade=foreground   (propagationPolicy=Foreground)")
	if err := c.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return err
	}
	if err := framework.Poll(30*time.Second, func() error {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp == nil {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Println("   The deletion waits for the held Pod: the Deployment and ReplicaSet stay, being deleted in the foreground:")
	printTree()
	step("Releasing the Pod: removing its %s finalizer", hold)
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		patch := client.MergeFrom(p.DeepCopy())
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == hold })
		if err := c.Patch(ctx, p, patch); err != nil {
			return err
		}
	}
	if err := waitEmpty(); err != nil {
		return err
	}
	fmt.Println("   The Pod went, then ownergc finished the ReplicaSet and the Deployment:")
	printTree()
	printPolicy()
	return nil
}

// chain creates a Deployment -> ReplicaSet -> 3 Pods chain, as the workload
// controllers would; with held, the last Pod carries a finalizer.
func chain(name string, held bool) (*appsv1.Deployment, error) {
	labels := map[string]string{"app": name}
	replicas := int32(3)
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}
	if err := c.Create(ctx, dep); err != nil {
		return nil, err
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-5d8f6c", OwnerReferences: []metav1.OwnerReference{controllerRef(dep, "apps/v1", "Deployment")}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
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

func waitEmpty() error {
	return framework.Poll(30*time.Second, func() error {
		if n := len(objects()); n > 0 {
			return fmt.Errorf("%d objects left in namespace %s", n, ns)
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

func objects() []item {
	var out []item
	add := func(kind string, o client.Object) {
		out = append(out, item{kind: kind, name: o.GetName(), uid: o.GetUID(), owners: o.GetOwnerReferences(),
			deleting: o.GetDeletionTimestamp() != nil, finalizers: o.GetFinalizers()})
	}
	deps, rss, pods := &appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}
	_ = c.List(ctx, deps, client.InNamespace(ns))
	_ = c.List(ctx, rss, client.InNamespace(ns))
	_ = c.List(ctx, pods, client.InNamespace(ns))
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

// printTree prints the objects of the demo namespace as an ownership tree.
func printTree() {
	items := objects()
	if len(items) == 0 {
		fmt.Println("   (namespace demo is empty)")
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
	if branch == "├── " {
		next += "│   "
	} else if branch == "└── " {
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
