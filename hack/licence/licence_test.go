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

// Package licence checks that every Go file of the repository — the
// module's, hack/monitoring's, tracked or new — begins with the licence
// header of hack/boilerplate.go.txt (the one controller-gen writes into
// the files it generates), after its build constraints if it has any.
package licence

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// skipped are the directories no file of the repository's own is in:
// downloaded tools and control-plane binaries, git's.
var skipped = map[string]bool{"bin": true, ".git": true, "vendor": true, "node_modules": true, "testdata": true}

// hasHeader reports whether src begins with header, after build
// constraint lines and the blank lines that follow them.
func hasHeader(src, header string) bool {
	for strings.HasPrefix(src, "//go:build") || strings.HasPrefix(src, "// +build") || strings.HasPrefix(src, "\n") {
		_, src, _ = strings.Cut(src, "\n")
	}
	return strings.HasPrefix(src, header)
}

func TestEveryGoFileCarriesTheLicenceHeader(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	header, err := os.ReadFile(filepath.Join(root, "hack", "boilerplate.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skipped[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if !hasHeader(string(src), string(header)) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s does not begin with the licence header of hack/boilerplate.go.txt", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files under %s: the walk missed the repository", checked, root)
	}
}

// The check can fail: a file without the header, or with it after the
// package clause, is caught; build constraints before it are allowed.
func TestTheLicenceCheckCatchesAFileWithoutTheHeader(t *testing.T) {
	const header = "/*\nCopyright\n*/\n"
	for src, want := range map[string]bool{
		header + "\npackage p\n":                          true,
		"//go:build tools\n\n" + header + "\npackage p\n": true,
		"package p\n":                          false,
		"package p\n\n" + header:               false,
		"// Package p does things.\n" + header: false,
	} {
		if got := hasHeader(src, header); got != want {
			t.Errorf("hasHeader(%q) = %v, want %v", src, got, want)
		}
	}
}
