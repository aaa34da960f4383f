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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ownergc/ownergc/test/framework"
)

// binaries are the demo, the manager and the kubectl plugin, built once
// for the package's tests (as `make demo` builds them).
type binaries struct {
	demo, manager, plugin string
}

// args are the demo's arguments that name the manager and the plugin.
func (b binaries) args() []string { return []string{"-manager", b.manager, "-plugin", b.plugin} }

var (
	buildOnce sync.Once
	built     binaries
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build builds the binaries the first time a test needs them.
func build(t *testing.T) binaries {
	t.Helper()
	if _, err := framework.AssetsDir(); err != nil {
		t.Fatal(err)
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "ownergc-demo-test-"); buildErr != nil {
			return
		}
		if built.demo, buildErr = framework.Build(binDir, "demo", "./test/demo"); buildErr != nil {
			return
		}
		if built.manager, buildErr = framework.BuildManager(binDir); buildErr != nil {
			return
		}
		built.plugin, buildErr = framework.BuildPlugin(binDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// TestDemoLeavesNothingBehind starts the demo, waits until its control
// plane and the manager are up, kills it, and checks that none of the
// processes it started survives and that its temporary directories are
// gone: after a hangup (the demo cleans up itself) and after SIGKILL (its
// reaper does).
func TestDemoLeavesNothingBehind(t *testing.T) {
	bins := build(t)
	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGHUP", syscall.SIGHUP}, {"SIGKILL", syscall.SIGKILL}} {
		t.Run(c.name, func(t *testing.T) { testKill(t, bins, c.sig) })
	}
}

// TestDemoStory plays the whole story (DEMO_EXIT=1) and checks that its
// foreground scene shows the held deletion with the kubectl plugin: tree
// with the Pod that holds it and its finalizer, why with the manager's
// explanation and decision; that the story ends with commands to try the
// plugin; and that the demo exits cleanly and leaves nothing behind.
func TestDemoStory(t *testing.T) {
	bins := build(t)
	tmp := t.TempDir()
	demo, err := framework.StartProcess(framework.ProcessOptions{
		Name: "demo", Path: bins.demo, Args: bins.args(),
		Env: []string{"TMPDIR=" + tmp, "DEMO_EXIT=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(demo.Kill)
	select {
	case <-demo.Exited():
	case <-time.After(5 * time.Minute):
		t.Fatalf("the demo did not finish its story within 5 minutes:\n%s", demo.Tail(40))
	}
	out := demo.Log()
	if err := demo.Wait(); err != nil {
		t.Fatalf("the demo ended with %v:\n%s", err, framework.LastLines(out, 40))
	}

	scene := section(t, out, "==> Scene 3", "==> Releasing the Pod")
	const pluginFailed = "(kubectl ownergc failed"
	if strings.Contains(out, pluginFailed) {
		t.Errorf("the plugin failed during the story:\n%s", scene)
	}
	wantLines(t, scene, "the foreground scene",
		`     \$ kubectl ownergc tree -n demo deployment/db`,
		`     demo +Deployment/db +\S+ +Deleting for \w+ \(foreground: waits for 1 blocking dependent\); finalizers: foregroundDeletion`,
		`     demo +└─ReplicaSet/db-5d8f6c +controller,blocking +\S+ +Deleting for \w+ \(foreground: waits for 1 blocking dependent\); finalizers: foregroundDeletion`,
		`     demo +  └─Pod/db-5d8f6c-t1z8p +controller,blocking +\S+ +Deleting for \w+; finalizers: demo\.ownergc\.io/hold`,
		`     \$ kubectl ownergc why -n demo deployment/db --server-url https://127\.0\.0\.1:\d+ --manager-insecure-skip-tls-verify --token-file \S+/token`,
		`     Explained by: +the ownergc manager \(https://127\.0\.0\.1:\d+\)`,
		`     Deletion: +being deleted for \w+ \(since .*\), in the foreground: it waits for its blocking dependents; finalizers: foregroundDeletion`,
		`       ReplicaSet/db-5d8f6c \[blocking\]: remains: it is itself being deleted in the foreground and waits for its own dependents`,
		`     Decision: +being deleted in the foreground: it waits until its blocking dependents are gone \(1 listed, 0 hidden\)`)

	tryIt := section(t, out, "==> Try it yourself", "   manager log:")
	wantLines(t, tryIt, "the commands to try",
		`   export KUBECONFIG=\S+/kubeconfig`,
		`   export PATH=`+regexp.QuoteMeta(filepath.Dir(bins.plugin))+`:\$PATH .*`,
		`   kubectl ownergc tree -n demo replicaset/api-5d8f6c`,
		`   kubectl ownergc why -n demo replicaset/api-5d8f6c \\`,
		`     --server-url https://127\.0\.0\.1:\d+ --manager-insecure-skip-tls-verify --token-file \S+/token`)

	framework.Eventually(t, time.Minute, func() error {
		if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
			return fmt.Errorf("%d entries left in TMPDIR", len(entries))
		}
		return nil
	}, "the demo's temporary directories should be gone after it exits")
}

// section returns the lines of out from the first that starts with from up
// to the next that starts with to (excluded).
func section(t *testing.T, out, from, to string) string {
	t.Helper()
	i := strings.Index(out, "\n"+from)
	if i < 0 {
		t.Fatalf("no line %q in the demo's output:\n%s", from, out)
	}
	rest := out[i+1:]
	if j := strings.Index(rest, "\n"+to); j >= 0 {
		return rest[:j+1]
	}
	t.Fatalf("no line %q after %q in the demo's output:\n%s", to, from, out)
	return ""
}

// wantLines fails the test unless, for each pattern, a line of text
// matches it (whole line, after trailing spaces are trimmed).
func wantLines(t *testing.T, text, what string, patterns ...string) {
	t.Helper()
	if missing := framework.UnmatchedPatterns(text, patterns...); len(missing) > 0 {
		t.Errorf("%s: no line matches:\n  %s\nin:\n%s", what, strings.Join(missing, "\n  "), text)
	}
}

func testKill(t *testing.T, bins binaries, sig syscall.Signal) {
	// Everything the demo creates in its temporary directory goes under
	// tmp, which must be empty at the end.
	tmp := t.TempDir()
	started := newLineWaiter("==> Scene 1")
	demo, err := framework.StartProcess(framework.ProcessOptions{
		Name: "demo", Path: bins.demo, Args: bins.args(),
		Env:    []string{"TMPDIR=" + tmp, "DEMO_EXIT="},
		Output: started,
	})
	if err != nil {
		t.Fatal(err)
	}
	var tree []proc
	t.Cleanup(func() {
		demo.Kill()
		for _, p := range tree {
			if p.alive() {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})

	select {
	case <-started.seen:
	case <-demo.Exited():
		t.Fatalf("the demo exited before its story began:\n%s", demo.Tail(30))
	case <-time.After(3 * time.Minute):
		t.Fatalf("the demo's story did not begin within 3 minutes:\n%s", demo.Tail(30))
	}
	tree = descendants(demo.Pid())
	for _, want := range []string{"kube-apiserver", "etcd", "manager"} {
		if !slicesContain(tree, want) {
			t.Fatalf("no %s among the demo's processes %v", want, tree)
		}
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) == 0 {
		t.Fatalf("the demo created nothing in TMPDIR=%s", tmp)
	}

	if err := demo.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-demo.Exited():
	case <-time.After(time.Minute):
		t.Fatalf("the demo did not exit within a minute of %s", sig)
	}
	err = demo.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the demo ended with %v", err)
	}
	if sig == syscall.SIGHUP && exit.ExitCode() != 128+int(sig) {
		t.Fatalf("the demo should clean up and exit with %d on a hangup, not %v:\n%s", 128+int(sig), err, demo.Tail(20))
	}

	framework.Eventually(t, time.Minute, func() error {
		var left []string
		for _, p := range tree {
			if p.alive() {
				left = append(left, p.String())
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still running: %s", strings.Join(left, ", "))
		}
		return nil
	}, "every process the demo started should be gone after %s", sig)
	framework.Eventually(t, time.Minute, func() error {
		entries, err := os.ReadDir(tmp)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return fmt.Errorf("left in TMPDIR: %s", strings.Join(names, ", "))
		}
		return nil
	}, "the demo's temporary directories should be gone after %s", sig)
}

// proc is a process, identified by its pid and its start time (pids are
// reused).
type proc struct {
	pid   int
	start string
	comm  string
}

func (p proc) String() string { return fmt.Sprintf("%s[%d]", p.comm, p.pid) }

// alive reports whether the process still runs; a zombie does not.
func (p proc) alive() bool {
	_, comm, state, start, err := stat(p.pid)
	return err == nil && comm == p.comm && start == p.start && state != "Z" && state != "X"
}

// stat reads the parent, command name, state and start time of a process
// from /proc/<pid>/stat.
func stat(pid int) (ppid int, comm, state, start string, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", "", err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return 0, "", "", "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 20 {
		return 0, "", "", "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, s[open+1 : closing], fields[0], fields[19], nil
}

// descendants lists the processes below root in the process tree.
func descendants(root int) []proc {
	children := map[int][]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		ppid, comm, _, start, err := stat(pid)
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], proc{pid: pid, start: start, comm: comm})
	}
	var out []proc
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			out = append(out, c)
			walk(c.pid)
		}
	}
	walk(root)
	return out
}

func slicesContain(ps []proc, comm string) bool {
	for _, p := range ps {
		if p.comm == comm {
			return true
		}
	}
	return false
}

// lineWaiter closes seen once a line of output starts with prefix.
type lineWaiter struct {
	mu      sync.Mutex
	prefix  string
	partial []byte
	seen    chan struct{}
	once    sync.Once
}

func newLineWaiter(prefix string) *lineWaiter {
	return &lineWaiter{prefix: prefix, seen: make(chan struct{})}
}

func (w *lineWaiter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := strings.IndexByte(string(w.partial), '\n')
		if i < 0 {
			break
		}
		if strings.HasPrefix(string(w.partial[:i]), w.prefix) {
			w.once.Do(func() { close(w.seen) })
		}
		w.partial = w.partial[i+1:]
	}
	return len(b), nil
}
