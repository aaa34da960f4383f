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
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The image is built from what the Dockerfile copies, and nothing else: the
// manager (package main, with all its files) and the kubectl plugin must
// build from exactly those files of the build context (what .dockerignore
// leaves), so that a file the Dockerfile forgets fails here rather than in
// `make docker-build`, which needs a Docker engine this test does not.
func TestTheImageBuildsFromWhatTheDockerfileCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the manager and the plugin")
	}
	ignored := readDockerignore(t)
	ctx := t.TempDir()
	copies := 0
	for _, c := range dockerfileCopies(t) {
		for _, src := range c.sources {
			matches, err := filepath.Glob(src)
			if err != nil || len(matches) == 0 {
				t.Fatalf("COPY %s matches nothing in the build context (%v)", src, err)
			}
			for _, m := range matches {
				// Docker copies a directory's contents into the
				// destination, and a file into a destination that ends
				// with a slash, or to the destination itself.
				dst := filepath.Join(ctx, c.dest)
				if !isDir(m) && strings.HasSuffix(c.dest, "/") {
					dst = filepath.Join(dst, filepath.Base(m))
				}
				copies += copyTree(t, m, dst, ignored)
			}
		}
	}
	if copies == 0 {
		t.Fatal("the Dockerfile copies no file")
	}
	for _, pkg := range []string{".", "./cmd/kubectl-ownergc"} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", os.DevNull, pkg)
		cmd.Dir = ctx
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go build %s from the files the Dockerfile copies (%d files) failed: %v\n%s", pkg, copies, err, out)
		}
	}
}

type dockerCopy struct {
	sources []string
	dest    string
}

// dockerfileCopies returns the COPY instructions of the Dockerfile's build
// stage (those that copy from the build context, not --from another stage).
func dockerfileCopies(t *testing.T) []dockerCopy {
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []dockerCopy
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || !strings.EqualFold(fields[0], "COPY") || strings.HasPrefix(fields[1], "--from") {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		out = append(out, dockerCopy{sources: args[:len(args)-1], dest: args[len(args)-1]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readDockerignore returns the patterns of .dockerignore.
func readDockerignore(t *testing.T) []string {
	data, err := os.ReadFile(".dockerignore")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(l, "/"), "/"))
	}
	return out
}

// excluded reports whether path (relative to the context) is left out of
// the build context by one of the patterns (a pattern matches a path or
// any of its parent directories, as Docker's do).
func excluded(path string, patterns []string) bool {
	for _, p := range patterns {
		for q := path; q != "." && q != "/" && q != ""; q = filepath.Dir(q) {
			if ok, _ := filepath.Match(p, q); ok {
				return true
			}
		}
	}
	return false
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// copyTree copies src (a file or a directory) to dst, leaving out what the
// patterns exclude, and returns the number of files copied.
func copyTree(t *testing.T, src, dst string, ignored []string) int {
	n := 0
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if excluded(path, ignored) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = in.Close() }()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			_ = out.Close()
			return err
		}
		n++
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	return n
}
