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
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// stormResult is the engagement storm: the fleet process started with the
// kubeconfig Secrets of every member present, against the same process
// started with one member's.
type stormResult struct {
	members int
	// storm and alone are from the process's start until every member's
	// ClusterGCStatus says Ready: with every member's Secret present, and
	// with one member's.
	storm, alone time.Duration
	// stormCPU and aloneCPU are the fleet process's CPU seconds over them,
	// stormBusy and aloneBusy how busy the machine's CPUs were meanwhile
	// (every process: the members' API servers and etcds share them), a
	// fraction of all its cores.
	stormCPU, aloneCPU, stormBusy, aloneBusy float64
	// stormPlanes and alonePlanes are the control planes' CPU seconds over
	// them (every kube-apiserver and etcd: the host's and the members'),
	// planesAtRest the control planes' CPU at rest before the storm, in
	// cores.
	stormPlanes, alonePlanes, planesAtRest float64
	// streaming is the members' list-streaming time (listStreaming), all
	// of them at once, measured before the storm with no collector running;
	// streamingPlanes the control planes' CPU seconds over it, less their
	// use at rest, and streamingClient the listing client's (this
	// process's).
	streaming                        time.Duration
	streamingPlanes, streamingClient float64
	// peak is the process's peak resident memory (VmHWM) once every member
	// was Ready and the process quiet, steady its resident memory at rest
	// after that.
	peak, steady int64
}

// engagementStorm measures the storm and the lone member, the fleet
// process started with args each time (without --shard: a replica that
// restarts under the same name waits for its heartbeat Lease, which would
// be most of what is measured). Every member's Secret is present when it
// is called; it leaves only the first one's.
func (b *bench) engagementStorm(token string, members []*member, args []string) (stormResult, error) {
	res := stormResult{members: len(members)}
	b.waitQuiet(nil)
	c0, t0 := controlPlanesCPU(), time.Now()
	time.Sleep(5 * time.Second)
	res.planesAtRest = (controlPlanesCPU() - c0) / time.Since(t0).Seconds()
	roles0 := b.planesCPUByRole()
	streaming, planes, client, err := listStreaming(members)
	if err != nil {
		return res, fmt.Errorf("the members' list-streaming time: %w", err)
	}
	b.logf("  the control planes' CPU during the list-streaming time: %s", mostFirst(cpuSince(roles0, b.planesCPUByRole()), itself, 1, "%s %.2f s"))
	res.streaming, res.streamingClient = streaming, client
	res.streamingPlanes = planes - res.planesAtRest*streaming.Seconds()
	b.logf("  the initial lists of %d members at once, streamed by a plain client: %s (the control planes' CPU %.2f s beyond rest, the client's %.2f s)",
		len(members), res.streaming.Round(time.Millisecond), res.streamingPlanes, res.streamingClient)
	b.waitQuiet(nil)
	host0, members0, err := b.stormRequests(members)
	if err != nil {
		return res, err
	}
	p, st, err := b.startFleetUntilReady(token, len(members), args)
	if err != nil {
		return res, fmt.Errorf("the storm: %w", err)
	}
	host1, members1, err := b.stormRequests(members)
	if err != nil {
		p.stop()
		return res, err
	}
	b.logf("  the storm's requests (but watches, which the API server counts once they end) to the host, the benchmark's own included (its DELETECOLLECTION of the statuses, and its watch of them): %s; to each member, on average: %s",
		host1.minus(host0).perObject(1), members1.minus(members0).perObject(len(members)))
	d := st.took
	res.storm, res.stormCPU, res.stormBusy, res.stormPlanes = st.took, st.cpu, st.busy, st.planes
	b.waitQuiet(p)
	res.peak, err = p.peakRSS()
	if err == nil {
		time.Sleep(idleSettle)
		res.steady, err = steadyRSS(p)
	}
	p.stop()
	if err != nil {
		return res, err
	}
	b.logf("  the fleet process started with %d members' Secrets present: every one Ready in %s (its CPU %.2f s, the control planes' %.2f s (%.2f cores at rest before), the machine's CPUs %.0f%% busy); peak resident %.1f MiB, %.1f MiB at rest after",
		len(members), d.Round(time.Millisecond), res.stormCPU, res.stormPlanes, res.planesAtRest, 100*res.stormBusy, mib(res.peak), mib(res.steady))
	b.logf("  the control planes' CPU during the storm: %s", mostFirst(st.byRole, itself, 1, "%s %.2f s"))
	for _, m := range members[1:] {
		if err := b.cs.CoreV1().Secrets(fleetNamespace).Delete(context.Background(), m.name, metav1.DeleteOptions{}); err != nil {
			return res, fmt.Errorf("removing member %s from the fleet: %w", m.name, err)
		}
	}
	p, st, err = b.startFleetUntilReady(token, 1, args)
	if err != nil {
		return res, fmt.Errorf("one member alone: %w", err)
	}
	p.stop()
	res.alone, res.aloneCPU, res.aloneBusy, res.alonePlanes = st.took, st.cpu, st.busy, st.planes
	b.logf("  the fleet process started with one member's Secret: Ready in %s (its CPU %.2f s, the control planes' %.2f s, the machine's CPUs %.0f%% busy)",
		st.took.Round(time.Millisecond), res.aloneCPU, res.alonePlanes, 100*res.aloneBusy)
	return res, nil
}

// startFleetUntilReady starts the fleet process once the ClusterGCStatuses
// an earlier one left are gone, and waits until n members are Ready: it
// returns the process and the time from its start.
func (b *bench) startFleetUntilReady(token string, n int, args []string) (*proc, startup, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.dyn.Resource(clusterGCStatuses).Namespace(fleetNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return nil, startup{}, fmt.Errorf("removing the ClusterGCStatuses of the last process: %w", err)
	}
	if err := pollUntil(time.Minute, func() error { return nil }, b.statusesLeft(0)); err != nil {
		return nil, startup{}, err
	}
	t0 := time.Now()
	m0, _ := machineCPU()
	planes0, roles0 := controlPlanesCPU(), b.planesCPUByRole()
	p, err := b.startOwnergcWithMetrics(b.kubeconfig, fleetRate, fmt.Sprintf("fleet-start-%d", n), token, args...)
	if err != nil {
		return nil, startup{}, err
	}
	ready, err := b.watchMembersReady(3*time.Minute, p.Alive, n)
	if err != nil {
		p.stop()
		return nil, startup{}, err
	}
	st := startup{took: ready.Sub(t0), planes: controlPlanesCPU() - planes0, byRole: cpuSince(roles0, b.planesCPUByRole())}
	if m1, err := machineCPU(); err == nil && m0 > 0 {
		st.busy = (m1 - m0) / st.took.Seconds() / float64(runtime.NumCPU())
	}
	if _, _, cpu, err := procStat(p.Pid()); err == nil {
		st.cpu = cpu
	}
	return p, st, nil
}

// watchMembersReady watches the host's ClusterGCStatuses until n of them
// say Ready, and returns when the event that made them n arrived: a watch,
// so that engagements (the storm, the lone member, the fleet workload's
// steps) are timed to their last status write and not to a poll's next
// tick, and so that the host serves no LIST of the statuses meanwhile.
// alive is asked every 100 ms.
func (b *bench) watchMembersReady(timeout time.Duration, alive func() error, n int) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	statuses := b.dyn.Resource(clusterGCStatuses).Namespace(fleetNamespace)
	ready := map[string]bool{}
	count := func() int {
		k := 0
		for _, r := range ready {
			if r {
				k++
			}
		}
		return k
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := statuses.List(ctx, metav1.ListOptions{})
		if err != nil {
			return time.Time{}, fmt.Errorf("listing the ClusterGCStatuses: %w", err)
		}
		clear(ready)
		for _, item := range list.Items {
			ready[item.GetName()] = conditionTrue(item, "Ready")
		}
		if count() == n {
			return time.Now(), nil
		}
		w, err := statuses.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			return time.Time{}, fmt.Errorf("watching the ClusterGCStatuses: %w", err)
		}
	events:
		for {
			select {
			case <-ctx.Done():
				w.Stop()
				return time.Time{}, fmt.Errorf("not done after %s: %d of %d clusters Ready", timeout, count(), n)
			case <-tick.C:
				if err := alive(); err != nil {
					w.Stop()
					return time.Time{}, err
				}
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events // listed and watched again
				}
				obj, isObj := ev.Object.(*unstructured.Unstructured)
				switch {
				case !isObj || ev.Type == watch.Error:
					w.Stop()
					break events // listed and watched again
				case ev.Type == watch.Deleted:
					delete(ready, obj.GetName())
				default:
					ready[obj.GetName()] = conditionTrue(*obj, "Ready")
				}
				if count() == n {
					w.Stop()
					return time.Now(), nil
				}
			}
		}
	}
}

// startup is a fleet process's start until its members are Ready: how long
// it took, the process's CPU seconds, how busy the machine's CPUs were (a
// fraction of all cores) and the control planes' CPU seconds.
type startup struct {
	took              time.Duration
	cpu, busy, planes float64
	// byRole is the control planes' CPU seconds by role (planesCPUByRole).
	byRole map[string]float64
}

// stormAlone is the engagement storm without the rest of the fleet
// workload (-only storm), for iterating on it, -storms times: its figures
// are logged, not tabled.
func (b *bench) stormAlone() {
	b.logf("Workload storm: the fleet workload's engagement storm alone, %d control planes", 2*b.fleetK)
	if err := b.stormRun(); err != nil {
		b.logf("  FAILED: %v", err)
	}
}

func (b *bench) stormRun() error {
	members, err := b.startMembers()
	defer func() {
		for _, m := range members {
			m.cp.Stop()
		}
	}()
	if err != nil {
		return err
	}
	// In the fleet workload the storm comes some ten minutes after the
	// members started: their CRDs and APIServices were published long
	// before, which is what an engine that starts asks no rediscovery for
	// (within five minutes of their creation it rediscovers, with
	// follow-ups).
	aged := time.Now().Add(6 * time.Minute)
	if err := b.ensureNamespace(fleetNamespace); err != nil {
		return err
	}
	token, err := metricsReaderToken(b.cs, fleetNamespace)
	if err != nil {
		return err
	}
	if err := b.putSecrets(members); err != nil {
		return err
	}
	// As in the fleet workload, the members were engaged once before the
	// storm: their API servers answer lists they were asked before faster
	// than fresh ones do.
	args := []string{"--cluster-source=kubeconfig-secrets", "--cluster-namespace=" + fleetNamespace}
	p, _, err := b.startFleetUntilReady(token, len(members), args)
	if err != nil {
		return fmt.Errorf("engaging the members once before the storm: %w", err)
	}
	p.stop()
	b.logf("  waiting until the members are six minutes old, as in the fleet workload")
	time.Sleep(max(idleSettle, time.Until(aged)))
	storms, err := b.engagementStorms(token, members, args, b.storms)
	if err != nil {
		return err
	}
	b.logf("  the storm ÷ its allowance over %d storms: median %.2f, from %.2f to %.2f", len(storms), storms[len(storms)/2].ratio(), storms[0].ratio(), storms[len(storms)-1].ratio())
	return nil
}

// engagementStorms measures n engagement storms (engagementStorm), every
// member's Secret present again before each, and returns them by their
// ratio to the target's allowance: the storm's figure varies from one storm
// to the next more than most changes move it (the members' API servers
// share the machine's cores with the process, and do their own work beside
// it).
func (b *bench) engagementStorms(token string, members []*member, args []string, n int) ([]stormResult, error) {
	var storms []stormResult
	for i := range n {
		if i > 0 {
			if err := b.putSecrets(members[1:]); err != nil {
				return nil, err
			}
		}
		s, err := b.engagementStorm(token, members, args)
		if err != nil {
			return nil, err
		}
		storms = append(storms, s)
		b.logf("  storm %d of %d: the storm %.2f s, one member alone %.2f s, the list-streaming time %.2f s: the storm ÷ (1.5 × alone + streaming) = %.2f (target ≤ 1)",
			i+1, n, s.storm.Seconds(), s.alone.Seconds(), s.streaming.Seconds(), s.ratio())
	}
	slices.SortFunc(storms, func(a, b stormResult) int { return cmp.Compare(a.ratio(), b.ratio()) })
	return storms, nil
}

// ratio is the storm ÷ the target's allowance, 1.5 times one member alone
// plus the members' list-streaming time.
func (s *stormResult) ratio() float64 {
	return s.storm.Seconds() / (1.5*s.alone.Seconds() + s.streaming.Seconds())
}

// putSecrets creates the kubeconfig Secrets of members in the fleet's
// namespace, where a fleet process engages their clusters.
func (b *bench) putSecrets(members []*member) error {
	for _, m := range members {
		if _, err := m.cp.CreateKubeconfigSecret(b.cp, fleetNamespace, m.name); err != nil {
			return fmt.Errorf("adding member %s to the fleet: %w", m.name, err)
		}
	}
	return nil
}

// stormRequests reads apiserver_request_total of the host and the sum over
// the members.
func (b *bench) stormRequests(members []*member) (host, all requests, err error) {
	if host, err = b.scrape(); err != nil {
		return nil, nil, err
	}
	all = requests{}
	for _, m := range members {
		r, err := scrapeOf(m.cp.Clientset)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range r {
			all[k] += v
		}
	}
	return host, all, nil
}
