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
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// dryRunDelete is the log line ownergc writes for each deletion it would
// have made in DryRun (one line per decision).
const dryRunDelete = "Dry run: would delete"

// The runs of the dryrun workload, in the order they run.
const (
	runEnforce = "Enforce"
	runShadow  = "DryRun beside upstream"
	runDryRun  = "DryRun alone"
)

var dryRunRuns = []string{runEnforce, runShadow, runDryRun}

var gcPolicies = schema.GroupVersionResource{Group: "ownergc.io", Version: "v1alpha1", Resource: "gcpolicies"}

// dryRunResult is one run of the dryrun workload.
type dryRunResult struct {
	// wall runs from the owner's DELETE to: the last dependent gone
	// (Enforce), the N-th would-delete decision (DryRun alone), the last
	// dependent gone and every deletion compared (beside upstream).
	wall time.Duration
	// reqs are the requests of the collectors that ran (both, beside
	// upstream); writes those of them that wrote to the workload's objects.
	reqs   requests
	writes float64
	// rssBefore is ownergc's resident memory just before the owner's
	// DELETE, rssPeak the largest sample (every 20 ms) until the end.
	rssBefore, rssPeak int64
	decisions          int // would-delete decisions logged
	agreed, disagreed  int64
	kept               int // dependents still there at the end
}

// dryRun runs the wide cascade (N dependents, at the equal effective QPS)
// three times: ownergc in Enforce alone; ownergc in DryRun beside
// kube-controller-manager's collector, which deletes, while ownergc
// compares; ownergc in DryRun alone, until it has logged N would-delete
// decisions. It measures what DryRun costs: API writes (none), requests and
// resident memory, against Enforce.
func (b *bench) dryRun() {
	b.logf("Workload dryrun: the wide cascade (N=%d, %s) with ownergc in Enforce, in DryRun beside upstream, and in DryRun alone", b.n, equalQPS)
	eachRun(b, "dryrun", dryRunRuns, b.dryRunOne, func(run string, res *dryRunResult) {
		b.res.dryRun[run] = res
		b.logf("  %s: %s; ownergc's resident memory %.1f MiB before, peak %.1f MiB; writes to the workload's objects %.0f; requests: %s",
			run, res.wall.Round(time.Millisecond), mib(res.rssBefore), mib(res.rssPeak), res.writes, res.reqs.perObject(1))
		if run != runEnforce {
			b.logf("    %d would-delete decisions, %d dependents kept, shadow: %d agreed, %d disagreed", res.decisions, res.kept, res.agreed, res.disagreed)
		}
	})
	if err := b.setMode("Enforce"); err != nil {
		b.logf("  %v", err)
	}
}

// setMode sets spec.mode of the GCPolicy "default", creating it when
// missing (the manager creates it with its defaults otherwise).
func (b *bench) setMode(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := []byte(fmt.Sprintf(`{"spec":{"mode":%q}}`, mode))
	_, err := b.dyn.Resource(gcPolicies).Patch(ctx, "default", types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ownergc.io/v1alpha1", "kind": "GCPolicy",
			"metadata": map[string]any{"name": "default"},
			"spec":     map[string]any{"mode": mode},
		}}
		_, err = b.dyn.Resource(gcPolicies).Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("setting GCPolicy default's mode to %s: %w", mode, err)
	}
	return nil
}

// shadowCounts reads status.shadow of the GCPolicy "default".
func (b *bench) shadowCounts() (agreed, disagreed int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := b.dyn.Resource(gcPolicies).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	agreed, _, _ = unstructured.NestedInt64(p.Object, "status", "shadow", "agreed")
	disagreed, _, _ = unstructured.NestedInt64(p.Object, "status", "shadow", "disagreed")
	return agreed, disagreed, nil
}

// rssSampler samples the resident memory of processes every 20 ms and keeps
// the largest sum.
type rssSampler struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(ps ...*proc) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := sumRSS(ps); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, v)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// sumRSS returns the resident memory of processes together.
func sumRSS(ps []*proc) (int64, error) {
	var sum int64
	for _, p := range ps {
		v, err := p.rss()
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func (s *rssSampler) finish() int64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func (b *bench) dryRunOne(run string) (*dryRunResult, error) {
	mode := "DryRun"
	if run == runEnforce {
		mode = "Enforce"
	}
	if err := b.setMode(mode); err != nil {
		return nil, err
	}
	started := []string{ownergc}
	if run == runShadow {
		started = []string{upstream, ownergc}
	}
	w, err := b.readyWide("dryrun", run == runDryRun, equalQPS, started...)
	if err != nil {
		return nil, err
	}
	defer w.close()
	p := w.procs[len(w.procs)-1]
	alive := func() error {
		for _, p := range w.procs {
			if err := p.Alive(); err != nil {
				return err
			}
		}
		return nil
	}
	tr, deps := w.tr, w.deps

	res := &dryRunResult{}
	if res.rssBefore, err = p.rss(); err != nil {
		return nil, err
	}
	sampler := sampleRSS(p)
	fail := func(err error) (*dryRunResult, error) {
		sampler.finish()
		return nil, err
	}
	before, err := b.scrape()
	if err != nil {
		return fail(err)
	}
	t0, err := w.deleteOwner()
	if err != nil {
		return fail(err)
	}
	timeout := b.wideTimeout(equalQPS)
	polls := 0 // the benchmark's GETs of the GCPolicy
	// Every run waits for the tracker: the dependents gone (Enforce, and
	// upstream beside DryRun), or the owner's deletion seen (DryRun
	// alone). Then, beside upstream, every deletion upstream made is one
	// ownergc would have made: wait until the status has compared them
	// all; alone, wait for N decisions.
	met, err := tr.wait(timeout, alive, func(s string) { b.logf("    %s: %s", run, s) })
	if err != nil {
		return fail(err)
	}
	var done func() (bool, string)
	switch run {
	case runEnforce:
		res.wall = met.Sub(t0)
	case runShadow:
		done = func() (bool, string) {
			polls++
			a, d, err := b.shadowCounts()
			if err != nil {
				return false, err.Error()
			}
			res.agreed, res.disagreed = a, d
			return a+d >= int64(len(deps)), fmt.Sprintf("%d agreed, %d disagreed of %d deletions", a, d, len(deps))
		}
	case runDryRun:
		done = func() (bool, string) {
			n := p.lines.count(dryRunDelete)
			return n >= len(deps), fmt.Sprintf("%d of %d would-delete decisions logged", n, len(deps))
		}
	}
	if done != nil {
		if err := pollUntil(timeout, alive, done); err != nil {
			return fail(err)
		}
		res.wall = time.Since(t0)
	}
	time.Sleep(trailing)
	res.rssPeak = sampler.finish()
	after, err := b.scrape()
	if err != nil {
		return nil, err
	}
	res.decisions = p.lines.count(dryRunDelete)
	own := requests{{verb: "DELETE", resource: "secrets"}: 1, {verb: "GET", resource: "gcpolicies"}: float64(polls)}
	res.reqs = after.minus(before).collectorRequests(own)
	for k, v := range res.reqs {
		if k.verb != "GET" && (k.resource == "configmaps" || k.resource == "secrets") {
			res.writes += v
		}
	}
	if err := tr.finalViolations(); err != nil {
		return nil, err
	}
	if run == runDryRun {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := b.cs.CoreV1().ConfigMaps(w.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		res.kept = len(list.Items)
		if res.kept != len(deps) {
			return nil, fmt.Errorf("DryRun: %d of %d dependents left", res.kept, len(deps))
		}
	}
	return res, nil
}

// pollUntil polls done every 100 ms until it says true, the timeout passes
// or alive fails; done also says how far it got, for the error.
func pollUntil(timeout time.Duration, alive func() error, done func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, progress := done()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s: %s", timeout, progress)
		}
		if err := alive(); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
