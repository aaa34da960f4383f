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
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/test/framework"
)

// The fleet workload: one ownergc process in the fleet mode
// (--cluster-source=kubeconfig-secrets) collecting for K more control planes,
// against what a fleet needs without it: one collector process per cluster.

// fleetRate is each cluster's client rate in the fleet workload: low enough
// that K cascades at once stay within what the machine's control planes
// serve, so that a collector that serializes its clusters shows.
var fleetRate = rate{qps: 20, burst: 20}

var clusterGCStatuses = schema.GroupVersionResource{Group: "ownergc.io", Version: "v1alpha1", Resource: "clustergcstatuses"}

// fleetNamespace holds the kubeconfig Secrets on the benchmark's control
// plane, the fleet's host.
const fleetNamespace = "ownergc-fleet"

// member is one control plane of the fleet.
type member struct {
	name       string
	cp         *framework.ControlPlane
	kubeconfig string // an admin kubeconfig file, for kube-controller-manager
}

type fleetResult struct {
	// hostRSS is the fleet process's resident memory engaged with no
	// cluster, engagedRSS with every member engaged and idle.
	hostRSS, engagedRSS int64
	// singleRSS and kcmRSS are the resident memory of a single-cluster
	// ownergc and of a kube-controller-manager, idle on one member.
	singleRSS, kcmRSS int64
	// cascades are by collector: ownergc (one process) and upstream (one
	// kube-controller-manager per member).
	cascades map[string]*fleetCascade
	// idle is the fleet process at rest with 0, K and 2K members engaged
	// (--shard, one replica); kcmIdle one kube-controller-manager at rest
	// on one member, its writes less what that member's API server serves
	// without it.
	idle    []idleState
	kcmIdle *idleState
	// storms are the engagement storms, -storms of them, by their ratio to
	// the target's allowance (stormResult.ratio): the report tables the
	// median one.
	storms []stormResult
}

// idleAt returns the fleet process at rest with n members.
func (f *fleetResult) idleAt(n int) (idleState, bool) {
	for _, st := range f.idle {
		if st.members == n {
			return st, true
		}
	}
	return idleState{}, false
}

// fleetCascade is one wide cascade in every member at once.
type fleetCascade struct {
	// walls are each member's time from its owner's DELETE to its last
	// dependent gone.
	walls []time.Duration
	// all is from the first owner's DELETE to the last dependent gone
	// anywhere.
	all time.Duration
	// rssBefore and rssPeak are the collector processes' resident memory
	// together, just before the DELETEs and at the peak.
	rssBefore, rssPeak int64
}

// slowest is the smallest rate at which a member's dependents went, per
// second.
func (c *fleetCascade) slowest(n int) float64 {
	var worst time.Duration
	for _, w := range c.walls {
		worst = max(worst, w)
	}
	return float64(n) / worst.Seconds()
}

func (b *bench) fleet() {
	b.logf("Workload fleet: %d more control planes; ownergc in the fleet mode against one kube-controller-manager per cluster", b.fleetK)
	res, err := b.fleetRun()
	if err != nil {
		b.logf("  FAILED: %v", err)
		b.res.fail("fleet", "", err)
	}
	b.res.fleet = res
}

func (b *bench) fleetRun() (*fleetResult, error) {
	members, err := b.startMembers()
	defer func() {
		for _, m := range members {
			m.cp.Stop()
		}
	}()
	if err != nil {
		return nil, err
	}
	res := &fleetResult{cascades: map[string]*fleetCascade{}}

	// One kube-controller-manager at rest on one member: what each member
	// costs without ownergc, side by side with the fleet's slope below.
	if err := b.kcmAtRest(res, members[0]); err != nil {
		b.res.fail("fleet", upstream, err)
	}

	// One collector process per cluster, idle: what each member would cost.
	for _, c := range collectors {
		p, err := b.startCollectorOn(members[0].kubeconfig, c, fleetRate, "fleet-idle")
		if err != nil {
			return res, err
		}
		v, err := steadyRSS(p)
		p.stop()
		if err != nil {
			return res, err
		}
		if c == ownergc {
			res.singleRSS = v
		} else {
			res.kcmRSS = v
		}
		b.logf("  %s alone on one cluster, idle: %.1f MiB resident", c, mib(v))
	}

	// The fleet process, with no cluster and then with every member.
	if err := b.ensureNamespace(fleetNamespace); err != nil {
		return res, err
	}
	token, err := metricsReaderToken(b.cs, fleetNamespace)
	if err != nil {
		return res, err
	}
	// Sharded, as one replica: the heartbeat and the engines' claims are
	// part of what a member costs the host.
	fleetArgs := []string{"--cluster-source=kubeconfig-secrets", "--cluster-namespace=" + fleetNamespace, "--shard", "--replica-id=bench-0"}
	og, err := b.startOwnergcWithMetrics(b.kubeconfig, fleetRate, "fleet", token, fleetArgs...)
	if err != nil {
		return res, err
	}
	defer og.stop()
	b.logf("  ownergc's fleet process at rest, with 0, %d and %d members (two minutes each)", b.fleetK, 2*b.fleetK)
	b.waitQuiet(og)
	idle, err := b.measureIdle(og, 0, b.cs)
	if err != nil {
		return res, err
	}
	res.idle, res.hostRSS = append(res.idle, idle), idle.rss
	cascading := members[:b.fleetK]
	for _, step := range [][]*member{cascading, members[b.fleetK:]} {
		if err := b.putSecrets(step); err != nil {
			return res, err
		}
		engaged := len(res.idle) * b.fleetK
		t0 := time.Now()
		ready, err := b.watchMembersReady(3*time.Minute, og.Alive, engaged)
		if err != nil {
			return res, err
		}
		b.logf("  ownergc engaged %d more clusters, every one of %d Ready in %s", len(step), engaged, ready.Sub(t0).Round(time.Millisecond))
		b.waitQuiet(og)
		time.Sleep(idleSettle)
		if idle, err = b.measureIdle(og, engaged, b.cs); err != nil {
			return res, err
		}
		res.idle = append(res.idle, idle)
	}
	res.engagedRSS = res.idle[1].rss
	b.logf("  ownergc's fleet process: %.1f MiB resident with no cluster, %.1f MiB with %d idle clusters: %.1f MiB per cluster",
		mib(res.hostRSS), mib(res.engagedRSS), b.fleetK, mib(res.engagedRSS-res.hostRSS)/float64(b.fleetK))

	// The engagement storm: the process started again with every member's
	// Secret present, then with the first one's only; -storms times.
	og.stop()
	storms, err := b.engagementStorms(token, members, fleetArgs[:2], b.storms)
	if err != nil {
		return res, err
	}
	res.storms = storms
	if og, err = b.startOwnergcWithMetrics(b.kubeconfig, fleetRate, "fleet", token, fleetArgs...); err != nil {
		return res, err
	}
	defer og.stop()

	// The cascades run in the first K members alone.
	if err := b.putSecrets(members[1:b.fleetK]); err != nil {
		return res, err
	}
	if _, err := b.watchMembersReady(2*time.Minute, og.Alive, b.fleetK); err != nil {
		return res, err
	}
	b.waitQuiet(og)
	if res.cascades[ownergc], err = b.fleetCascades(cascading, []*proc{og}, ownergc); err != nil {
		b.res.fail("fleet", ownergc, err)
	}
	og.stop()

	var kcms []*proc
	defer func() {
		for _, p := range kcms {
			p.stop()
		}
	}()
	for _, m := range cascading {
		p, err := b.startCollectorOn(m.kubeconfig, upstream, fleetRate, "fleet-"+m.name)
		if err != nil {
			b.res.fail("fleet", upstream, err)
			return res, nil
		}
		kcms = append(kcms, p)
	}
	if res.cascades[upstream], err = b.fleetCascades(cascading, kcms, upstream); err != nil {
		b.res.fail("fleet", upstream, err)
	}
	return res, nil
}

// kcmAtRest measures one kube-controller-manager at rest on member m, and
// m's API server's writes without it.
func (b *bench) kcmAtRest(res *fleetResult, m *member) error {
	b.logf("  one kube-controller-manager at rest on %s (its API server's writes without it, then with it: two minutes each)", m.name)
	baseline, _, err := writesOver(m.cp.Clientset)
	if err != nil {
		return err
	}
	p, err := b.startCollectorOn(m.kubeconfig, upstream, fleetRate, "fleet-idle-kcm")
	if err != nil {
		return err
	}
	defer p.stop()
	time.Sleep(idleSettle)
	st, err := b.measureIdle(p, 1, m.cp.Clientset)
	if err != nil {
		return err
	}
	st.writes = max(0, st.writes-baseline)
	res.kcmIdle = &st
	return nil
}

// statusesLeft reports, for pollUntil, whether the host has n
// ClusterGCStatuses left.
func (b *bench) statusesLeft(n int) func() (bool, string) {
	return func() (bool, string) {
		list, err := b.clusterStatuses()
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == n, fmt.Sprintf("%d ClusterGCStatuses, want %d", len(list.Items), n)
	}
}

// startMembers starts the fleet's control planes (with ownergc's CRDs, as a
// platform that installs them would) and writes an admin kubeconfig for each.
func (b *bench) startMembers() ([]*member, error) {
	var members []*member
	t0 := time.Now()
	for i := 0; i < 2*b.fleetK; i++ {
		cp, err := framework.StartControlPlane()
		if err != nil {
			return members, fmt.Errorf("starting control plane %d of the fleet: %w", i+1, err)
		}
		m := &member{name: fmt.Sprintf("cluster-%02d", i+1), cp: cp}
		members = append(members, m)
		m.kubeconfig = filepath.Join(b.logDir, m.name+".kubeconfig")
		if _, err := cp.WriteAdminKubeconfig("bench-admin", m.kubeconfig); err != nil {
			return members, err
		}
	}
	b.logf("  started %d control planes in %s", len(members), time.Since(t0).Round(time.Second))
	return members, nil
}

// ensureNamespace creates namespace ns on the benchmark's control plane if
// it does not exist.
func (b *bench) ensureNamespace(ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// clusterStatuses lists the ClusterGCStatuses on the host.
func (b *bench) clusterStatuses() (*unstructured.UnstructuredList, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.dyn.Resource(clusterGCStatuses).Namespace(fleetNamespace).List(ctx, metav1.ListOptions{})
}

func conditionTrue(obj unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			return m["status"] == string(metav1.ConditionTrue)
		}
	}
	return false
}

// fleetCascades runs the wide cascade (b.fleetN dependents) in every member
// at once: it creates the objects, waits for the collectors to calm down,
// deletes every member's owner at the same moment and waits until every
// dependent is gone.
func (b *bench) fleetCascades(members []*member, procs []*proc, c string) (*fleetCascade, error) {
	type run struct {
		ns    string
		owner *corev1.Secret
		tr    *tracker
		t0    time.Time
		met   time.Time
		err   error
	}
	runs := make([]*run, len(members))
	defer func() {
		for _, r := range runs {
			if r != nil && r.tr != nil {
				r.tr.stop()
			}
		}
	}()
	t0 := time.Now()
	for i, m := range members {
		r := &run{}
		runs[i] = r
		cs := m.cp.Clientset
		var deps []*corev1.ConfigMap
		var err error
		if r.ns, r.owner, deps, err = wideSetupOn(cs, "fleet", b.fleetN); err != nil {
			return nil, err
		}
		if r.tr, err = trackOn(cs, r.ns, wideExpectation(deps, false)); err != nil {
			return nil, err
		}
	}
	b.logf("  %s: created %d dependents of one owner in each of %d clusters in %s", c, b.fleetN, len(members), time.Since(t0).Round(time.Millisecond))
	time.Sleep(settle)
	for _, p := range procs {
		b.waitQuiet(p)
	}
	alive := func() error {
		for _, p := range procs {
			if err := p.Alive(); err != nil {
				return err
			}
		}
		return nil
	}
	res := &fleetCascade{}
	var err error
	if res.rssBefore, err = sumRSS(procs); err != nil {
		return nil, err
	}
	sampler := sampleRSS(procs...)
	timeout := 2*time.Minute + time.Duration(float64(4*b.fleetN)/fleetRate.qps*float64(time.Second))
	bg := metav1.DeletePropagationBackground
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, m := range members {
		r := runs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r.t0 = time.Now()
			r.err = m.cp.Clientset.CoreV1().Secrets(r.ns).Delete(ctx, r.owner.Name, metav1.DeleteOptions{
				PropagationPolicy: &bg, Preconditions: metav1.NewUIDPreconditions(string(r.owner.UID))})
			if r.err != nil {
				r.err = fmt.Errorf("deleting the owner in %s: %w", m.name, r.err)
				return
			}
			r.met, r.err = r.tr.wait(timeout, alive, func(s string) { b.logf("    %s, %s: %s", c, m.name, s) })
		}()
	}
	first := time.Now()
	close(start)
	wg.Wait()
	res.rssPeak = sampler.finish()
	var errs []error
	for i, r := range runs {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		res.walls = append(res.walls, r.met.Sub(r.t0))
		res.all = max(res.all, r.met.Sub(first))
		if err := r.tr.finalViolations(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", members[i].name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b.logf("  %s: %d cascades at once done in %s (slowest cluster %.1f deletes/s at QPS %g each); resident memory %.1f MiB before, peak %.1f MiB (%d processes)",
		c, len(members), res.all.Round(time.Millisecond), res.slowest(b.fleetN), fleetRate.qps, mib(res.rssBefore), mib(res.rssPeak), len(procs))
	return res, nil
}
