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

// Package framework starts the real control plane that ownergc's integration
// tests, demo and benchmarks run against, and holds everything those share,
// so that no test package keeps a copy of its own: the control plane
// (controlplane.go) and its audit log (audit.go, requests.go),
// kube-controller-manager (kcm.go), a package's suite (suite.go), fleets
// (fleet.go), in-process managers (manager.go: their /explain too) and the
// manager binary (process.go), objects of any kind and the waits on them
// (objects.go), one cascade of each kind (cascades.go), CRDs (crd.go),
// deletion logs (deletions.go), events (events.go), identities
// (identities.go), the GCPolicy in force (policy.go), the objects of the
// API-level collectors (workloads.go, csr.go), faults (faults.go,
// aggregated.go), servers that record what is sent to them (recorder.go),
// YAML manifests (manifests.go), command output (lines.go), fresh
// namespaces and bounded waits (here).
//
// The kube-apiserver, etcd and kube-controller-manager binaries are built from
// the Go module proxy by `make envtest-assets` into bin/k8s/v<version>; nothing
// is downloaded from anywhere else.
package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubernetesVersion is the version of the control plane binaries that
// `make envtest-assets` builds: the version of k8s.io/kubernetes that
// hack/tools/go.mod requires, from which the Makefile takes its
// ENVTEST_K8S_VERSION (TestKubernetesVersion checks both).
const KubernetesVersion = "1.37.1"

const modulePath = "github.com/ownergc/ownergc"

// RepoRoot finds the root of the ownergc module by walking up from the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// AssetsDir returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS when set, otherwise bin/k8s/v<version> in the module.
// It fails with instructions when the binaries are missing.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "k8s", "v"+KubernetesVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("control plane binary %s not found in %s: run 'make envtest-assets' first (it builds them from the Go module proxy)", bin, dir)
		}
	}
	return dir, nil
}

// NewEnvironment returns an envtest environment that uses the locally built
// binaries and installs ownergc's CRDs from config/crd/bases.
func NewEnvironment() (*envtest.Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}, nil
}

// CreateNamespace creates a fresh namespace for one test. Namespaces never
// finish terminating on a control plane without kube-controller-manager, so
// every test gets its own rather than reusing one.
func CreateNamespace(t testing.TB, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("creating test namespace: %v", err)
	}
	return ns.Name
}

// Eventually polls cond every poll interval until it returns nil or timeout
// passes, then fails the test with msg and the last error cond returned.
func Eventually(t testing.TB, timeout time.Duration, cond func() error, msg string, args ...any) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(msg, args...), err)
	}
}

// Consistently checks cond until the duration passes and fails the test at the
// first error. It is for asserting that something does not happen (an object
// survives), after the event that would make it happen has been processed.
func Consistently(t testing.TB, duration time.Duration, cond func() error, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(duration)
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", fmt.Sprintf(msg, args...), err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Poll calls cond until it returns nil or timeout passes, waiting a little
// longer after each failure (20ms, doubling up to a few hundred); it returns
// the last error, wrapped with the time waited.
func Poll(timeout time.Duration, cond func() error) error {
	return poll(timeout, 20*time.Millisecond, 250*time.Millisecond, cond)
}

// PollEvery is Poll at a fixed interval, for measuring how soon something
// happens.
func PollEvery(timeout, interval time.Duration, cond func() error) error {
	return poll(timeout, interval, interval, cond)
}

// poll calls cond every interval, doubling it while it is below limit.
func poll(timeout, interval, limit time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		}
		time.Sleep(interval)
		if interval < limit {
			interval *= 2
		}
	}
}
