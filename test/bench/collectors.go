package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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
	name    string
	cmd     *exec.Cmd
	started time.Time // just before exec
	ready   time.Time
	logPath string
	logFile *os.File
	lines   *lineWatcher
	exited  chan struct{}
	note    string // e.g. upstream proceeding without all monitors synced
	// metricsURL is kube-controller-manager's /metrics (empty for ownergc).
	metricsURL string
}

// startCollector starts the named collector with the given client rate and
// waits until it is ready: ownergc's /readyz answers 200 (its graph has
// synced); kube-controller-manager logs "Proceeding to collect garbage"
// after its resource monitors have synced.
func (b *bench) startCollector(name string, r rate, tag string) (*proc, error) {
	logPath := filepath.Join(b.logDir, fmt.Sprintf("%02d-%s-%s.log", b.nextLog(), tag, name))
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, logPath: logPath, logFile: f, exited: make(chan struct{})}
	p.lines = newLineWatcher(f, "Proceeding to collect garbage", "not all resource monitors could be synced")
	var probe string
	switch name {
	case ownergc:
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		probe = fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
		p.cmd = exec.Command(b.managerBin,
			"--kubeconfig="+b.kubeconfig,
			"--metrics-bind-address=0",
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port),
			"--leader-elect=false",
			"--kube-api-qps="+strconv.FormatFloat(r.qps, 'f', -1, 64),
			"--kube-api-burst="+strconv.Itoa(r.burst),
		)
	case upstream:
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p.metricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
		// kube-controller-manager doubles --kube-api-qps for the garbage
		// collector's metadata client (cmd/kube-controller-manager/app/core.go,
		// newGarbageCollectorController: config.QPS *= 2), not the burst.
		p.cmd = exec.Command(b.kcmBin,
			"--kubeconfig="+b.kubeconfig,
			"--controllers=garbagecollector",
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			// Its /metrics (self-signed, anonymous, always allowed) tells
			// when its graph has absorbed the initial lists.
			fmt.Sprintf("--secure-port=%d", port),
			"--bind-address=127.0.0.1",
			"--cert-dir="+filepath.Join(b.logDir, "kcm-certs"),
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
			"--kube-api-qps="+strconv.FormatFloat(r.qps/2, 'f', -1, 64),
			"--kube-api-burst="+strconv.Itoa(r.burst),
			"--v=2",
		)
	default:
		return nil, fmt.Errorf("unknown collector %q", name)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.lines, p.lines
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()

	deadline := time.Now().Add(4 * time.Minute)
	for {
		select {
		case <-p.exited:
			p.close()
			return nil, fmt.Errorf("%s exited before it was ready; see %s:\n%s", name, logPath, tail(logPath, 15))
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s not ready after 4m; see %s", name, logPath)
		}
		switch name {
		case ownergc:
			if httpOK(probe) {
				p.ready = time.Now()
			}
		case upstream:
			if t, ok := p.lines.seen("Proceeding to collect garbage"); ok {
				p.ready = t
				if _, partial := p.lines.seen("not all resource monitors could be synced"); partial {
					p.note = "upstream proceeded without all resource monitors synced (30 s timeout)"
				}
			}
		}
		if !p.ready.IsZero() {
			return p, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startup is the time from exec to ready.
func (p *proc) startup() time.Duration { return p.ready.Sub(p.started) }

// stop sends SIGTERM and waits for the process to exit (SIGKILL after 30 s).
func (p *proc) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	p.close()
}

func (p *proc) close() { _ = p.logFile.Close() }

// alive fails when the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited; see %s:\n%s", p.name, p.logPath, tail(p.logPath, 15))
	default:
		return nil
	}
}

// rss reads the resident set size of the process from /proc.
func (p *proc) rss() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				break
			}
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

func httpOK(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// lineWatcher passes a process's output through to a log file and records
// when lines containing given substrings first appear.
type lineWatcher struct {
	mu       sync.Mutex
	out      io.Writer
	partial  []byte
	patterns []string
	at       map[string]time.Time
}

func newLineWatcher(out io.Writer, patterns ...string) *lineWatcher {
	return &lineWatcher{out: out, patterns: patterns, at: map[string]time.Time{}}
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.out.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		for _, pat := range w.patterns {
			if _, ok := w.at[pat]; !ok && bytes.Contains(line, []byte(pat)) {
				w.at[pat] = now
			}
		}
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 1<<20 { // a line that long is no log line we look for
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *lineWatcher) seen(pattern string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.at[pattern]
	return t, ok
}

// buildManager builds ownergc's manager binary from the working tree.
func buildManager(dir string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build -o %s . : %w", out, err)
	}
	return out, nil
}

// graphChangesDepth reads workqueue_depth{name="garbage_collector_graph_changes"}
// from kube-controller-manager's /metrics: the graph builder's backlog.
func (p *proc) graphChangesDepth() (float64, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(p.metricsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s answered %d", p.metricsURL, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
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
