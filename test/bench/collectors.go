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
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ownergc/ownergc/test/framework"
)

// collector names, as they appear in the table.
const (
	ownergc  = "ownergc"
	upstream = "upstream"
)

var collectors = []string{ownergc, upstream}

// rate is a client rate limit given to a collector, expressed as the
// effective QPS and burst of the client that does the collector's deletes.
type rate struct {
	qps   float64
	burst int
}

func (r rate) String() string {
	if r.qps >= unthrottled.qps {
		return "unthrottled"
	}
	return fmt.Sprintf("effective QPS %g, burst %d", r.qps, r.burst)
}

var (
	// equalQPS is the throttled setting of the issue: upstream runs with
	// --kube-api-qps=100, which kube-controller-manager doubles to 200 for
	// the garbage collector's metadata client (burst is not doubled);
	// ownergc runs with --kube-api-qps=200. Both get the same burst.
	equalQPS = rate{qps: 200, burst: 200}
	// unthrottled is a limit far above what the control plane can serve.
	unthrottled = rate{qps: 100000, burst: 100000}
)

// proc is one running collector process.
type proc struct {
	*framework.Process
	name  string
	ready time.Time
	lines *lineWatcher
	note  string // e.g. upstream proceeding without all monitors synced
	// metricsURL is the process's /metrics: kube-controller-manager's
	// always, ownergc's when started with startOwnergcWithMetrics (empty
	// otherwise); metricsToken is the bearer token ownergc's asks for.
	metricsURL, metricsToken string
}

// startCollector starts the named collector with the given client rate and
// waits until it is ready: ownergc's /readyz answers 200 (its graph has
// synced); kube-controller-manager logs "Proceeding to collect garbage"
// after its resource monitors have synced.
func (b *bench) startCollector(name string, r rate, tag string) (*proc, error) {
	return b.startCollectorOn(b.kubeconfig, name, r, tag)
}

// startCollectorOn is startCollector on the cluster of a kubeconfig file;
// ownergc gets the extra arguments.
func (b *bench) startCollectorOn(kubeconfig, name string, r rate, tag string, extra ...string) (*proc, error) {
	return b.startCollectorWith(kubeconfig, name, r, tag, "", extra...)
}

// startOwnergcWithMetrics is startCollectorOn for ownergc, with its metrics
// server on, read with token.
func (b *bench) startOwnergcWithMetrics(kubeconfig string, r rate, tag, token string, extra ...string) (*proc, error) {
	return b.startCollectorWith(kubeconfig, ownergc, r, tag, token, extra...)
}

// startCollectorWith is startCollectorOn; for ownergc, a metricsToken turns
// its metrics server on.
func (b *bench) startCollectorWith(kubeconfig, name string, r rate, tag, metricsToken string, extra ...string) (*proc, error) {
	logN := b.nextLog()
	logPath := filepath.Join(b.logDir, fmt.Sprintf("%02d-%s-%s.log", logN, tag, name))
	p := &proc{name: name}
	p.lines = newLineWatcher("Proceeding to collect garbage", "not all resource monitors could be synced", dryRunDelete)
	const timeout = 4 * time.Minute
	switch name {
	case ownergc:
		m, err := framework.StartManagerProcess(framework.ManagerProcessOptions{
			Name: name, Binary: b.managerBin, Kubeconfig: kubeconfig,
			Args: append([]string{
				"--leader-elect=false",
				"--kube-api-qps=" + strconv.FormatFloat(r.qps, 'f', -1, 64),
				"--kube-api-burst=" + strconv.Itoa(r.burst),
			}, extra...),
			LogPath: logPath, Output: p.lines, StopGrace: 30 * time.Second, ReadyPoll: 10 * time.Millisecond,
			Metrics: metricsToken != "",
		})
		if err != nil {
			return nil, err
		}
		p.Process = m.Process
		if metricsToken != "" {
			p.metricsURL, p.metricsToken = m.MetricsURL("/metrics"), metricsToken
		}
		if err := m.WaitReady(timeout); err != nil {
			m.Stop()
			return nil, err
		}
		p.ready = m.Ready
		return p, nil
	case upstream:
	default:
		return nil, fmt.Errorf("unknown collector %q", name)
	}

	port, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	p.metricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	// kube-controller-manager doubles --kube-api-qps for the garbage
	// collector's metadata client (cmd/kube-controller-manager/app/core.go,
	// newGarbageCollectorController: config.QPS *= 2), not the burst.
	p.Process, err = framework.StartProcess(framework.ProcessOptions{
		Name: name, Path: b.kcmBin, LogPath: logPath, Output: p.lines, StopGrace: 30 * time.Second,
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--controllers=garbagecollector",
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			// Its /metrics (self-signed, anonymous, always allowed) tells
			// when its graph has absorbed the initial lists.
			fmt.Sprintf("--secure-port=%d", port),
			"--bind-address=127.0.0.1",
			"--cert-dir=" + filepath.Join(b.logDir, fmt.Sprintf("kcm-certs-%02d", logN)),
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
			"--kube-api-qps=" + strconv.FormatFloat(r.qps/2, 'f', -1, 64),
			"--kube-api-burst=" + strconv.Itoa(r.burst),
			"--v=2",
		},
	})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := p.Alive(); err != nil {
			return nil, fmt.Errorf("%s exited before it was ready: %w", name, err)
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("%s not ready after %s; see %s", name, timeout, logPath)
		}
		if t, ok := p.lines.seen("Proceeding to collect garbage"); ok {
			p.ready = t
			if _, partial := p.lines.seen("not all resource monitors could be synced"); partial {
				p.note = "upstream proceeded without all resource monitors synced (30 s timeout)"
			}
			return p, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startup is the time from exec to ready.
func (p *proc) startup() time.Duration { return p.ready.Sub(p.Started) }

// stop sends SIGTERM and waits for the process to exit (SIGKILL after 30 s).
func (p *proc) stop() {
	if p != nil {
		p.Stop()
	}
}

// rss reads the resident set size of the process from /proc.
func (p *proc) rss() (int64, error) {
	return procStatusBytes(fmt.Sprintf("/proc/%d/status", p.Pid()), "VmRSS")
}

// peakRSS is the process's peak resident memory so far (VmHWM).
func (p *proc) peakRSS() (int64, error) {
	return procStatusBytes(fmt.Sprintf("/proc/%d/status", p.Pid()), "VmHWM")
}

// procStatusBytes reads a field given in kB (VmRSS, VmHWM) of a
// /proc/<pid>/status file, in bytes.
func procStatusBytes(path, field string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}

// lineWatcher records when lines of a process's output containing given
// substrings first appear, and how many do.
type lineWatcher struct {
	mu       sync.Mutex
	partial  []byte
	patterns []string
	at       map[string]time.Time
	n        map[string]int
}

func newLineWatcher(patterns ...string) *lineWatcher {
	return &lineWatcher{patterns: patterns, at: map[string]time.Time{}, n: map[string]int{}}
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		for _, pat := range w.patterns {
			if bytes.Contains(line, []byte(pat)) {
				if _, ok := w.at[pat]; !ok {
					w.at[pat] = now
				}
				w.n[pat]++
			}
		}
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 1<<20 { // a line that long is no log line we look for
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

// count returns how many lines contained pattern so far.
func (w *lineWatcher) count(pattern string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[pattern]
}

func (w *lineWatcher) seen(pattern string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.at[pattern]
	return t, ok
}

// metrics reads the process's /metrics (self-signed; ownergc's with its
// bearer token).
func (p *proc) metrics() (map[string]*dto.MetricFamily, error) {
	if p.metricsURL == "" {
		return nil, fmt.Errorf("%s runs without a metrics server the benchmark reads", p.name)
	}
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, p.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	if p.metricsToken != "" {
		req.Header.Set("Authorization", "Bearer "+p.metricsToken)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", p.metricsURL, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// goroutines reads go_goroutines from the process's /metrics.
func (p *proc) goroutines() (float64, error) {
	families, err := p.metrics()
	if err != nil {
		return 0, err
	}
	for _, m := range families["go_goroutines"].GetMetric() {
		return m.GetGauge().GetValue(), nil
	}
	return 0, fmt.Errorf("no go_goroutines in %s", p.metricsURL)
}

// graphChangesDepth reads workqueue_depth{name="garbage_collector_graph_changes"}
// from kube-controller-manager's /metrics: the graph builder's backlog.
func (p *proc) graphChangesDepth() (float64, error) {
	families, err := p.metrics()
	if err != nil {
		return 0, err
	}
	for _, m := range families["workqueue_depth"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == "garbage_collector_graph_changes" {
				return m.GetGauge().GetValue(), nil
			}
		}
	}
	return 0, errors.New("no workqueue_depth{name=\"garbage_collector_graph_changes\"}")
}
