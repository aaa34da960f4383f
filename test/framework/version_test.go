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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKubernetesVersion checks that KubernetesVersion is the version of
// k8s.io/kubernetes hack/tools builds the control plane from, and that the
// Makefile takes its ENVTEST_K8S_VERSION from the same place rather than
// naming a version of its own: the binaries the Makefile builds are the ones
// the framework looks for.
func TestKubernetesVersion(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes v(\S+)\s*$`).FindStringSubmatch(read("hack/tools/go.mod"))
	if m == nil {
		t.Fatal("hack/tools/go.mod does not require k8s.io/kubernetes")
	}
	if m[1] != KubernetesVersion {
		t.Errorf("hack/tools/go.mod builds the control plane of Kubernetes v%s, but framework.KubernetesVersion is %s", m[1], KubernetesVersion)
	}
	line := regexp.MustCompile(`(?m)^ENVTEST_K8S_VERSION\s*\??=.*$`).FindString(read("Makefile"))
	if !strings.Contains(line, "hack/tools/go.mod") {
		t.Errorf("the Makefile should take ENVTEST_K8S_VERSION from hack/tools/go.mod, it says: %q", line)
	}
}
