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

package expiry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/test/framework"
)

// kubectl ownergc expiring lists what expires, the next first, read with
// the user's own permissions (the GCPolicy's rules only for a user who may
// read it); why says when an object expires, from the manager and without
// it.
func TestThePluginSaysWhatExpires(t *testing.T) {
	m := cp.StartManager(t, framework.ManagerOptions{StatusRefresh: time.Second, Metrics: true})
	resetOnCleanup(t)
	ns := framework.CreateNamespace(t, cp.Client)
	setExpiry(t, ownergcv1alpha1.ModeEnforce, enabled(ownergcv1alpha1.ExpiryRule{GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"},
		Namespaces: []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(ns)}, After: metav1.Duration{Duration: 7 * 24 * time.Hour}}))
	hour := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	cp.Create(t, framework.ConfigMaps, ns, "in-an-hour", expires(hour))
	cp.Create(t, framework.ConfigMaps, ns, "in-two-hours", ttl("2h"))
	cp.Create(t, framework.ConfigMaps, ns, "by-rule")
	cp.Create(t, framework.ConfigMaps, ns, "unreadable", ttl("7days"))

	read := []string{"get", "list"}
	admin := cp.NewIdentity(t, ns, "reader", true, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: read})
	local := cp.NewIdentity(t, ns, "local", false, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: read})

	r := runPlugin(t, cp.WriteKubeconfig(t, admin, ns), "expiring")
	wantLines(t, r, "expiring lists the next first, with when, by what and what ownergc does",
		`OBJECT +EXPIRES +IN +BY +OWNERGC`,
		`ConfigMap/in-an-hour +`+regexp.QuoteMeta(hour)+` +(59m\d+s|1h) +expires=`+regexp.QuoteMeta(hour)+` +deletes it \(Background\)`,
		`ConfigMap/in-two-hours +\S+ +1h59m\d*s? +ttl=2h +deletes it \(Background\)`,
		`ConfigMap/by-rule +\S+ +6d23h +rule 1 +deletes it \(Background\)`,
		`ConfigMap/unreadable +- +- +ttl="7days" +never: the annotation cannot be read`)
	if first := strings.Index(r.Stdout, "in-an-hour"); first < 0 || first > strings.Index(r.Stdout, "in-two-hours") || strings.Index(r.Stdout, "in-two-hours") > strings.Index(r.Stdout, "by-rule") {
		t.Errorf("not the next first:\n%s", r.Stdout)
	}

	r = runPlugin(t, cp.WriteKubeconfig(t, admin, ns), "expiring", "--within", "90m", "-o", "json")
	var l struct {
		Items []struct {
			Object struct{ Name string }
			Expiry decision.Expiry
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &l); err != nil {
		t.Fatalf("decoding: %v\n%s", err, r)
	}
	if len(l.Items) != 1 || l.Items[0].Object.Name != "in-an-hour" || l.Items[0].Expiry.State != decision.ExpiryScheduled {
		t.Errorf("--within 90m lists %+v, want the one expiring in an hour", l.Items)
	}

	r = runPlugin(t, cp.WriteKubeconfig(t, local, ns), "expiring")
	if !strings.Contains(r.Stderr, "the GCPolicy is not known") {
		t.Errorf("a user who may not read the GCPolicy is not told its rules are not known:\n%s", r)
	}
	wantLines(t, r, "without the GCPolicy, the annotations alone",
		`ConfigMap/in-an-hour +.* +nothing unless expiry is enabled \(GCPolicy not read\)`)
	if strings.Contains(r.Stdout, "by-rule") {
		t.Errorf("listed by a rule the user may not read:\n%s", r)
	}

	for _, server := range [][]string{
		{"--server-url", "https://" + m.MetricsAddr, "--manager-insecure-skip-tls-verify"},
		{"--server-url", "https://127.0.0.1:1", "--manager-insecure-skip-tls-verify"}, // no manager: API reads
	} {
		r = runPlugin(t, cp.WriteKubeconfig(t, admin, ns), append([]string{"why", "configmap/in-two-hours"}, server...)...)
		wantLines(t, r, "why says when the object expires",
			`Expiry: +expires at \S+ \(in 1h59m\d*s?\), by annotation ownergc\.io/ttl=2h; ownergc will then delete it with propagation Background`)
		r = runPlugin(t, cp.WriteKubeconfig(t, admin, ns), append([]string{"why", "configmap/by-rule"}, server...)...)
		wantLines(t, r, "why names the rule",
			`Expiry: +expires at \S+ \(in 6d23h\), by rule 1 of the GCPolicy \(configmaps in namespaces `+ns+`, 7d after creation\).*`)
	}
}

var pluginBinary string

// runPlugin builds the plugin once and runs it; it fails the test when
// the plugin fails.
func runPlugin(t *testing.T, kubeconfig string, args ...string) framework.PluginRun {
	t.Helper()
	if pluginBinary == "" {
		var err error
		if pluginBinary, err = framework.BuildPlugin(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		bin := pluginBinary
		t.Cleanup(func() { pluginBinary = ""; _ = os.Remove(bin) })
	}
	r := framework.RunPlugin(pluginBinary, filepath.Join(t.TempDir(), "cache"), kubeconfig, args...)
	if r.Err != nil {
		t.Fatalf("the plugin failed: %v\n%s", r.Err, r)
	}
	return r
}

// wantLines fails the test unless, for each pattern, a line of the output
// matches it whole (trailing spaces trimmed).
func wantLines(t *testing.T, r framework.PluginRun, what string, patterns ...string) {
	t.Helper()
	for _, p := range framework.UnmatchedPatterns(r.Stdout, patterns...) {
		t.Errorf("%s: no line matches %s\n%s", what, p, r)
	}
}
