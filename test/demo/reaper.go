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

// The demo cleans up after itself when it ends normally or on SIGINT,
// SIGTERM, SIGHUP and SIGPIPE. For every other way it can die (SIGKILL, a
// crash, an OOM kill) it starts a reaper first: a copy of its own binary
// that waits, on a pipe only the demo holds open, for the demo to be gone,
// then kills every process the demo started and removes its temporary
// directory. kube-apiserver and etcd are started by envtest in process
// groups of their own, so neither a signal to the demo's group nor
// Pdeathsig reaches them; the reaper finds them by a marker in their
// environment, which every process the demo starts inherits.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// markerEnv is set in the demo's environment, so every process it
	// starts carries it: OWNERGC_DEMO_MARKER=<pid>-<random>.
	markerEnv = "OWNERGC_DEMO_MARKER"
	// reaperEnv makes the demo binary run as the reaper of the given marker.
	reaperEnv = "OWNERGC_DEMO_REAPER"
)

// reaperPipe is the write end of the pipe the reaper reads; it closes when
// the demo process ends, however it ends. Held here so that it is never
// garbage collected (which would close it).
var reaperPipe *os.File //nolint:unused // only held, never read: see above

// markChildren sets the marker in this process's environment, so that
// every process started from now on inherits it, and returns it.
func markChildren() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	marker := fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b))
	return marker, os.Setenv(markerEnv, marker)
}

// startReaper starts the reaper of marker, which removes dir when done.
func startReaper(marker, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(self, dir)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, markerEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, reaperEnv+"="+marker)
	// stdout and stderr go to /dev/null: the terminal may be gone, or the
	// pipe broken, by the time it has work to do.
	cmd.Stdin = r
	// Its own process group: a Ctrl-C or hangup meant for the demo does not
	// reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("starting the reaper: %w", err)
	}
	_ = cmd.Process.Release()
	reaperPipe = w
	return nil
}

// reap is the reaper's main: it waits for the demo to exit, kills what the
// demo left running and removes the demo's directory.
func reap(marker string, args []string) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	if marker == "" || len(args) != 1 || !strings.HasPrefix(filepath.Base(args[0]), "ownergc-demo-") {
		return 2
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // EOF: the demo has exited
	killMarked(marker)
	_ = os.RemoveAll(args[0])
	return 0
}

// killMarked terminates every process that carries the marker, and kills
// those still there after five seconds.
func killMarked(marker string) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, pid := range marked(marker) {
			_ = syscall.Kill(pid, sig)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(marked(marker)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// marked lists the processes (but this one) whose environment holds the
// marker. A process that has exited and not yet been reaped has an empty
// environment, so it is not listed.
func marked(marker string) []int {
	want := []byte(markerEnv + "=" + marker)
	self := os.Getpid()
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
