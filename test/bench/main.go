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

// Command bench runs ownergc side by side with the garbage collector of
// kube-controller-manager (the reference) on a local control plane
// (kube-apiserver and etcd built by `make envtest-assets`), one collector at
// a time, each workload on fresh namespaces, and prints one table comparing
// them; with -out it also writes the table as markdown.
//
// Run it with `make bench`. Quick iterations: -n 500 -m 5000 -only wide.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ownergc/ownergc/test/framework"
)

// workloads, in the order they run. memory runs last: it leaves M objects
// behind.
var allWorkloads = []string{"wide", "unthrottled", "floor", "forest", "crd", "dryrun", "fleet", "expiry", "memory"}

// partWorkloads run a part of a workload alone, for iterating on it: only
// when -only names them (the whole workload measures them too).
var partWorkloads = []string{"storm"}

type bench struct {
	cfg        *rest.Config
	cp         *framework.ControlPlane
	cs         *kubernetes.Clientset
	dyn        dynamic.Interface
	kubeconfig string
	managerBin string
	kcmBin     string
	logDir     string
	logN       int
	n, m       int
	owners     int // forest owners
	rounds     int // repetitions of the noisy measurements
	storms     int // engagement storms measured (each with its own list-streaming time and lone member)
	workers    int // parallelism of the physical limit and of the forest's owner deletes
	fleetK     int // control planes of the fleet workload
	fleetN     int // dependents of each of the fleet workload's cascades
	began      time.Time
	res        *results
	planePids  map[string]int // kube-apiserver and etcd
}

func main() {
	assets := flag.String("assets", "", "directory holding kube-apiserver, etcd and kube-controller-manager (default: $KUBEBUILDER_ASSETS or bin/k8s/v<version>)")
	out := flag.String("out", "", "write the results as markdown to this file (e.g. docs/benchmarks.md)")
	n := flag.Int("n", 5000, "dependents of the wide cascade (and deletes of the physical limit)")
	m := flag.Int("m", 50000, "objects present for the memory and start-up measurements")
	owners := flag.Int("forest-owners", 500, "owners of the forest (each with 10 dependents on each of 2 levels)")
	only := flag.String("only", "", "comma-separated workloads to run (default all): "+strings.Join(allWorkloads, ",")+
		"; or a part of one alone: "+strings.Join(partWorkloads, ",")+" (the fleet workload's engagement storm, -storms times)")
	fleetK := flag.Int("fleet-clusters", 10, "control planes the fleet workload starts (one ownergc process in the fleet mode collects for all)")
	fleetN := flag.Int("fleet-n", 400, "dependents of each cluster's cascade in the fleet workload")
	rounds := flag.Int("rounds", 3, "repetitions of the unthrottled cascade, the physical limit and each memory/start-up measurement (medians are reported)")
	storms := flag.Int("storms", 5, "engagement storms of the fleet workload, each against its own list-streaming time and one member alone (the median ratio is reported): the storm varies most with what the members' control planes do beside it")
	keepLogs := flag.String("keep-logs", "", "write the collectors' logs to this directory and keep them (default: a temporary directory, removed at exit)")
	profile := registerFleetProfileFlags()
	flag.Parse()
	if *assets != "" {
		os.Setenv("KUBEBUILDER_ASSETS", *assets)
	}
	if profile.sizes != "" || profile.analyze != "" {
		if err := runFleetProfile(profile); err != nil {
			fmt.Fprintln(os.Stderr, "bench: fleet profile:", err)
			os.Exit(1)
		}
		return
	}
	selected := map[string]bool{}
	if *only == "" {
		for _, w := range allWorkloads {
			selected[w] = true
		}
	} else {
		for _, w := range strings.Split(*only, ",") {
			w = strings.TrimSpace(w)
			if !contains(allWorkloads, w) && !contains(partWorkloads, w) {
				fmt.Fprintf(os.Stderr, "bench: unknown workload %q (known: %s)\n", w, strings.Join(append(allWorkloads, partWorkloads...), ","))
				os.Exit(2)
			}
			selected[w] = true
		}
	}
	b := &bench{n: *n, m: *m, owners: *owners, rounds: max(1, *rounds), storms: max(1, *storms), workers: 20, fleetK: max(1, *fleetK), fleetN: max(1, *fleetN),
		began: time.Now(), res: newResults()}
	if err := b.run(selected, *keepLogs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (b *bench) logf(format string, args ...any) {
	d := time.Since(b.began).Round(time.Second)
	fmt.Printf("[%02d:%02d] %s\n", int(d.Minutes()), int(d.Seconds())%60, fmt.Sprintf(format, args...))
}

func (b *bench) nextLog() int { b.logN++; return b.logN }

func (b *bench) run(selected map[string]bool, keepLogs, out string) error {
	tmp, err := os.MkdirTemp("", "ownergc-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.logDir = filepath.Join(tmp, "logs")
	if keepLogs != "" {
		b.logDir = keepLogs
	}
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		return err
	}

	assets, err := framework.AssetsDir()
	if err != nil {
		return err
	}
	b.kcmBin = filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(b.kcmBin); err != nil {
		return fmt.Errorf("kube-controller-manager not found in %s: run 'make envtest-assets' first", assets)
	}
	if m0, err := machineCPU(); err == nil {
		self0 := b.cpuNow(nil)["benchmark"]
		time.Sleep(3 * time.Second)
		if m1, err := machineCPU(); err == nil {
			b.res.otherLoadAtStart = max(0, (m1-m0)-(b.cpuNow(nil)["benchmark"]-self0)) / 3
			b.logf("Other processes are using %.2f cores of this %d-core machine", b.res.otherLoadAtStart, runtime.NumCPU())
			if b.res.otherLoadAtStart > 0.2 {
				b.logf("Warning: the machine is busy; the figures will be noisier than they should be")
			}
		}
	}
	b.logf("Building ownergc (go build -o %s/manager .)", tmp)
	if b.managerBin, err = framework.BuildManager(tmp); err != nil {
		return err
	}

	b.logf("Starting the control plane (kube-apiserver and etcd v%s from %s)", framework.KubernetesVersion, assets)
	cp, err := framework.StartControlPlane()
	if err != nil {
		return err
	}
	defer func() {
		b.logf("Stopping the control plane")
		cp.Stop()
	}()
	b.cp = cp
	b.planePids = findChildren("kube-apiserver", "etcd")
	if len(b.planePids) != 2 {
		b.logf("Warning: found only %v among the benchmark's children; CPU figures will miss the rest", b.planePids)
	}
	b.kubeconfig = filepath.Join(tmp, "kubeconfig")
	adminCfg, err := cp.WriteAdminKubeconfig("bench-admin", b.kubeconfig)
	if err != nil {
		return err
	}
	b.cfg = rest.CopyConfig(adminCfg)
	b.cfg.QPS, b.cfg.Burst = 100000, 100000
	b.cfg.ContentType = "application/vnd.kubernetes.protobuf"
	b.cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if b.cs, err = kubernetes.NewForConfig(b.cfg); err != nil {
		return err
	}
	jsonCfg := rest.CopyConfig(b.cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "", ""
	if b.dyn, err = dynamic.NewForConfig(jsonCfg); err != nil {
		return err
	}
	if _, err := b.scrape(); err != nil {
		return err
	}
	b.logf("Collector logs: %s", b.logDir)

	for _, w := range append(allWorkloads, partWorkloads...) {
		if !selected[w] {
			continue
		}
		b.res.ran[w] = true
		switch w {
		case "wide":
			// Rate-limited: one round is enough.
			b.cascades("wide", equalQPS, "wide cascade at equal effective QPS", collectors, 1)
		case "unthrottled":
			runs := collectors
			if selected["floor"] {
				runs = append(append([]string(nil), collectors...), "floor")
			}
			b.cascades("unthrottled", unthrottled, "wide cascade, unthrottled, interleaved with the physical limit", runs, b.rounds)
		case "floor":
			if !selected["unthrottled"] {
				b.cascades("floor", unthrottled, "physical limit", []string{"floor"}, b.rounds)
			}
		case "forest":
			b.forest()
		case "crd":
			b.crdPickup()
		case "dryrun":
			b.dryRun()
		case "fleet":
			b.fleet()
		case "storm":
			if !selected["fleet"] {
				b.stormAlone()
			}
		case "expiry":
			b.expiry()
		case "memory":
			b.memory()
		}
	}

	b.res.elapsed = time.Since(b.began)
	table := b.res.table(b)
	fmt.Println()
	fmt.Println(table)
	if out != "" {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, []byte(b.res.markdown(b, table)), 0o644); err != nil {
			return err
		}
		b.logf("Wrote %s", out)
	}
	if keepLogs != "" {
		b.logf("Collector logs kept in %s", keepLogs)
	}
	return nil
}

// newNamespace creates a fresh namespace (namespaces never finish
// terminating without kube-controller-manager's namespace controller, so
// the benchmark never reuses or deletes them; it empties them instead).
func (b *bench) newNamespace(tag string) (string, error) { return newNamespaceOn(b.cs, tag) }

// newNamespaceOn is newNamespace on the cluster of cs.
func newNamespaceOn(cs kubernetes.Interface, tag string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-" + tag + "-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating a namespace: %w", err)
	}
	return ns.Name, nil
}

// empty deletes every ConfigMap and Secret left in ns (with no collector
// running), removing finalizers a failed run may have left.
func (b *bench) empty(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if err := b.cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
		b.logf("  cleanup of %s: %v", ns, err)
	}
	if err := b.cs.CoreV1().Secrets(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
		b.logf("  cleanup of %s: %v", ns, err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if cms, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range cms.Items {
			_, _ = b.cs.CoreV1().ConfigMaps(ns).Patch(ctx, o.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
		}
	}
	if ss, err := b.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range ss.Items {
			_, _ = b.cs.CoreV1().Secrets(ns).Patch(ctx, o.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
		}
	}
}

// parallel runs f(i) for i in [0, n) on workers goroutines and returns the
// first error.
func parallel(n, workers int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			var first error
			for i := range next {
				if first != nil {
					continue
				}
				first = f(i)
			}
			errs <- first
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var err error
	for w := 0; w < workers; w++ {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	return err
}

// createWithRetry retries a create that fails transiently (the control plane
// is saturated on small machines).
func createWithRetry(f func() error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = f(); err == nil || apierrors.IsAlreadyExists(err) {
			return err
		}
		if !apierrors.IsServerTimeout(err) && !apierrors.IsTooManyRequests(err) && !apierrors.IsTimeout(err) && !apierrors.IsInternalError(err) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}
