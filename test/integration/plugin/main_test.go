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

// Package plugin_test runs the kubectl-ownergc binary as a user runs it —
// with a kubeconfig for a ServiceAccount and its bearer token — against a
// real kube-apiserver with an ownergc manager running, and checks the lines
// it prints.
package plugin_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
	// plugin is the built kubectl-ownergc binary; workDir holds it, the
	// kubeconfigs and the plugin's discovery cache.
	plugin  string
	workDir string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "ownergc-plugin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if plugin, err = framework.BuildPlugin(workDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The audit log shows which requests the plugin made (a port-forward
	// to a pod is a write: create on pods/portforward).
	if cp, err = framework.StartAuditedControlPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	if manager, err = framework.StartManager(cp.Config, framework.ManagerOptions{Metrics: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer manager.Stop()
	return m.Run()
}

// user is a ServiceAccount of namespace ns that may get and list everything
// in ns, and nothing outside it: a namespace's user, not a cluster admin.
func user(t *testing.T, ns string) framework.Identity {
	return cp.NewIdentity(t, ns, "user", false, rbacv1.PolicyRule{
		APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}})
}

// kubeconfig writes a kubeconfig for who whose context's namespace is ns.
func kubeconfig(t *testing.T, who framework.Identity, ns string) string {
	t.Helper()
	return cp.WriteKubeconfig(t, who, ns)
}

// result is one run of the plugin.
type result = framework.PluginRun

// runPlugin runs the plugin with the kubeconfig and the arguments; the
// discovery cache of every run is the package's.
func runPlugin(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return framework.RunPlugin(plugin, filepath.Join(workDir, "cache"), kubeconfig, args...)
}

// mustRun runs the plugin and fails the test unless it succeeds.
func mustRun(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	r := runPlugin(t, kubeconfig, args...)
	if r.Err != nil {
		t.Fatalf("the plugin failed:\n%s", r)
	}
	t.Logf("%s", r) // shown with -v: what the plugin prints
	return r
}

// withManager are the arguments that make `why` and `graph` ask the
// in-process manager, whose metrics server's certificate is self-signed.
func withManager() []string {
	return []string{"--server-url", "https://" + manager.MetricsAddr, "--manager-insecure-skip-tls-verify"}
}

// wantLines fails the test unless, for each pattern, a line of the output
// matches it (whole line, after trailing spaces are trimmed).
func wantLines(t *testing.T, r result, what string, patterns ...string) {
	t.Helper()
	if missing := framework.UnmatchedPatterns(r.Stdout, patterns...); len(missing) > 0 {
		t.Fatalf("%s: no line matches:\n  %s\n%s", what, strings.Join(missing, "\n  "), r)
	}
}

// waitOutput waits until the plugin, run with args, prints want.
func waitOutput(t *testing.T, kubeconfig, want, why string, args ...string) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if r := runPlugin(t, kubeconfig, args...); !strings.Contains(r.Stdout, want) {
			return fmt.Errorf("want %q in the output:\n%s", want, r)
		}
		return nil
	}, "%s", why)
}

// noLines fails the test if a line of the output matches a pattern.
func noLines(t *testing.T, r result, what string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		re := regexp.MustCompile("^" + p + "$")
		for _, l := range strings.Split(r.Stdout, "\n") {
			if re.MatchString(strings.TrimRight(l, " ")) {
				t.Fatalf("%s: line %q should not be there (it matches %s)\n%s", what, l, p, r)
			}
		}
	}
}

// decode decodes the plugin's JSON output.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		t.Fatalf("decoding the plugin's JSON: %v\n%s", err, r)
	}
}

// q quotes a literal for a pattern.
func q(s string) string { return regexp.QuoteMeta(s) }
