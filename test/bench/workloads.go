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
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ownergc/ownergc/test/framework"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// createParallelism is the number of goroutines creating a workload's
// objects (before any measurement starts).
const createParallelism = 32

// settle is the pause between a collector becoming ready and the start of a
// measurement, so that its start-up work is not measured.
const settle = 2 * time.Second

// trailing is the pause after a workload completes before the request
// counters are read, so that requests the collector sends right after the
// last deletion (e.g. re-checking the owner) are counted.
const trailing = 2 * time.Second

func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

func (b *bench) createSecret(ns, name string) (*corev1.Secret, error) {
	return createSecretOn(b.cs, ns, name)
}

func createSecretOn(cs kubernetes.Interface, ns, name string) (*corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
}

// createConfigMaps creates n ConfigMaps built by mk, in parallel, and
// returns them as created.
func (b *bench) createConfigMaps(ns string, n int, mk func(i int) *corev1.ConfigMap) ([]*corev1.ConfigMap, error) {
	return createConfigMapsOn(b.cs, ns, n, mk)
}

// createConfigMapsOn is createConfigMaps on the cluster of cs.
func createConfigMapsOn(cs kubernetes.Interface, ns string, n int, mk func(i int) *corev1.ConfigMap) ([]*corev1.ConfigMap, error) {
	out := make([]*corev1.ConfigMap, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	err := parallel(n, createParallelism, func(i int) error {
		cm := mk(i)
		return createWithRetry(func() error {
			created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			if err == nil {
				out[i] = created
			}
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("creating ConfigMaps in %s: %w", ns, err)
	}
	return out, nil
}

// cascadeResult is one collector's run of a wide cascade, the physical
// limit or the forest.
type cascadeResult struct {
	wall    time.Duration
	reqs    requests // the collector's requests (see collectorRequests)
	objects int      // objects the collector deleted
	cpu     cpuTimes // CPU seconds by process over the measurement
	// first, half and p90 are when the first, half and 90% of the
	// ConfigMaps were gone.
	first, half, p90 time.Duration
}

// finish fills in the diagnostics of a measurement.
func (c *cascadeResult) finish(tr *tracker, t0 time.Time, cpu cpuTimes) *cascadeResult {
	c.first, c.half, c.p90 = tr.progress(t0)
	c.cpu = cpu
	return c
}

func (c *cascadeResult) diag() string {
	return fmt.Sprintf("first dependent gone after %s, half after %s, 90%% after %s; CPU seconds: %s; other processes on the machine: %.2f cores",
		c.first.Round(time.Millisecond), c.half.Round(time.Millisecond), c.p90.Round(time.Millisecond), c.cpu, c.foreign())
}

// foreign is the average number of cores used by processes that are not
// part of the measurement (other work on the machine) during it.
func (c *cascadeResult) foreign() float64 {
	return max(0, c.cpu[machineKey]-c.cpu.total()) / c.wall.Seconds()
}

func (c *cascadeResult) perObject() float64 { return c.reqs.total() / float64(c.objects) }
func (c *cascadeResult) deletesPerSec() float64 {
	return float64(c.objects) / c.wall.Seconds()
}
func (c *cascadeResult) requestsPerSec() float64 { return c.reqs.total() / c.wall.Seconds() }

// wideSetup creates one owner Secret and N ConfigMaps it controls.
func (b *bench) wideSetup(tag string) (ns string, owner *corev1.Secret, deps []*corev1.ConfigMap, err error) {
	start := time.Now()
	ns, owner, deps, err = wideSetupOn(b.cs, tag, b.n)
	if err == nil {
		b.logf("  created %d dependents of secret %s/owner in %s", b.n, ns, time.Since(start).Round(time.Millisecond))
	}
	return ns, owner, deps, err
}

// wideSetupOn creates, in a fresh namespace of the cluster of cs, one owner
// Secret and n ConfigMaps it controls.
func wideSetupOn(cs kubernetes.Interface, tag string, n int) (ns string, owner *corev1.Secret, deps []*corev1.ConfigMap, err error) {
	if ns, err = newNamespaceOn(cs, tag); err != nil {
		return "", nil, nil, err
	}
	if owner, err = createSecretOn(cs, ns, "owner"); err != nil {
		return ns, nil, nil, err
	}
	ref := controllerRef("v1", "Secret", owner.Name, owner.UID)
	deps, err = createConfigMapsOn(cs, ns, n, func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("dep-%05d", i), Labels: map[string]string{"bench": tag},
			OwnerReferences: []metav1.OwnerReference{ref},
		}}
	})
	return ns, owner, deps, err
}

// wideExpectation is what a wide cascade waits for: the owner gone, and its
// dependents gone too, or all still there (depsStay).
func wideExpectation(deps []*corev1.ConfigMap, depsStay bool) *expectation {
	exp := newExpectation()
	exp.mustGo["secrets/owner"] = true
	for _, d := range deps {
		if depsStay {
			exp.mustStay["configmaps/"+d.Name] = true
		} else {
			exp.mustGo["configmaps/"+d.Name] = true
		}
	}
	return exp
}

// cascades runs the wide cascade (or the physical limit, run "floor") for
// each of runs, rounds times, rotating the order every round so that no run
// always goes first; the run with the median time is reported, every run in
// the diagnostics. The wide cascade: one owner with N dependents, deleted in
// the background; wall time from the owner's DELETE to the last dependent's
// deletion event.
func (b *bench) cascades(tag string, r rate, title string, runs []string, rounds int) {
	b.logf("Workload %s: %s (N=%d, %s; %s, %d round(s))", tag, title, b.n, r, strings.Join(runs, ", "), rounds)
	for round := 0; round < rounds; round++ {
		for i := range runs {
			name := runs[(i+round)%len(runs)]
			workload, c := tag, name
			if name == "floor" {
				workload, c = "floor", ""
			}
			if b.res.err(workload, c) != nil {
				continue
			}
			var res *cascadeResult
			var err error
			if name == "floor" {
				res, err = b.floorOne()
			} else {
				res, err = b.wideOne(tag, c, r)
			}
			if b.failed(workload, c, name, err) {
				continue
			}
			key := workload + "/" + c
			b.res.samples[key] = append(b.res.samples[key], res)
			if name == "floor" {
				b.logf("  physical limit: %s (%.0f deletes/s)", res.wall.Round(time.Millisecond), res.deletesPerSec())
			} else {
				b.logf("  %s: %s, %.3f requests/object (%s), %.0f deletes/s, %.0f requests/s",
					c, res.wall.Round(time.Millisecond), res.perObject(), res.reqs.perObject(res.objects), res.deletesPerSec(), res.requestsPerSec())
			}
			b.logf("    %s", res.diag())
		}
	}
	for _, name := range runs {
		key := tag + "/" + name
		if name == "floor" {
			key = "floor/"
		}
		if med := medianCascade(b.res.samples[key]); med != nil {
			b.res.cascades[key] = med
			if len(b.res.samples[key]) > 1 {
				b.logf("  %s: median %s", name, med.wall.Round(time.Millisecond))
			}
		}
	}
	if med := b.res.cascades["floor/"]; med != nil {
		b.res.floor = med
	}
}

// medianCascade returns the run with the median time (the lower middle of
// an even number).
func medianCascade(runs []*cascadeResult) *cascadeResult {
	if len(runs) == 0 {
		return nil
	}
	sorted := append([]*cascadeResult(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].wall < sorted[j].wall })
	return sorted[(len(sorted)-1)/2]
}

func (b *bench) wideOne(tag, c string, r rate) (*cascadeResult, error) {
	w, err := b.readyWide(tag, false, r, c)
	if err != nil {
		return nil, err
	}
	defer w.close()
	p := w.procs[0]
	before, err := b.scrape()
	if err != nil {
		return nil, err
	}
	cpu0 := b.cpuNow(p)
	t0, err := w.deleteOwner()
	if err != nil {
		return nil, err
	}
	met, err := w.tr.wait(b.wideTimeout(r), p.Alive, func(s string) { b.logf("    %s: %s", c, s) })
	if err != nil {
		return nil, err
	}
	cpu := b.cpuNow(p).minus(cpu0)
	time.Sleep(trailing)
	after, err := b.scrape()
	if err != nil {
		return nil, err
	}
	own := requests{{verb: "DELETE", resource: "secrets"}: 1}
	res := &cascadeResult{wall: met.Sub(t0), reqs: after.minus(before).collectorRequests(own), objects: len(w.deps)}
	return res.finish(w.tr, t0, cpu), nil
}

// wideCascade is a wide cascade ready to be measured: the owner and its
// dependents in a namespace of their own, tracked, and the collectors that
// are measured started and quiet.
type wideCascade struct {
	b     *bench
	ns    string
	owner *corev1.Secret
	deps  []*corev1.ConfigMap
	tr    *tracker
	procs []*proc
}

// readyWide sets up the wide cascade of workload tag, tracked until its
// dependents are gone (or, with keep, kept: DryRun), starts the collectors
// named (in order, at rate r) and waits until they are quiet. Close it when
// done.
func (b *bench) readyWide(tag string, keep bool, r rate, names ...string) (_ *wideCascade, err error) {
	w := &wideCascade{b: b}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.ns, w.owner, w.deps, err = b.wideSetup(tag); err != nil {
		return nil, err
	}
	if w.tr, err = b.track(w.ns, wideExpectation(w.deps, keep)); err != nil {
		return nil, err
	}
	for i, c := range names {
		start := b.startCollector
		if i == len(names)-1 {
			start = b.startQuiet
		}
		p, err := start(c, r, tag)
		if err != nil {
			return nil, err
		}
		w.procs = append(w.procs, p)
	}
	return w, nil
}

// startQuiet starts collector c at rate r for workload tag, says when it
// was ready, and waits until it and the cluster are quiet.
func (b *bench) startQuiet(c string, r rate, tag string) (*proc, error) {
	p, err := b.startCollector(c, r, tag)
	if err != nil {
		return nil, err
	}
	b.logf("  %s ready after %s", c, p.startup().Round(time.Millisecond))
	time.Sleep(settle)
	b.waitQuiet(p)
	return p, nil
}

// failed, when err is not nil, says that run of workload failed and records
// it as the failure of collector (or run) c; it reports whether it did.
func (b *bench) failed(workload, c, run string, err error) bool {
	if err == nil {
		return false
	}
	b.logf("  %s: FAILED: %v", run, err)
	b.res.fail(workload, c, err)
	return true
}

// eachRun runs one for each of runs (collectors, modes) in turn: a run
// that fails is logged and recorded against workload (failed), done takes
// the result of every other.
func eachRun[R any](b *bench, workload string, runs []string, one func(string) (R, error), done func(string, R)) {
	for _, run := range runs {
		res, err := one(run)
		if b.failed(workload, run, run, err) {
			continue
		}
		done(run, res)
	}
}

// close stops the collectors and the tracker and empties the namespace.
func (w *wideCascade) close() {
	for i := len(w.procs) - 1; i >= 0; i-- {
		w.procs[i].stop()
	}
	if w.tr != nil {
		w.tr.stop()
	}
	if w.ns != "" {
		w.b.empty(w.ns)
	}
}

// deleteOwner deletes the owner in the background, with its UID as a
// precondition, and returns when it sent the request.
func (w *wideCascade) deleteOwner() (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	t0 := time.Now()
	if err := w.b.cs.CoreV1().Secrets(w.ns).Delete(ctx, w.owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: metav1.NewUIDPreconditions(string(w.owner.UID))}); err != nil {
		return t0, fmt.Errorf("deleting the owner: %w", err)
	}
	return t0, nil
}

// wideTimeout bounds a wide cascade at rate r.
func (b *bench) wideTimeout(r rate) time.Duration {
	return 3*time.Minute + time.Duration(float64(4*b.n)/min(r.qps, 1000)*float64(time.Second))
}

// floorOne deletes N dependents directly with a plain unthrottled client,
// with the collectors' parallelism and their precondition: the physical
// limit.
func (b *bench) floorOne() (*cascadeResult, error) {
	ns, _, deps, err := b.wideSetup("floor")
	if ns != "" {
		defer b.empty(ns)
	}
	if err != nil {
		return nil, err
	}
	exp := newExpectation()
	for _, d := range deps {
		exp.mustGo["configmaps/"+d.Name] = true
	}
	tr, err := b.track(ns, exp)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	time.Sleep(settle)
	b.waitQuiet(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	cpu0 := b.cpuNow(nil)
	t0 := time.Now()
	err = parallel(len(deps), b.workers, func(i int) error {
		d := deps[i]
		return b.cs.CoreV1().ConfigMaps(ns).Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: metav1.NewUIDPreconditions(string(d.UID))})
	})
	if err != nil {
		return nil, fmt.Errorf("deleting: %w", err)
	}
	met, err := tr.wait(2*time.Minute, func() error { return nil }, nil)
	if err != nil {
		return nil, err
	}
	res := &cascadeResult{wall: met.Sub(t0), objects: len(deps)}
	return res.finish(tr, t0, b.cpuNow(nil).minus(cpu0)), nil
}

// forest: owners × 10 dependents × 2 levels, owners deleted concurrently, a
// third each with Background, Foreground and Orphan propagation.
func (b *bench) forest() {
	b.logf("Workload forest: %d owners x 10 dependents x 2 levels, Background/Foreground/Orphan (%s)", b.owners, equalQPS)
	eachRun(b, "forest", collectors, b.forestOne, func(c string, res *cascadeResult) {
		b.res.cascades["forest/"+c] = res
		b.logf("  %s: quiescent after %s, %.3f requests per deleted or orphaned object (%s)",
			c, res.wall.Round(time.Millisecond), res.perObject(), res.reqs.perObject(res.objects))
		b.logf("    %s", res.diag())
	})
}

var policies = []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}

func (b *bench) forestOne(c string) (*cascadeResult, error) {
	ns, err := b.newNamespace("forest")
	if err != nil {
		return nil, err
	}
	defer b.empty(ns)
	const width = 10
	start := time.Now()
	owners := make([]*corev1.Secret, b.owners)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := parallel(b.owners, createParallelism, func(i int) error {
		return createWithRetry(func() error {
			s, err := b.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%03d", i)}}, metav1.CreateOptions{})
			owners[i] = s
			return err
		})
	}); err != nil {
		return nil, fmt.Errorf("creating owners: %w", err)
	}
	l1, err := b.createConfigMaps(ns, b.owners*width, func(i int) *corev1.ConfigMap {
		o := owners[i/width]
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("l1-%03d-%d", i/width, i%width),
			OwnerReferences: []metav1.OwnerReference{controllerRef("v1", "Secret", o.Name, o.UID)},
		}}
	})
	if err != nil {
		return nil, err
	}
	l2, err := b.createConfigMaps(ns, b.owners*width, func(i int) *corev1.ConfigMap {
		p := l1[i]
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("l2-%03d-%d", i/width, i%width),
			OwnerReferences: []metav1.OwnerReference{controllerRef("v1", "ConfigMap", p.Name, p.UID)},
		}}
	})
	if err != nil {
		return nil, err
	}
	b.logf("  created %d owners, %d + %d dependents in %s", b.owners, len(l1), len(l2), time.Since(start).Round(time.Millisecond))

	exp := newExpectation()
	collected := 0
	for i, o := range owners {
		exp.mustGo["secrets/"+o.Name] = true
		for j := i * width; j < (i+1)*width; j++ {
			if policies[i%3] == metav1.DeletePropagationOrphan {
				exp.orphanOf["configmaps/"+l1[j].Name] = o.UID
				exp.mustStay["configmaps/"+l1[j].Name] = true
				exp.mustStay["configmaps/"+l2[j].Name] = true
				collected++ // the orphaning counts as the collector's work on l1
			} else {
				exp.mustGo["configmaps/"+l1[j].Name] = true
				exp.mustGo["configmaps/"+l2[j].Name] = true
				collected += 2
			}
		}
	}
	tr, err := b.track(ns, exp)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	p, err := b.startQuiet(c, equalQPS, "forest")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	before, err := b.scrape()
	if err != nil {
		return nil, err
	}
	cpu0 := b.cpuNow(p)
	t0 := time.Now()
	if err := parallel(len(owners), b.workers, func(i int) error {
		o := owners[i]
		pol := policies[i%3]
		return b.cs.CoreV1().Secrets(ns).Delete(ctx, o.Name, metav1.DeleteOptions{PropagationPolicy: &pol, Preconditions: metav1.NewUIDPreconditions(string(o.UID))})
	}); err != nil {
		return nil, fmt.Errorf("deleting owners: %w", err)
	}
	met, err := tr.wait(10*time.Minute, p.Alive, func(s string) { b.logf("    %s: %s", c, s) })
	if err != nil {
		return nil, err
	}
	cpu := b.cpuNow(p).minus(cpu0)
	time.Sleep(trailing)
	if err := tr.finalViolations(); err != nil {
		return nil, err
	}
	after, err := b.scrape()
	if err != nil {
		return nil, err
	}
	own := requests{{verb: "DELETE", resource: "secrets"}: float64(len(owners))}
	res := &cascadeResult{wall: met.Sub(t0), reqs: after.minus(before).collectorRequests(own), objects: collected}
	return res.finish(tr, t0, cpu), nil
}

// crdPickup measures, with the collector running, the time from a new CRD
// becoming Established to the collection of a dependent of one of its
// objects.
func (b *bench) crdPickup() {
	b.logf("Workload crd: CRD pickup")
	for i, c := range collectors {
		res, err := b.crdOne(c, i)
		if b.failed("crd", c, c, err) {
			continue
		}
		b.res.crd[c] = res
		b.logf("  %s: %s from Established to the dependent gone: %s creating the owner (kube-apiserver), %s from the owner's deletion",
			c, res.total.Round(time.Millisecond), res.create.Round(time.Millisecond), res.collect.Round(time.Millisecond))
	}
}

// crdResult splits the CRD pickup: total = Established → dependent gone;
// create = Established → the owner created (the kube-apiserver holds the
// first creates of a CRD established less than 2 s ago for 2 s); collect =
// the owner deleted → the dependent gone.
type crdResult struct {
	total, create, collect time.Duration
}

func (b *bench) crdOne(c string, i int) (*crdResult, error) {
	ns, err := b.newNamespace("crd")
	if err != nil {
		return nil, err
	}
	defer b.empty(ns)
	p, err := b.startQuiet(c, equalQPS, "crd")
	if err != nil {
		return nil, err
	}
	defer p.stop()

	group := fmt.Sprintf("r%d%d.bench.ownergc.io", b.began.Unix()%1000000, i)
	name := "widgets." + group
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := b.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating CRD %s: %w", name, err)
	}
	defer func() { _ = b.dyn.Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) }()
	var established time.Time
	if err := framework.PollEvery(time.Minute, 5*time.Millisecond, func() error {
		got, err := b.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = time.Now()
				return nil
			}
		}
		return errors.New("CRD not Established")
	}); err != nil {
		return nil, err
	}

	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	var owner *unstructured.Unstructured
	if err := framework.PollEvery(30*time.Second, 10*time.Millisecond, func() error {
		var err error
		owner, err = b.dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "owner"},
		}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating a Widget: %w", err)
	}
	created := time.Now()
	if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:            "dependent",
		OwnerReferences: []metav1.OwnerReference{controllerRef(group+"/v1", "Widget", owner.GetName(), owner.GetUID())},
	}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the dependent: %w", err)
	}
	bg := metav1.DeletePropagationBackground
	if err := b.dyn.Resource(gvr).Namespace(ns).Delete(ctx, owner.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return nil, fmt.Errorf("deleting the Widget: %w", err)
	}
	ownerGone := time.Now()
	var gone time.Time
	if err := framework.PollEvery(90*time.Second, 10*time.Millisecond, func() error {
		if err := p.Alive(); err != nil {
			return err
		}
		_, err := b.cs.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			gone = time.Now()
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("the dependent still exists")
	}); err != nil {
		return nil, err
	}
	return &crdResult{total: gone.Sub(established), create: created.Sub(established), collect: gone.Sub(ownerGone)}, nil
}

// memory measures each collector's resident memory on the (nearly) empty
// cluster and with M small objects present, and its start-up time with them.
func (b *bench) memory() {
	b.logf("Workload memory: resident memory and start-up, empty and with M=%d objects (%d starts of each, median)", b.m, b.rounds)
	order := func(round int) []string {
		if round%2 == 0 {
			return []string{ownergc, upstream}
		}
		return []string{upstream, ownergc}
	}
	rounds := func(tag string, into map[string][]*procMeasure) {
		for round := 0; round < b.rounds; round++ {
			for _, c := range order(round) {
				if b.res.err("memory", c) != nil {
					continue
				}
				b.waitQuiet(nil)
				pm, err := b.measureProcess(c, fmt.Sprintf("%s-%d", tag, round+1))
				if b.failed("memory", c, c+" ("+tag+")", err) {
					continue
				}
				into[c] = append(into[c], pm)
				b.logf("  %s, %s %d: RSS %.1f MiB, %s", c, tag, round+1, mib(pm.rss), pm)
			}
		}
	}
	rounds("empty", b.res.emptySamples)
	for c, samples := range b.res.emptySamples {
		b.res.rssEmpty[c], b.res.startEmpty[c] = medianProc(samples).rss, medianProc(samples).ready
	}

	ns, err := b.newNamespace("memory")
	if err != nil {
		b.res.fail("memory", "", err)
		return
	}
	nOwners := max(1, b.m/1000)
	owners := make([]*corev1.Secret, nOwners)
	for i := range owners {
		if owners[i], err = b.createSecret(ns, fmt.Sprintf("owner-%03d", i)); err != nil {
			b.res.fail("memory", "", err)
			return
		}
	}
	annotation := strings.Repeat("x", 300)
	start := time.Now()
	var mu sync.Mutex
	done := 0
	if _, err := b.createConfigMaps(ns, b.m, func(i int) *corev1.ConfigMap {
		mu.Lock()
		done++
		if done%10000 == 0 {
			b.logf("    %d/%d created", done, b.m)
		}
		mu.Unlock()
		o := owners[i%nOwners]
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("obj-%06d", i),
			Labels:          map[string]string{"app": "bench", "tier": fmt.Sprintf("t%d", i%7), "shard": fmt.Sprintf("s%d", i%100)},
			Annotations:     map[string]string{"bench.ownergc.io/payload": annotation},
			OwnerReferences: []metav1.OwnerReference{controllerRef("v1", "Secret", o.Name, o.UID)},
		}}
	}); err != nil {
		b.res.fail("memory", "", err)
		return
	}
	b.logf("  created %d objects (owned by %d Secrets) in %s", b.m, nOwners, time.Since(start).Round(time.Millisecond))
	rounds("loaded", b.res.loadedSamples)
	for c, samples := range b.res.loadedSamples {
		pm := medianProc(samples)
		b.res.rssLoaded[c], b.res.startLoaded[c], b.res.loaded[c] = pm.rss, pm.ready, pm
		if e, ok := b.res.rssEmpty[c]; ok {
			b.logf("  %s: median RSS %.1f MiB empty, %.1f MiB with %d objects: %.0f bytes/object; median start-up %s",
				c, mib(e), mib(pm.rss), b.m, float64(pm.rss-e)/float64(b.m), pm.ready.Round(time.Millisecond))
		}
	}
	// The M objects stay: memory is the last workload and the control
	// plane is torn down next.
}

// medianProc returns the median of each figure of the samples.
func medianProc(samples []*procMeasure) *procMeasure {
	med := func(f func(*procMeasure) float64) float64 {
		v := make([]float64, len(samples))
		for i, s := range samples {
			v[i] = f(s)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return &procMeasure{
		rss:       int64(med(func(p *procMeasure) float64 { return float64(p.rss) })),
		ready:     time.Duration(med(func(p *procMeasure) float64 { return float64(p.ready) })),
		graph:     time.Duration(med(func(p *procMeasure) float64 { return float64(p.graph) })),
		cpu:       med(func(p *procMeasure) float64 { return p.cpu }),
		watchList: med(func(p *procMeasure) float64 { return p.watchList }),
		foreign:   med(func(p *procMeasure) float64 { return p.foreign }),
	}
}

// procMeasure is one start of a collector for the memory workload.
type procMeasure struct {
	rss   int64
	ready time.Duration // exec → ready
	// graph is exec → the graph built: for ownergc the same as ready (its
	// readiness is the graph having synced); for kube-controller-manager
	// the moment its graph-changes queue first drains after ready.
	graph time.Duration
	cpu   float64 // the collector's CPU seconds from exec to graph
	// watchList is the time the kube-apiserver spent streaming the initial
	// list of ConfigMaps to the collector (apiserver_watch_list_duration_seconds).
	watchList float64
	foreign   float64 // cores used by other processes on the machine meanwhile
}

func (pm *procMeasure) String() string {
	return fmt.Sprintf("ready after %s, graph built after %s, %.2f CPU seconds until then; the kube-apiserver streamed the initial ConfigMaps in %.2f s; other load %.2f cores",
		pm.ready.Round(time.Millisecond), pm.graph.Round(time.Millisecond), pm.cpu, pm.watchList, pm.foreign)
}

// measureProcess starts a collector, takes its start-up time, lets it
// settle and reads its resident memory once it is steady.
func (b *bench) measureProcess(c, tag string) (*procMeasure, error) {
	wl0, _, err := b.watchListSeconds("configmaps")
	if err != nil {
		return nil, err
	}
	cpu0 := b.cpuNow(nil)
	p, err := b.startCollector(c, equalQPS, tag)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	pm := &procMeasure{ready: p.startup(), graph: p.startup()}
	if p.note != "" {
		b.res.note(p.note + " (" + tag + ")")
	}
	if p.metricsURL != "" {
		if err := framework.PollEvery(time.Minute, 20*time.Millisecond, func() error {
			d, err := p.graphChangesDepth()
			if err != nil {
				return err
			}
			if d > 0 {
				return fmt.Errorf("graph changes queue depth %g", d)
			}
			pm.graph = time.Since(p.Started)
			return nil
		}); err != nil {
			b.logf("  %s: cannot tell when its graph was built: %v", c, err)
		}
	}
	cpu1 := b.cpuNow(p)
	pm.cpu = cpu1["collector"]
	ours := cpu1.minus(cpu0).total() + pm.cpu // the collector started after cpu0
	pm.foreign = max(0, cpu1[machineKey]-cpu0[machineKey]-ours) / pm.graph.Seconds()
	if wl, _, err := b.watchListSeconds("configmaps"); err == nil {
		pm.watchList = wl - wl0
	}
	if pm.rss, err = steadyRSS(p); err != nil {
		return nil, err
	}
	return pm, nil
}

// steadyRSS reads a process's resident memory once it is steady: 3 s from
// now, then every second until two readings agree within 2% (at most 10 s
// more): the collector may still be building its graph from the informers'
// initial lists.
func steadyRSS(p *proc) (int64, error) {
	time.Sleep(3 * time.Second)
	prev, err := p.rss()
	if err != nil {
		return 0, err
	}
	for i := 0; i < 10; i++ {
		time.Sleep(time.Second)
		cur, err := p.rss()
		if err != nil {
			return 0, err
		}
		steady := abs(cur-prev) <= prev/50
		prev = cur
		if steady {
			break
		}
	}
	if err := p.Alive(); err != nil {
		return 0, err
	}
	return prev, nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
