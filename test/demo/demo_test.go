package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ownergc/ownergc/test/framework"
)

// TestDemoLeavesNothingBehind starts the demo, waits until its control
// plane and the manager are up, kills it, and checks that none of the
// processes it started survives and that its temporary directories are
// gone: after a hangup (the demo cleans up itself) and after SIGKILL (its
// reaper does).
func TestDemoLeavesNothingBehind(t *testing.T) {
	if _, err := framework.AssetsDir(); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "demo"), ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("building the demo: %v", err)
	}
	manager, err := framework.BuildManager(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGHUP", syscall.SIGHUP}, {"SIGKILL", syscall.SIGKILL}} {
		t.Run(c.name, func(t *testing.T) { testKill(t, filepath.Join(bin, "demo"), manager, c.sig) })
	}
}

func testKill(t *testing.T, demoBin, manager string, sig syscall.Signal) {
	// Everything the demo creates in its temporary directory goes under
	// tmp, which must be empty at the end.
	tmp := t.TempDir()
	started := newLineWaiter("==> Scene 1")
	demo, err := framework.StartProcess(framework.ProcessOptions{
		Name: "demo", Path: demoBin, Args: []string{"-manager", manager},
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
