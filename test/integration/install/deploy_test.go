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

package install_test

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/diff"
)

// TestMakeDeployChangesNoTrackedFile runs `make deploy-manifests`, which
// prints what `make deploy` applies, with an image of its own: it must print
// the objects of dist/install.yaml with that image in the Deployment, and
// leave every file of config/ as it was. (`make deploy` used to set the image
// in config/manager/kustomization.yaml itself, which left the tree modified,
// and the installer check of `make test` and `make verify` failing.)
func TestMakeDeployChangesNoTrackedFile(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	const image = "registry.example.com/team/ownergc:v0.0.0-deploy-test"
	before := treeDigest(t, filepath.Join(repoRoot, "config"))
	statusBefore := gitStatus(t, "config")

	cmd := exec.Command("make", "--no-print-directory", "deploy-manifests", "IMG="+image)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make deploy-manifests: %v\n%s", err, stderr.String())
	}

	if after := treeDigest(t, filepath.Join(repoRoot, "config")); after != before {
		t.Errorf("make deploy-manifests changed files under config/: git status before:\n%s\nafter:\n%s", statusBefore, gitStatus(t, "config"))
	}
	installYAML := string(readRepoFile(t, "dist/install.yaml"))
	const shipped = "image: ghcr.io/ownergc/ownergc:latest"
	if strings.Count(installYAML, shipped) != 1 {
		t.Fatalf("dist/install.yaml should name the image once as %q", shipped)
	}
	if want := strings.Replace(installYAML, shipped, "image: "+image, 1); string(out) != want {
		t.Errorf("make deploy-manifests IMG=%s should print dist/install.yaml with that image; the difference:\n%s",
			image, diff.Diff(want, string(out)))
	}
}

// treeDigest returns a digest of the names and contents of the files under
// dir.
func treeDigest(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path + "\x00"))
		h.Write(data)
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// gitStatus returns `git status --porcelain` of a path of the repository,
// or why it cannot.
func gitStatus(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all", "--", path)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "(git status: " + err.Error() + ")"
	}
	return string(out)
}
