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

package framework

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
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildManager builds ownergc's manager binary from the working tree into
// dir (`go build -o dir/manager .` at the module root) and returns its path.
// Call it once per process (a TestMain, the demo, the benchmark).
func BuildManager(dir string) (string, error) { return Build(dir, "manager", ".") }

// BuildPlugin builds the kubectl plugin from the working tree into dir
// (`go build -o dir/kubectl-ownergc ./cmd/kubectl-ownergc`) and returns its
// path.
func BuildPlugin(dir string) (string, error) {
	return Build(dir, "kubectl-ownergc", "./cmd/kubectl-ownergc")
}

// Build builds the package pkg of the module (its path from the module's
// root: ".", "./test/demo") from the working tree into dir/name and returns
// the binary's path.
func Build(dir, name, pkg string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build -o %s %s: %w", out, pkg, err)
	}
	return out, nil
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ProcessOptions describe a child process to start.
type ProcessOptions struct {
	// Name names the process in errors.
	Name string
	// Path and Args are the binary and its arguments.
	Path string
	Args []string
	// Env is added to the parent's environment.
	Env []string
	// LogPath receives the process's stdout and stderr; empty keeps them in
	// memory.
	LogPath string
	// Output, when set, receives a copy of the output (e.g. to watch for a
	// log line).
	Output io.Writer
	// StopGrace is how long Stop waits after SIGTERM before it kills the
	// process (default 10s).
	StopGrace time.Duration
}

// Process is a child process whose output goes to a log. It runs in its own
// process group, so a Ctrl-C meant for its parent does not reach it, and it
// is killed when its parent dies (Pdeathsig), however that happens.
type Process struct {
	Name    string
	LogPath string
	// Started is the time just before exec.
	Started time.Time

	cmd     *exec.Cmd
	grace   time.Duration
	mem     *lockedBuffer
	file    *os.File
	exited  chan struct{}
	waitErr error
}

// StartProcess starts a child process as o describes.
func StartProcess(o ProcessOptions) (*Process, error) {
	p := &Process{Name: o.Name, LogPath: o.LogPath, grace: o.StopGrace, exited: make(chan struct{})}
	if p.Name == "" {
		p.Name = filepath.Base(o.Path)
	}
	if p.grace == 0 {
		p.grace = 10 * time.Second
	}
	var out io.Writer
	if o.LogPath != "" {
		f, err := os.Create(o.LogPath)
		if err != nil {
			return nil, err
		}
		p.file, out = f, f
	} else {
		p.mem = &lockedBuffer{}
		out = p.mem
	}
	if o.Output != nil {
		out = io.MultiWriter(out, o.Output)
	}
	p.cmd = exec.Command(o.Path, o.Args...)
	p.cmd.Env = append(os.Environ(), o.Env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	// Pdeathsig fires when the thread that started the child exits, not the
	// process: start and wait on a locked thread that stays alive as long as
	// the child does, so that the runtime never retires it underneath.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p.Started = time.Now()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = p.cmd.Wait()
		if p.file != nil {
			_ = p.file.Close()
		}
		close(p.exited)
	}()
	if err := <-started; err != nil {
		if p.file != nil {
			_ = p.file.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", p.Name, err)
	}
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Alive returns an error, with the end of the log, once the process has
// exited.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); the end of its log%s:\n%s", p.Name, p.waitErr, p.where(), indent(p.Tail(20)))
	default:
		return nil
	}
}

func (p *Process) where() string {
	if p.LogPath == "" {
		return ""
	}
	return ", " + p.LogPath
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for the process to exit and returns how it ended, as
// exec.Cmd.Wait does.
func (p *Process) Wait() error {
	<-p.exited
	return p.waitErr
}

// Stop asks the process to shut down with SIGTERM (the manager then
// releases its leader election lease), kills it if it has not exited after
// the grace period, and waits for it.
func (p *Process) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(p.grace):
		p.Kill()
	}
}

// Kill kills the process at once, as a crash would, and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Log returns everything the process has written so far.
func (p *Process) Log() string {
	if p.mem != nil {
		return p.mem.String()
	}
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string { return LastLines(p.Log(), n) }

// LastLines returns the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ManagerProcessOptions describe a manager binary to start.
type ManagerProcessOptions struct {
	// Name names the process in errors (default "manager").
	Name string
	// Binary is the manager binary (see BuildManager).
	Binary string
	// Kubeconfig is passed as --kubeconfig.
	Kubeconfig string
	// Metrics serves the metrics server (/metrics and /debug/graph, HTTPS
	// with authentication and authorization) on a free local port;
	// otherwise it is off (--metrics-bind-address=0).
	Metrics bool
	// Args are added after the kubeconfig, metrics and probe flags.
	Args []string
	// Env, LogPath, Output and StopGrace are as in ProcessOptions.
	Env       []string
	LogPath   string
	Output    io.Writer
	StopGrace time.Duration
	// ReadyPoll is how often WaitReady asks /readyz (default 100ms).
	ReadyPoll time.Duration
}

// ManagerProcess is ownergc's manager binary running as a child process,
// its probes (and metrics server, if asked) on free local ports.
type ManagerProcess struct {
	*Process
	ProbePort   int
	MetricsPort int // 0 when the metrics server is off
	// Ready is when WaitReady first saw /readyz answer 200.
	Ready time.Time

	readyPoll time.Duration
}

// StartManagerProcess starts the manager binary; it does not wait for it to
// be ready (see WaitReady).
func StartManagerProcess(o ManagerProcessOptions) (*ManagerProcess, error) {
	if o.Binary == "" {
		return nil, errors.New("no manager binary given (see BuildManager)")
	}
	m := &ManagerProcess{readyPoll: o.ReadyPoll}
	if m.readyPoll == 0 {
		m.readyPoll = 100 * time.Millisecond
	}
	var err error
	if m.ProbePort, err = FreePort(); err != nil {
		return nil, err
	}
	metrics := "0"
	if o.Metrics {
		if m.MetricsPort, err = FreePort(); err != nil {
			return nil, err
		}
		metrics = fmt.Sprintf("127.0.0.1:%d", m.MetricsPort)
	}
	args := []string{
		"--kubeconfig=" + o.Kubeconfig,
		"--metrics-bind-address=" + metrics,
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", m.ProbePort),
	}
	name := o.Name
	if name == "" {
		name = "manager"
	}
	m.Process, err = StartProcess(ProcessOptions{
		Name: name, Path: o.Binary, Args: append(args, o.Args...), Env: o.Env,
		LogPath: o.LogPath, Output: o.Output, StopGrace: o.StopGrace,
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// WaitReady waits up to timeout for /readyz to answer 200 (the graph has
// synced). It fails at once, with the end of the log, if the process exits.
func (m *ManagerProcess) WaitReady(timeout time.Duration) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", m.ProbePort)
	c := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if err := m.Alive(); err != nil {
			return fmt.Errorf("waiting for %s to be ready: %w", m.Name, err)
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				m.Ready = time.Now()
				return nil
			}
			err = fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (%v); the end of its log%s:\n%s", m.Name, timeout, last, m.where(), indent(m.Tail(20)))
		}
		select {
		case <-m.Exited():
		case <-time.After(m.readyPoll):
		}
	}
}

// MetricsURL is the URL of path on the metrics server.
func (m *ManagerProcess) MetricsURL(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", m.MetricsPort, path)
}

// GetMetrics requests path from the metrics server, with a bearer token
// unless it is empty, and returns the status code and the body. The metrics
// server may start listening a moment after /readyz answers (it generates
// its certificate first): connection errors are retried for 30 seconds.
func (m *ManagerProcess) GetMetrics(path, bearer string) (int, string, error) {
	if m.MetricsPort == 0 {
		return 0, "", fmt.Errorf("%s runs without its metrics server", m.Name)
	}
	code, body, err := getMetricsServer(m.MetricsURL(path), bearer, m.Alive)
	return code, string(body), err
}

// getMetricsServer requests url from a metrics server (HTTPS with a
// self-signed certificate), with a bearer token unless it is empty, and
// returns the status code and the body. Connection errors are retried for 30
// seconds, as long as alive (when set) reports no error.
func getMetricsServer(url, bearer string, alive func() error) (int, []byte, error) {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var resp *http.Response
	err := Poll(30*time.Second, func() error {
		if alive != nil {
			if err := alive(); err != nil {
				return err
			}
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err = c.Do(req)
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
