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
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fault injection: stopping and restarting kube-apiserver on the same etcd,
// with other flags, and compacting etcd's history.

// apiServer is a kube-apiserver the framework started itself, replacing the
// one envtest started.
type apiServer struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// apiServerArgs returns the command line of the running kube-apiserver.
func (cp *ControlPlane) apiServerArgs() ([]string, error) {
	if cp.restarted != nil {
		return cp.restarted.cmd.Args, nil
	}
	if cp.apiServerArgv != nil {
		return cp.apiServerArgv, nil
	}
	pid, err := cp.apiServerPID()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"), nil
}

// apiServerPID finds the control plane's kube-apiserver among the child
// processes of this one (a test process may run several control planes):
// the one serving on its port.
func (cp *ControlPlane) apiServerPID() (int, error) {
	port := "--secure-port=" + cp.Env.ControlPlane.GetAPIServer().Port
	return childNamed("kube-apiserver", func(pid int) bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && slices.Contains(strings.Split(string(data), "\x00"), port)
	})
}

// childNamed finds the child process of this one with the given command
// name for which match, when set, is true.
func childNamed(name string, match func(pid int) bool) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < 0 {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == self && s[open+1:closing] == name && (match == nil || match(pid)) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no running child process named %s", name)
}

// StopAPIServer stops kube-apiserver (etcd keeps running) and waits until
// it has exited. Clients keep their address: they work again once
// StartAPIServer has run.
func (cp *ControlPlane) StopAPIServer() error {
	args, err := cp.apiServerArgs()
	if err != nil {
		return err
	}
	cp.apiServerArgv = args
	if cp.restarted != nil {
		cp.restarted.stop()
		cp.restarted = nil
		return nil
	}
	pid, err := cp.apiServerPID()
	if err != nil {
		return err
	}
	// A graceful shutdown waits up to a minute for open watches to end:
	// give it a moment, then kill it, as a crash would.
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	gone := func() error {
		if _, err := cp.apiServerPID(); err == nil {
			return fmt.Errorf("kube-apiserver (pid %d) is still running", pid)
		}
		return nil
	}
	if Poll(3*time.Second, gone) == nil {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return Poll(30*time.Second, gone)
}

// StartAPIServer starts kube-apiserver again with the command line it last
// ran with, every flag of set replacing the flag of that name (or added),
// and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(set map[string]string) error {
	if cp.restarted != nil {
		return fmt.Errorf("kube-apiserver is running")
	}
	args := withFlags(cp.apiServerArgv, set)
	logFile, err := os.CreateTemp("", "kube-apiserver-*.log")
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	s := &apiServer{cmd: cmd, done: make(chan struct{}), log: logFile.Name()}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	cp.restarted = s
	return cp.waitAPIServerReady(s)
}

// RestartAPIServer stops kube-apiserver and starts it again (see
// StartAPIServer).
func (cp *ControlPlane) RestartAPIServer(set map[string]string) error {
	if err := cp.StopAPIServer(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	return cp.StartAPIServer(set)
}

func (cp *ControlPlane) waitAPIServerReady(s *apiServer) error {
	err := Poll(2*time.Minute, func() error {
		select {
		case <-s.done:
			return fmt.Errorf("kube-apiserver exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Its own informers of a group switched off never sync: that check
		// fails for as long as the flag is set, while everything is served.
		body, err := cp.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").Param("exclude", "informer-sync").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("not ready: %v %s", err, body)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tail(s.log, 20))
	}
	return nil
}

func (s *apiServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(3 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.Remove(s.log)
}

// withFlags returns args with the --name=value flags of set replacing
// those of the same name, or appended.
func withFlags(args []string, set map[string]string) []string {
	out := []string{args[0]}
	seen := map[string]bool{}
	for _, a := range args[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if v, ok := set[name]; ok {
			if !seen[name] && v != "" {
				out = append(out, "--"+name+"="+v)
			}
			seen[name] = true
			continue
		}
		out = append(out, a)
	}
	for name, v := range set {
		if !seen[name] && v != "" {
			out = append(out, "--"+name+"="+v)
		}
	}
	return out
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return filepath.Base(path) + ":\n" + strings.Join(lines, "\n")
}

// CompactEtcd compacts etcd's history up to its current revision, so that
// every watch resuming from an older resourceVersion fails with 410 Gone
// and informers must list again.
func (cp *ControlPlane) CompactEtcd() (int64, error) {
	base := cp.Env.ControlPlane.Etcd.URL.String()
	// The current revision is in the header of any range request.
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	key := base64.StdEncoding.EncodeToString([]byte("/"))
	if err := etcdPost(base+"/v3/kv/range", map[string]any{"key": key, "limit": 1}, &rng); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd revision %q: %w", rng.Header.Revision, err)
	}
	if err := etcdPost(base+"/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

func etcdPost(url string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", url, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
