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
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/test/framework"
)

// The fleet profile (go run ./test/bench -fleet-profile=10,20): where an
// idle member of the fleet mode costs what it costs (docs/architecture.md,
// "What an idle member costs"). It is no workload of `make bench`: it runs
// the fleet manager in this process (framework.StartFleetManager, wired as
// main.go wires --cluster-source=kubeconfig-secrets) against a host control
// plane and member control planes that audit every request, engages idle
// members in steps (none, then each size of -fleet-profile) and, at each
// step, once the members are Ready and a settling time has passed,
// measures over an idle window: this process's CPU time (and a CPU
// profile), and the requests the fleet sends to the host and to the members
// (their audit logs, by the fleet's own users); then, after two garbage
// collections, resident memory, the Go runtime's memory, and goroutine and
// heap profiles. The profiles are written to the output directory
// (goroutines-<n>.txt, heap-<n>.txt and, from the window's start,
// allocs-<n>-start.txt in the runtime's text formats; heap-<n>.pb.gz,
// allocs-<n>.pb.gz and cpu-<n>.pb.gz for go tool pprof; cpu-engage-<n>.pb.gz
// is the CPU profile of the step's engagement, which the log sets beside
// how busy the machine's CPUs were meanwhile) with the
// measurements (points.json), and the goroutines, bytes and CPU time are
// broken down by what creates them (origins.go) into breakdown.md;
// -fleet-profile-analyze <dir> breaks down the profiles of an earlier run
// again.

// fleetProfileFlags are the flags of the fleet profile.
type fleetProfileFlags struct {
	sizes   string
	dir     string
	analyze string
	shard   bool
	settle  time.Duration
	window  time.Duration
	memRate int
}

func registerFleetProfileFlags() *fleetProfileFlags {
	f := &fleetProfileFlags{}
	flag.StringVar(&f.sizes, "fleet-profile", "", "instead of the workloads: profile the fleet mode idle with these numbers of engaged members, comma-separated and increasing (e.g. 10,20; a step with none is always measured first); see test/bench/fleetprofile.go")
	flag.StringVar(&f.dir, "fleet-profile-dir", "", "with -fleet-profile: write the profiles and the breakdown here (default: a new temporary directory, kept)")
	flag.StringVar(&f.analyze, "fleet-profile-analyze", "", "instead of the workloads: break down again the profiles an earlier -fleet-profile run wrote to this directory")
	flag.BoolVar(&f.shard, "fleet-profile-shard", true, "with -fleet-profile: run the fleet with --shard (the replica's heartbeat and the engines' claims on the host), as a single replica")
	flag.DurationVar(&f.settle, "fleet-profile-settle", 30*time.Second, "with -fleet-profile: wait this long after the members are Ready before the idle window")
	flag.DurationVar(&f.window, "fleet-profile-window", 2*time.Minute, "with -fleet-profile: the idle window over which CPU and requests are measured")
	flag.IntVar(&f.memRate, "fleet-profile-memrate", 4096, "with -fleet-profile: runtime.MemProfileRate (bytes per heap profile sample)")
	return f
}

// fleetProfileUser is the host identity of the profiled fleet, so that its
// requests can be told apart in the host's audit log.
const fleetProfileUser = "ownergc-fleet-profile"

// profilePoint is what the fleet profile measured with some members
// engaged.
type profilePoint struct {
	Members int
	// EngagedIn is the time from the Secrets' creation to every member
	// Ready.
	EngagedIn time.Duration
	// RSS is this process's resident memory; Heap the Go heap's in-use
	// spans, Stacks the goroutine stacks, Sys all the Go runtime holds.
	RSS, HeapInuse, HeapAlloc, Stacks, Sys int64
	Goroutines                             int
	// CPU is this process's CPU seconds over the idle window.
	CPU    float64
	Window time.Duration
	// HostWrites and HostReads are the fleet's requests to the host over
	// the window, by verb and resource; MemberRequests its requests to the
	// members over the window, summed over members (auditCounts).
	HostWrites, HostReads map[string]int
	MemberRequests        map[string]float64
	// MemberWatches is the number of watches one member's API server
	// serves, to every client (its own included).
	MemberWatches float64
}

func runFleetProfile(f *fleetProfileFlags) error {
	if f.analyze != "" {
		return analyzeProfiles(f.analyze, os.Stdout)
	}
	var sizes []int
	for _, s := range strings.Split(f.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			return fmt.Errorf("-fleet-profile=%s: want increasing positive numbers of members", f.sizes)
		}
		sizes = append(sizes, n)
	}
	runtime.MemProfileRate = f.memRate
	dir := f.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "ownergc-fleet-profile-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	began := time.Now()
	logf := func(format string, args ...any) {
		d := time.Since(began).Round(time.Second)
		fmt.Printf("[%02d:%02d] %s\n", int(d.Minutes()), int(d.Seconds())%60, fmt.Sprintf(format, args...))
	}
	// Interrupted, it stops what it started; so it does when its output is
	// a pipe closed early (head): then a write fails instead of killing it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGPIPE)
	logf("Fleet profile: %v members, shard %v, settle %s, idle window %s; profiles in %s", sizes, f.shard, f.settle, f.window, dir)

	host, err := framework.StartControlPlaneRecordingRequests()
	if err != nil {
		return err
	}
	defer host.Stop()
	var members []*framework.ControlPlane
	defer func() {
		for _, m := range members {
			m.Stop()
		}
	}()
	t0 := time.Now()
	for i := 0; i < sizes[len(sizes)-1]; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cp, err := framework.StartControlPlaneRecordingRequests()
		if err != nil {
			return fmt.Errorf("starting member control plane %d: %w", i+1, err)
		}
		members = append(members, cp)
	}
	logf("Started the host and %d member control planes in %s", len(members), time.Since(t0).Round(time.Second))
	// The members' kubeconfigs (a user and its certificate each) are made
	// before the first step, so that no step counts them.
	kubeconfigs := make([][]byte, len(members))
	for i, m := range members {
		if kubeconfigs[i], err = m.AdminKubeconfig(); err != nil {
			return err
		}
	}

	if _, err := host.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	user, err := host.Env.AddUser(envtest.User{Name: fleetProfileUser, Groups: []string{"system:masters"}}, host.Config)
	if err != nil {
		return err
	}
	fm, err := framework.StartFleetManager(user.Config(), framework.FleetOptions{
		Namespace: fleetNamespace, Shard: f.shard, ReplicaID: "profile-0",
		// The manager's default, not the test framework's.
		DormantCheck: fleet.DefaultDormantCheck,
	})
	if err != nil {
		return err
	}
	defer fm.Stop()

	var points []*profilePoint
	engaged := 0
	for _, n := range append([]int{0}, sizes...) {
		p := &profilePoint{Members: n}
		if n > engaged {
			before, err := fleetAuditCounts(host, members[engaged:n])
			if err != nil {
				return err
			}
			t := time.Now()
			m0, _ := machineCPU()
			_, _, c0, _ := procStat(os.Getpid())
			engageProfile, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-engage-%d.pb.gz", n)))
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(engageProfile); err != nil {
				_ = engageProfile.Close()
				return err
			}
			for i := engaged; i < n; i++ {
				if _, err := framework.CreateKubeconfigSecretWith(host, fleetNamespace, memberName(i), kubeconfigs[i]); err != nil {
					return err
				}
			}
			if err := waitMembersReady(ctx, fm, n, 5*time.Minute); err != nil {
				return err
			}
			p.EngagedIn = time.Since(t)
			pprof.StopCPUProfile()
			if err := engageProfile.Close(); err != nil {
				return err
			}
			m1, _ := machineCPU()
			_, _, c1, _ := procStat(os.Getpid())
			logf("Engaged members %d to %d: all %d Ready in %s; meanwhile this process (the fleet, in process) used %.2f CPU seconds, and the machine's %d CPUs were %.0f%% busy (the members' API servers and etcds included)",
				engaged+1, n, n, p.EngagedIn.Round(time.Millisecond), c1-c0, runtime.NumCPU(), 100*(m1-m0)/p.EngagedIn.Seconds()/float64(runtime.NumCPU()))
			after, err := fleetAuditCounts(host, members[engaged:n])
			if err != nil {
				return err
			}
			d := after.since(before)
			logf("The engagement's requests to the host: %s; to each engaged member, on average: %s",
				inAll(d.host, 1), inAll(d.members, n-engaged))
			engaged = n
		}
		if err := sleep(ctx, f.settle); err != nil {
			return err
		}
		if err := measureIdle(ctx, p, f.window, dir, host, members[:n]); err != nil {
			return err
		}
		logf("%d members: %d goroutines, %.1f MiB resident, heap in use %.1f MiB, stacks %.1f MiB; CPU %.1f millicores; host writes %.2f/s; member requests %s",
			n, p.Goroutines, mib(p.RSS), mib(p.HeapInuse), mib(p.Stacks), 1000*p.CPU/p.Window.Seconds(),
			float64(sumCounts(p.HostWrites))/p.Window.Seconds(), perSecond(p.MemberRequests, p.Window))
		points = append(points, p)
	}
	if err := writePoints(dir, points); err != nil {
		return err
	}
	logf("Breakdown (also in %s/breakdown.md):", dir)
	out, err := os.Create(filepath.Join(dir, "breakdown.md"))
	if err != nil {
		return err
	}
	defer out.Close()
	if err := analyzeProfiles(dir, out); err != nil {
		return err
	}
	return analyzeProfiles(dir, os.Stdout)
}

func memberName(i int) string { return fmt.Sprintf("member-%02d", i+1) }

// waitMembersReady waits until the first n members' engines run with their
// graph synced.
func waitMembersReady(ctx context.Context, fm *framework.FleetManager, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready := 0
		for i := 0; i < n; i++ {
			if st, ok := fm.Fleet.State(memberName(i)); ok && st.Engine != nil && st.Engine.GraphSyncedCheck(nil) == nil {
				ready++
			}
		}
		if ready == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d members Ready after %s", ready, n, timeout)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep sleeps for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// measureIdle measures p over an idle window, then takes the profiles.
func measureIdle(ctx context.Context, p *profilePoint, window time.Duration, dir string, host *framework.ControlPlane, members []*framework.ControlPlane) error {
	tag := strconv.Itoa(p.Members)
	before, err := fleetAuditCounts(host, members)
	if err != nil {
		return err
	}
	// The window's allocations are the heap profile's at its end minus
	// these (the profile counts as of the latest collection).
	runtime.GC()
	runtime.GC()
	if err := writeProfile("allocs", filepath.Join(dir, "allocs-"+tag+"-start.txt"), 1); err != nil {
		return err
	}
	cpuFile, err := os.Create(filepath.Join(dir, "cpu-"+tag+".pb.gz"))
	if err != nil {
		return err
	}
	defer cpuFile.Close()
	_, _, cpu0, err := procStat(os.Getpid())
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := pprof.StartCPUProfile(cpuFile); err != nil {
		return err
	}
	err = sleep(ctx, window)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	_, _, cpu1, err := procStat(os.Getpid())
	if err != nil {
		return err
	}
	p.Window, p.CPU = time.Since(t0), cpu1-cpu0
	after, err := fleetAuditCounts(host, members)
	if err != nil {
		return err
	}
	d := after.since(before)
	p.HostWrites, p.HostReads = map[string]int{}, map[string]int{}
	for k, v := range d.host {
		if isWrite(k) {
			p.HostWrites[k] = v
		} else {
			p.HostReads[k] = v
		}
	}
	p.MemberRequests = map[string]float64{}
	for k, v := range d.members {
		p.MemberRequests[k] = float64(v)
	}
	if len(members) > 0 {
		if p.MemberWatches, err = openWatches(members[0].Clientset); err != nil {
			return err
		}
	}

	// What is live: after two collections the heap profile is current.
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.HeapInuse, p.HeapAlloc, p.Stacks, p.Sys = int64(ms.HeapInuse), int64(ms.HeapAlloc), int64(ms.StackInuse), int64(ms.Sys-ms.HeapReleased)
	p.Goroutines = runtime.NumGoroutine()
	if p.RSS, err = selfRSS(); err != nil {
		return err
	}
	for _, w := range []struct {
		name, file string
		format     int
	}{
		{"goroutine", "goroutines-" + tag + ".txt", 2},
		{"heap", "heap-" + tag + ".txt", 1},
		{"heap", "heap-" + tag + ".pb.gz", 0},
		{"allocs", "allocs-" + tag + ".pb.gz", 0},
	} {
		if err := writeProfile(w.name, filepath.Join(dir, w.file), w.format); err != nil {
			return err
		}
	}
	return nil
}

// fleetMemberUser is the user of the kubeconfig Secrets the framework
// writes (ControlPlane.AdminKubeconfig).
const fleetMemberUser = "ownergc-fleet"

// auditCounts counts the requests user made of cp so far, by verb and
// resource ("GET /path" for a request to no resource), from its audit log: a
// watch when it starts, any other request when it completes.
func auditCounts(cp *framework.ControlPlane, user string) (map[string]int, error) {
	reqs, err := cp.Requests(user)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, r := range reqs {
		if (r.Verb == "watch") != (r.Stage == "ResponseStarted") {
			continue
		}
		k := strings.ToUpper(r.Verb) + " "
		switch {
		case r.ObjectRef.Resource == "":
			path, _, _ := strings.Cut(r.RequestURI, "?")
			k += path
		case r.ObjectRef.Subresource != "":
			k += r.ObjectRef.Resource + "/" + r.ObjectRef.Subresource
		default:
			k += r.ObjectRef.Resource
		}
		out[k]++
	}
	return out, nil
}

// fleetCounts is what the fleet's user asked of the host and, summed,
// of some members (auditCounts).
type fleetCounts struct {
	host, members map[string]int
}

// fleetAuditCounts counts the fleet's requests to host and members so far.
func fleetAuditCounts(host *framework.ControlPlane, members []*framework.ControlPlane) (fleetCounts, error) {
	c := fleetCounts{members: map[string]int{}}
	var err error
	if c.host, err = auditCounts(host, fleetProfileUser); err != nil {
		return c, err
	}
	for _, m := range members {
		mc, err := auditCounts(m, fleetMemberUser)
		if err != nil {
			return c, err
		}
		for k, v := range mc {
			c.members[k] += v
		}
	}
	return c, nil
}

// since is what was counted after earlier: the requests made since (an
// audit log only grows).
func (c fleetCounts) since(earlier fleetCounts) fleetCounts {
	return fleetCounts{host: countsSince(c.host, earlier.host), members: countsSince(c.members, earlier.members)}
}

// isWrite reports whether a key of auditCounts is a write.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "CREATE", "UPDATE", "PATCH", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

func writeProfile(name, path string, format int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, format); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func selfRSS() (int64, error) { return procStatusBytes("/proc/self/status", "VmRSS") }

// openWatches is the number of watches the API server of cs serves.
func openWatches(cs kubernetes.Interface) (float64, error) {
	families, err := metricsOf(cs)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, m := range families["apiserver_longrunning_requests"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "verb" && l.GetValue() == "WATCH" {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return n, nil
}

// perSecond formats counts over window per second, largest first.
func perSecond[V int | float64](counts map[string]V, window time.Duration) string {
	return mostFirst(counts, itself, window.Seconds(), "%s %.3f/s")
}

// inAll formats counts divided by per, their sum first, then each largest
// first.
func inAll(counts map[string]int, per int) string {
	if len(counts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f in all, ", float64(sumCounts(counts))/float64(per)) +
		mostFirst(counts, itself, float64(per), "%s %.1f")
}

// itself names a key that is its own name (mostFirst).
func itself(k string) string { return k }

// mostFirst formats each count divided by div with format (a %s for its
// key's name, a float verb for the count), largest first ("none" when
// there is none).
func mostFirst[K comparable, V int | float64](counts map[K]V, name func(K) string, div float64, format string) string {
	keys := make([]K, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return name(keys[i]) < name(keys[j])
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf(format, name(k), float64(counts[k])/div))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
