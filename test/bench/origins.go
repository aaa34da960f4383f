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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// goroutine is one goroutine of a goroutine profile (debug=2: every
// goroutine's stack, and who created it).
type goroutine struct {
	id     int
	state  string
	frames []string // functions, innermost first
	// creator is the function that started it, parent the goroutine that
	// did (0 when not known).
	creator string
	parent  int
}

var (
	goroutineHeader = regexp.MustCompile(`^goroutine (\d+)(?: [^\[]*)?\[([^\]]*)\]`)
	createdBy       = regexp.MustCompile(`^created by (\S+)(?: in goroutine (\d+))?`)
)

// parseGoroutines reads a goroutine profile written with debug=2.
func parseGoroutines(r io.Reader) ([]*goroutine, error) {
	var out []*goroutine
	var g *goroutine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			g = nil
		case strings.HasPrefix(line, "goroutine "):
			m := goroutineHeader.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			id, _ := strconv.Atoi(m[1])
			g = &goroutine{id: id, state: m[2]}
			out = append(out, g)
		case g == nil || strings.HasPrefix(line, "\t"):
		case strings.HasPrefix(line, "created by "):
			if m := createdBy.FindStringSubmatch(line); m != nil {
				g.creator = m[1]
				g.parent, _ = strconv.Atoi(m[2])
			}
		default:
			g.frames = append(g.frames, funcName(line))
		}
	}
	return out, sc.Err()
}

// funcName is the function of a stack line "pkg.F(args...)".
func funcName(line string) string {
	if i := strings.LastIndex(line, "("); i > 0 && strings.HasSuffix(line, ")") {
		// "pkg.(*T).F(0x1, ...)": the last "(" opens the arguments.
		return line[:i]
	}
	return line
}

// heapRecord is one record of a heap profile written with debug=1: bytes
// and objects in use and allocated since the start, sampled.
type heapRecord struct {
	inuseObjects, inuseBytes, allocObjects, allocBytes int64
	frames                                             []string // innermost first
}

// heapProfile is a heap profile written with debug=1.
type heapProfile struct {
	// rate is the sampling rate (runtime.MemProfileRate).
	rate    int64
	records []*heapRecord
}

var (
	heapHeader = regexp.MustCompile(`^heap profile: \d+: \d+ \[\d+: \d+\] @ heap/(\d+)`)
	heapLine   = regexp.MustCompile(`^(\d+): (\d+) \[(\d+): (\d+)\] @`)
	heapFrame  = regexp.MustCompile(`^#\s+0x[0-9a-f]+\s+(\S+)\+0x[0-9a-f]+`)
)

// parseHeap reads a heap (or allocs) profile written with debug=1.
func parseHeap(r io.Reader) (*heapProfile, error) {
	p := &heapProfile{}
	var rec *heapRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := heapHeader.FindStringSubmatch(line); m != nil {
			rate, _ := strconv.ParseInt(m[1], 10, 64)
			p.rate = rate / 2 // the runtime writes twice MemProfileRate
			continue
		}
		if m := heapLine.FindStringSubmatch(line); m != nil {
			n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
			rec = &heapRecord{inuseObjects: n(1), inuseBytes: n(2), allocObjects: n(3), allocBytes: n(4)}
			p.records = append(p.records, rec)
			continue
		}
		if rec != nil {
			if m := heapFrame.FindStringSubmatch(line); m != nil {
				rec.frames = append(rec.frames, m[1])
				continue
			}
		}
		if strings.HasPrefix(line, "# runtime.MemStats") {
			break
		}
		rec = nil
	}
	return p, sc.Err()
}

// scaled returns an estimate of the bytes a sampled count stands for, as
// go tool pprof does (scaleHeapSample).
func (p *heapProfile) scaled(objects, bytes int64) float64 {
	if objects == 0 || bytes == 0 {
		return 0
	}
	if p.rate <= 1 {
		return float64(bytes)
	}
	avg := float64(bytes) / float64(objects)
	return float64(bytes) / (1 - math.Exp(-avg/float64(p.rate)))
}

func readGoroutines(path string) ([]*goroutine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseGoroutines(f)
}

func readHeap(path string) (*heapProfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseHeap(f)
}

// writePoints writes the measurements to dir/points.json.
func writePoints(dir string, points []*profilePoint) error {
	data, err := json.MarshalIndent(points, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "points.json"), data, 0o644)
}

func readPoints(dir string) ([]*profilePoint, error) {
	data, err := os.ReadFile(filepath.Join(dir, "points.json"))
	if err != nil {
		return nil, err
	}
	var points []*profilePoint
	return points, json.Unmarshal(data, &points)
}

// rule names what a frame matching any of its patterns (substrings of the
// function's name) stands for.
type rule struct {
	name     string
	patterns []string
}

// A pattern that starts with "^" matches the start of a function's name.
func (r rule) matches(frame string) bool {
	for _, p := range r.patterns {
		if prefix, ok := strings.CutPrefix(p, "^"); ok {
			if strings.HasPrefix(frame, prefix) {
				return true
			}
		} else if strings.Contains(frame, p) {
			return true
		}
	}
	return false
}

// benchmarkItself matches the benchmark's own work: its measurements
// (scrapes, audit logs, profiles) and the control planes it starts. (Not
// the framework's wiring of the fleet manager, whose closures are on the
// stack of much of what the fleet does.)
var benchmarkItself = rule{"the benchmark and its control planes", []string{
	"^main.measureIdle", "^main.waitMembersReady", "prometheus/common/expfmt.", "runtime/pprof.",
	ownergcPkg + "test/framework.startWith", ownergcPkg + "test/framework.startAudited", ownergcPkg + "test/framework.NewEnvironment",
	ownergcPkg + "test/framework.CreateKubeconfigSecretWith", ownergcPkg + "test/framework.(*ControlPlane).AdminKubeconfig",
	"controller-runtime/pkg/internal/testing/", "controller-runtime/pkg/envtest.",
}}

// benchmarkRest is the rest of the benchmark's process: what none of the
// origins above matched and the benchmark started.
var benchmarkRest = rule{"the benchmark and its control planes", []string{"^main.", ownergcPkg + "test/"}}

// firstFrameMatch returns the rule that matches the first frame any rule
// matches (frames in order; among rules matching that frame, the first).
func firstFrameMatch(rules []rule, frames []string) (string, bool) {
	for _, f := range frames {
		for _, r := range rules {
			if r.matches(f) {
				return r.name, true
			}
		}
	}
	return "", false
}

// firstRuleMatch returns the first rule (in order) that matches any frame.
func firstRuleMatch(rules []rule, frames []string) (string, bool) {
	for _, r := range rules {
		for _, f := range frames {
			if r.matches(f) {
				return r.name, true
			}
		}
	}
	return "", false
}

const ownergcPkg = "github.com/ownergc/ownergc/"

// goroutineOwners say which part of the process a goroutine works for: the
// first frame of its lineage (its stack innermost first, its creator, then
// its parent's lineage) that one of these matches.
var goroutineOwners = []rule{
	{"monitors", []string{ownergcPkg + "internal/monitor."}},
	{"discovery triggers (CRD and APIService followers)", []string{ownergcPkg + "internal/discovery.(*Triggers)", ownergcPkg + "internal/discovery.(*follower)"}},
	{"discovery", []string{ownergcPkg + "internal/discovery."}},
	{"collector", []string{ownergcPkg + "internal/collector."}},
	{"expiry collector", []string{ownergcPkg + "internal/expiry."}},
	{"API-level collectors", []string{ownergcPkg + "internal/apigc."}},
	{"engine status and gauges", []string{ownergcPkg + "internal/engine."}},
	{"engine claims and the replica's heartbeat (fence)", []string{ownergcPkg + "internal/fleet.(*engineFence)"}},
	{"object bound (--max-objects-per-cluster)", []string{ownergcPkg + "internal/fleet.(*Fleet).bound"}},
	{"shard coordinator and peers", []string{ownergcPkg + "internal/fleet.(*coordinator)", "coordinator/sharded."}},
	{"kubeconfig provider's cluster (cache, client)", []string{"multicluster-runtime/providers/kubeconfig."}},
	{"controller-runtime controllers", []string{"controller-runtime/pkg/internal/controller.", "controller-runtime/pkg/source.", "controller-runtime/pkg/controller/priorityqueue."}},
	{"controller-runtime cache (informers)", []string{"controller-runtime/pkg/cache"}},
	{"event recorders", []string{"client-go/tools/record.", "client-go/tools/events.", "watch.(*Broadcaster)", "watch.NewBroadcaster", "watch.NewLongQueueBroadcaster"}},
	{"controller-runtime manager", []string{"controller-runtime/pkg/manager.", "controller-runtime/pkg/cluster."}},
	{"HTTP/2 connections", []string{"x/net/http2.(*ClientConn).readLoop", "x/net/http2.(*Transport).newClientConn"}},
	{"fleet", []string{ownergcPkg + "internal/fleet."}},
	benchmarkItself,
	benchmarkRest,
}

// goroutineKinds say what a goroutine does: the first of its own frames
// (innermost first) that one of these matches.
var goroutineKinds = []rule{
	{"HTTP/2 connection read loop", []string{"x/net/http2.(*ClientConn).readLoop"}},
	{"HTTP/2 stream writer (one per open request)", []string{"x/net/http2.(*clientStream).writeRequest", "x/net/http2.(*clientStream).doRequest"}},
	{"watch decoder (StreamWatcher)", []string{"watch.(*StreamWatcher).receive"}},
	{"watch filter", []string{"watch.(*filteredWatch).loop"}},
	{"monitor's list/watch loop (one per watched kind)", []string{"monitor.(*lister).run"}},
	{"monitor's list observer (while a list streams)", []string{"monitor.(*store).startListing"}},
	{"reflector resync timer", []string{"cache.(*Reflector).startResync"}},
	{"reflector list/watch loop", []string{"cache.handleAnyWatch", "cache.(*Reflector)."}},
	{"informer FIFO, processor and listeners", []string{"cache.(*processorListener)", "cache.(*sharedProcessor)", "cache.(*RealFIFO)", "cache.(*controller).RunWithContext"}},
	{"worker waiting for an item", []string{"workqueue.(*Typed[...]).Get", "priorityqueue.(*priorityqueue[...]).GetWithPriority"}},
	{"queue internals", []string{"workqueue.", "priorityqueue."}},
	{"Lease renewal", []string{"leaderelection.", "(*leaseGuard).renewLoop"}},
	{"event broadcaster", []string{"watch.(*Broadcaster).loop", "tools/record.", "tools/events."}},
	{"runnable group", []string{"manager.(*runnableGroup)"}},
	{"context propagation", []string{"context.(*cancelCtx).propagateCancel", "context.AfterFunc"}},
}

// goroutineScopes say whom a goroutine's lineage serves.
var goroutineScopes = []rule{
	{"member", []string{ownergcPkg + "internal/fleet.(*Fleet).Engage", "providers/kubeconfig.(*Provider).createAndEngageCluster", "coordinator/sharded.(*Coordinator).Engage", "coordinator/sharded.(*leaseGuard)"}},
}

// lineage is g's stack, its creator, then its parent's lineage, as far as
// the parents live.
func lineage(g *goroutine, byID map[int]*goroutine) []string {
	var out []string
	seen := map[int]bool{}
	for g != nil && !seen[g.id] {
		seen[g.id] = true
		out = append(out, g.frames...)
		if g.creator != "" {
			out = append(out, g.creator)
		}
		g = byID[g.parent]
	}
	return out
}

// origin is what a goroutine or bytes are counted under.
type origin struct{ owner, kind string }

func classifyGoroutine(g *goroutine, byID map[int]*goroutine) origin {
	lin := lineage(g, byID)
	owner, ok := firstFrameMatch(goroutineOwners, lin)
	if !ok {
		owner = "other"
	}
	kind, ok := firstFrameMatch(goroutineKinds, g.frames)
	if !ok {
		kind = shortFunc(topFrame(g.frames))
	}
	if _, member := firstRuleMatch(goroutineScopes, lin); !member && owner != "HTTP/2 connections" {
		if g.parent != 0 && byID[g.parent] == nil {
			owner += " (parent gone)"
		}
	}
	return origin{owner, kind}
}

// heapOrigins say what allocated bytes are for: the first rule (in order)
// that matches any frame of the allocation's stack.
var heapOrigins = []rule{
	benchmarkItself,
	{"REST mappers (controller-runtime's, filled from discovery)", []string{"k8s.io/client-go/restmapper.", "controller-runtime/pkg/client/apiutil.", "meta.(*DefaultRESTMapper)"}},
	{"HTTP/2 and TLS connections", []string{"x/net/http2.(*Transport).newClientConn", "x/net/http2.(*clientConnReadLoop).run", "x/net/http2.(*ClientConn).readLoop", "x/net/http2.(*clientConnPool)", "crypto/tls.", "net/http.(*Transport).dialConn", "net/http.(*Transport).tryPutIdleConn"}},
	{"HTTP/2 streams and requests", []string{"x/net/http2.(*ClientConn).RoundTrip", "x/net/http2.(*clientStream)", "x/net/http2.(*clientConnReadLoop)", "x/net/http2.(*ClientConn).internalRoundTrip", "util/net.CloneRequest", "util/net.CloneHeader"}},
	{"objects the discovery triggers and the GCPolicy watch decode (APIServices, CRDs' metadata, GCPolicies)", []string{"meta/v1/unstructured.", "apis/meta/v1.(*ObjectMeta).Unmarshal", "apis/meta/v1.(*PartialObjectMetadata)", "kube-aggregator/pkg/apis/apiregistration/v1.", ownergcPkg + "api/v1alpha1.(*GCPolicy)"}},
	{"watch decoders and filters (StreamWatcher, framing, gzip)", []string{"watch.NewStreamWatcher", "watch.(*StreamWatcher)", "rest/watch.(*Decoder)", "watch.(*filteredWatch)", "watch.Filter", "serializer/streaming.", "compress/flate.", "compress/gzip."}},
	{"graph", []string{ownergcPkg + "internal/graph."}},
	{"monitors", []string{ownergcPkg + "internal/monitor."}},
	{"discovery", []string{ownergcPkg + "internal/discovery.", "k8s.io/client-go/discovery."}},
	{"collector", []string{ownergcPkg + "internal/collector."}},
	{"expiry collector", []string{ownergcPkg + "internal/expiry."}},
	{"API-level collectors", []string{ownergcPkg + "internal/apigc."}},
	{"metrics (Prometheus series)", []string{"prometheus/client_golang", ownergcPkg + "internal/metrics."}},
	{"work queues", []string{"client-go/util/workqueue.", "controller-runtime/pkg/controller/priorityqueue."}},
	{"event recorders", []string{"client-go/tools/record.", "client-go/tools/events.", "watch.(*Broadcaster)", "watch.NewBroadcaster", "watch.NewLongQueueBroadcaster"}},
	{"engine", []string{ownergcPkg + "internal/engine."}},
	{"GCPolicy controller", []string{ownergcPkg + "controllers.(*GCPolicyReconciler)"}},
	{"ClusterGCStatus controller", []string{ownergcPkg + "controllers.(*ClusterGCStatusReconciler)"}},
	{"fleet (engagement, fence)", []string{ownergcPkg + "internal/fleet.", "k8s.io/client-go/tools/leaderelection."}},
	{"multicluster-runtime (provider's cluster per member, coordinator)", []string{"sigs.k8s.io/multicluster-runtime/"}},
	{"controller-runtime cache (informers)", []string{"controller-runtime/pkg/cache"}},
	{"controller-runtime controllers", []string{"controller-runtime/pkg/internal/controller.", "controller-runtime/pkg/controller.", "controller-runtime/pkg/source."}},
	{"controller-runtime manager and clients", []string{"sigs.k8s.io/controller-runtime/"}},
	{"client-go informers (reflector, FIFO)", []string{"client-go/tools/cache."}},
	{"client-go REST clients and transports", []string{"k8s.io/client-go/rest.", "k8s.io/client-go/transport.", "k8s.io/client-go/util/flowcontrol.", "k8s.io/client-go/metadata.", "k8s.io/client-go/dynamic.", "k8s.io/client-go/kubernetes."}},
	{"goroutine descriptors", []string{"runtime.newproc", "runtime.malg"}},
	benchmarkRest,
}

// cpuOrigins say what CPU time was spent on: the first rule (in order)
// that matches any frame of the sample's stack.
var cpuOrigins = []rule{
	{"heap profile sampling (the benchmark's, -fleet-profile-memrate)", []string{"runtime.profilealloc", "runtime.mProf_Malloc"}},
	benchmarkItself,
	{"ClusterGCStatus controller (each member every 10 s: status; probe and write once a minute)", []string{ownergcPkg + "controllers.(*ClusterGCStatusReconciler)"}},
	{"GCPolicy controller (each member's status every 10 s, written on change or once a minute)", []string{ownergcPkg + "controllers.(*GCPolicyReconciler)"}},
	{"replica heartbeat renewals and engine claims (fence)", []string{ownergcPkg + "internal/fleet.(*engineFence)", "client-go/tools/leaderelection."}},
	{"shard coordinator and peers", []string{ownergcPkg + "internal/fleet.(*coordinator)", "coordinator/sharded."}},
	{"fleet (probe, bound)", []string{ownergcPkg + "internal/fleet."}},
	{"monitors and their watches", []string{ownergcPkg + "internal/monitor.", "client-go/tools/cache.(*Reflector)", "watch.(*StreamWatcher)", "watch.(*filteredWatch)"}},
	{"discovery", []string{ownergcPkg + "internal/discovery."}},
	{"engine (status, gauges)", []string{ownergcPkg + "internal/engine."}},
	{"collector", []string{ownergcPkg + "internal/collector."}},
	{"expiry and API-level collectors", []string{ownergcPkg + "internal/expiry.", ownergcPkg + "internal/apigc."}},
	{"controller-runtime (managers, caches, controllers)", []string{"sigs.k8s.io/controller-runtime/", "sigs.k8s.io/multicluster-runtime/", "client-go/tools/cache."}},
	{"HTTP/2 connections (reading responses, TLS)", []string{"golang.org/x/net/http2.", "crypto/tls."}},
	{"garbage collection", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcStart", "runtime.GC"}},
	{"scheduler, timers, network poller", []string{"runtime.mcall", "runtime.schedule", "runtime.findRunnable", "runtime.sysmon", "runtime.netpoll", "runtime.timer", "runtime.park_m", "runtime.goexit0", "runtime.mstart"}},
	benchmarkRest,
}

func classifyHeap(r *heapRecord) string {
	if name, ok := firstRuleMatch(heapOrigins, r.frames); ok {
		return name
	}
	return "other: " + shortFunc(topFrame(r.frames))
}

func topFrame(frames []string) string {
	for _, f := range frames {
		if !strings.HasPrefix(f, "runtime.") && !strings.HasPrefix(f, "sync.") && !strings.HasPrefix(f, "internal/") {
			return f
		}
	}
	if len(frames) > 0 {
		return frames[0]
	}
	return ""
}

// shortFunc drops a function's package path.
func shortFunc(f string) string {
	if i := strings.LastIndex(f, "/"); i >= 0 {
		return f[i+1:]
	}
	return f
}

// breakdown is a quantity by origin at each point.
type breakdown map[string][]float64

func (b breakdown) add(key string, i, n int, v float64) {
	if b[key] == nil {
		b[key] = make([]float64, n)
	}
	b[key][i] += v
}

// analyzeProfiles breaks down the profiles an earlier run wrote to dir and
// writes the tables, in markdown, to w.
func analyzeProfiles(dir string, w io.Writer) error {
	points, err := readPoints(dir)
	if err != nil {
		return err
	}
	n := len(points)
	if n < 2 {
		return fmt.Errorf("%s: at least two points are needed", dir)
	}
	owners, kinds := breakdown{}, breakdown{}
	inuse, allocs, cpu := breakdown{}, breakdown{}, breakdown{}
	for i, p := range points {
		samples, err := readCPUProfile(filepath.Join(dir, fmt.Sprintf("cpu-%d.pb.gz", p.Members)))
		if err != nil {
			return err
		}
		for _, c := range samples {
			o, ok := firstRuleMatch(cpuOrigins, c.frames)
			if !ok {
				o = "other: " + shortFunc(topFrame(c.frames))
			}
			cpu.add(o, i, n, float64(c.nanos)/1e6/p.Window.Seconds())
		}
		gs, err := readGoroutines(filepath.Join(dir, fmt.Sprintf("goroutines-%d.txt", p.Members)))
		if err != nil {
			return err
		}
		byID := map[int]*goroutine{}
		for _, g := range gs {
			byID[g.id] = g
		}
		for _, g := range gs {
			o := classifyGoroutine(g, byID)
			owners.add(o.owner, i, n, 1)
			kinds.add(o.owner+"\x00"+o.kind, i, n, 1)
		}
		heap, err := readHeap(filepath.Join(dir, fmt.Sprintf("heap-%d.txt", p.Members)))
		if err != nil {
			return err
		}
		start, err := readHeap(filepath.Join(dir, fmt.Sprintf("allocs-%d-start.txt", p.Members)))
		if err != nil {
			return err
		}
		before := map[string]float64{}
		for _, r := range start.records {
			before[strings.Join(r.frames, "\n")] += start.scaled(r.allocObjects, r.allocBytes)
		}
		for _, r := range heap.records {
			o := classifyHeap(r)
			inuse.add(o, i, n, heap.scaled(r.inuseObjects, r.inuseBytes))
			if d := heap.scaled(r.allocObjects, r.allocBytes) - before[strings.Join(r.frames, "\n")]; d > 0 {
				allocs.add(o, i, n, d/p.Window.Seconds())
			}
		}
	}
	a, b := points[n-2], points[n-1]
	slope := func(v []float64) float64 { return (v[n-1] - v[n-2]) / float64(b.Members-a.Members) }
	cols := func(f func(p *profilePoint) string) string {
		var parts []string
		for _, p := range points {
			parts = append(parts, f(p))
		}
		return strings.Join(parts, " | ")
	}

	fmt.Fprintf(w, "## Fleet profile: %s\n\n", dir)
	fmt.Fprintf(w, "|  | %s | per member (%d → %d) |\n", cols(func(p *profilePoint) string { return fmt.Sprintf("%d members", p.Members) }), a.Members, b.Members)
	fmt.Fprintf(w, "|---|%s---:|\n", strings.Repeat("---:|", n))
	row := func(name string, f func(p *profilePoint) float64, format string, scale float64) {
		v := make([]float64, n)
		var parts []string
		for i, p := range points {
			v[i] = f(p)
			parts = append(parts, fmt.Sprintf(format, v[i]*scale))
		}
		fmt.Fprintf(w, "| %s | %s | "+format+" |\n", name, strings.Join(parts, " | "), slope(v)*scale)
	}
	const kib, mib = 1.0 / 1024, 1.0 / (1024 * 1024)
	row("goroutines", func(p *profilePoint) float64 { return float64(p.Goroutines) }, "%.0f", 1)
	row("resident memory (MiB)", func(p *profilePoint) float64 { return float64(p.RSS) }, "%.2f", mib)
	row("Go heap in use after GC (MiB)", func(p *profilePoint) float64 { return float64(p.HeapInuse) }, "%.2f", mib)
	row("goroutine stacks (MiB)", func(p *profilePoint) float64 { return float64(p.Stacks) }, "%.2f", mib)
	row("Go runtime, all it holds from the OS (MiB)", func(p *profilePoint) float64 { return float64(p.Sys) }, "%.2f", mib)
	row("CPU, idle (millicores)", func(p *profilePoint) float64 { return 1000 * p.CPU / p.Window.Seconds() }, "%.1f", 1)
	row("writes to the host (per second)", func(p *profilePoint) float64 { return float64(sumCounts(p.HostWrites)) / p.Window.Seconds() }, "%.3f", 1)
	row("reads of the host (per second)", func(p *profilePoint) float64 { return float64(sumCounts(p.HostReads)) / p.Window.Seconds() }, "%.3f", 1)
	memberWrites := func(p *profilePoint) float64 {
		t := 0.0
		for k, v := range p.MemberRequests {
			if !strings.HasPrefix(k, "GET ") && !strings.HasPrefix(k, "LIST ") && !strings.HasPrefix(k, "WATCH ") {
				t += v
			}
		}
		return t / p.Window.Seconds()
	}
	row("writes to the members, all together (per second)", memberWrites, "%.3f", 1)
	row("other requests to the members (per second)", func(p *profilePoint) float64 {
		t := 0.0
		for _, v := range p.MemberRequests {
			t += v
		}
		return t/p.Window.Seconds() - memberWrites(p)
	}, "%.3f", 1)
	fmt.Fprintf(w, "\nWatches one member's API server serves (to every client, its own included): %s. Members Ready after their Secrets were written: %s.\n\n", cols(func(p *profilePoint) string { return fmt.Sprintf("%.0f", p.MemberWatches) }),
		cols(func(p *profilePoint) string { return p.EngagedIn.Round(10 * time.Millisecond).String() }))

	fmt.Fprintf(w, "### Requests to the host, by verb and resource (per second)\n\n")
	hw := breakdown{}
	for i, p := range points {
		for k, v := range p.HostWrites {
			hw.add(k, i, n, float64(v)/p.Window.Seconds())
		}
		for k, v := range p.HostReads {
			hw.add(k, i, n, float64(v)/p.Window.Seconds())
		}
	}
	table(w, hw, points, slope, "%.3f", 1, 0)
	fmt.Fprintf(w, "\n### Requests to the members, by verb and resource (per second, all members together)\n\n")
	mr := breakdown{}
	for i, p := range points {
		for k, v := range p.MemberRequests {
			mr.add(k, i, n, v/p.Window.Seconds())
		}
	}
	table(w, mr, points, slope, "%.3f", 1, 0)

	fmt.Fprintf(w, "\n### Goroutines by origin\n\n")
	table(w, owners, points, slope, "%.0f", 1, 0)
	fmt.Fprintf(w, "\n### Goroutines by origin and what they do\n\n")
	table(w, kinds, points, slope, "%.0f", 1, 0.05)
	fmt.Fprintf(w, "\n### CPU during the idle window, by origin (millicores, from the CPU profile)\n\n")
	table(w, cpu, points, slope, "%.2f", 1, 0.02)
	fmt.Fprintf(w, "\n### Heap in use after GC, by origin (KiB)\n\n")
	table(w, inuse, points, slope, "%.0f", kib, 2*1024)
	fmt.Fprintf(w, "\n### Allocations during the idle window, by origin (KiB per second)\n\n")
	table(w, allocs, points, slope, "%.1f", kib, 512)
	return nil
}

// table writes a breakdown, its largest per-member slope first; rows
// whose slope and values are all below min (in the breakdown's unit) are
// summed into one.
func table(w io.Writer, b breakdown, points []*profilePoint, slope func([]float64) float64, format string, scale, min float64) {
	n := len(points)
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		si, sj := slope(b[keys[i]]), slope(b[keys[j]])
		if si != sj {
			return si > sj
		}
		if b[keys[i]][n-1] != b[keys[j]][n-1] {
			return b[keys[i]][n-1] > b[keys[j]][n-1]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, p := range points {
		parts = append(parts, fmt.Sprintf("%d members", p.Members))
	}
	fmt.Fprintf(w, "| origin | %s | per member (%d → %d) |\n", strings.Join(parts, " | "), points[n-2].Members, points[n-1].Members)
	fmt.Fprintf(w, "|---|%s---:|\n", strings.Repeat("---:|", n))
	rest := make([]float64, n)
	restRows := 0
	total := make([]float64, n)
	for _, k := range keys {
		v := b[k]
		for i := range v {
			total[i] += v[i]
		}
		small := math.Abs(slope(v)) < min
		for _, x := range v {
			small = small && math.Abs(x) < min*10
		}
		if small {
			for i := range v {
				rest[i] += v[i]
			}
			restRows++
			continue
		}
		writeRow(w, strings.ReplaceAll(k, "\x00", ": "), v, slope, format, scale)
	}
	if restRows > 0 {
		writeRow(w, fmt.Sprintf("%d smaller rows", restRows), rest, slope, format, scale)
	}
	writeRow(w, "**total**", total, slope, format, scale)
}

func writeRow(w io.Writer, name string, v []float64, slope func([]float64) float64, format string, scale float64) {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf(format, x*scale))
	}
	fmt.Fprintf(w, "| %s | %s | "+format+" |\n", name, strings.Join(parts, " | "), slope(v)*scale)
}
