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

package fleet

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// kubeconfig writes a kubeconfig of one context, cluster c and user u, with
// extra YAML fields in the cluster and in the user.
func kubeconfigYAML(cluster, user string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster:
    server: https://example.invalid:6443
    certificate-authority-data: Zm9v
%s
users:
- name: u
  user:
    token: abc
%s
`, indent(cluster), indent(user))
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// Every field that is not plain data is refused, naming the field and the
// flag that would accept it; each is accepted with its opt-in and only with
// it; what cannot be used at all is invalid whatever the policy.
func TestKubeconfigPolicy(t *testing.T) {
	all := KubeconfigPolicy{AllowExec: true, AllowFiles: true, AllowProxy: true, AllowInsecureTLS: true}
	for _, c := range []struct {
		name       string
		kubeconfig string
		field      string
		// optIn accepts the field; the zero policy means none does
		// (invalid: refused by every policy).
		optIn   KubeconfigPolicy
		refused bool
	}{
		{name: "plain data", kubeconfig: kubeconfigYAML("", "")},
		{name: "client certificate as data", kubeconfig: kubeconfigYAML("tls-server-name: api", "client-certificate-data: Zm9v\nclient-key-data: Zm9v")},
		{name: "exec", kubeconfig: kubeconfigYAML("", "exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/x']}"),
			field: "users[u].user.exec", optIn: KubeconfigPolicy{AllowExec: true}, refused: true},
		{name: "auth-provider", kubeconfig: kubeconfigYAML("", "auth-provider: {name: oidc, config: {idp-issuer-url: 'https://x'}}"),
			field: "users[u].user.auth-provider", optIn: KubeconfigPolicy{AllowExec: true}, refused: true},
		{name: "token file", kubeconfig: kubeconfigYAML("", "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"),
			field: "users[u].user.tokenFile", optIn: KubeconfigPolicy{AllowFiles: true}, refused: true},
		{name: "client certificate file", kubeconfig: kubeconfigYAML("", "client-certificate: /etc/passwd"),
			field: "users[u].user.client-certificate", optIn: KubeconfigPolicy{AllowFiles: true}, refused: true},
		{name: "client key file", kubeconfig: kubeconfigYAML("", "client-key: /etc/shadow"),
			field: "users[u].user.client-key", optIn: KubeconfigPolicy{AllowFiles: true}, refused: true},
		{name: "certificate authority file", kubeconfig: kubeconfigYAML("certificate-authority: /etc/ssl/ca.pem", ""),
			field: "clusters[c].cluster.certificate-authority", optIn: KubeconfigPolicy{AllowFiles: true}, refused: true},
		{name: "proxy", kubeconfig: kubeconfigYAML("proxy-url: http://proxy.example:3128", ""),
			field: "clusters[c].cluster.proxy-url", optIn: KubeconfigPolicy{AllowProxy: true}, refused: true},
		{name: "insecure", kubeconfig: strings.Replace(kubeconfigYAML("", ""), "certificate-authority-data: Zm9v", "insecure-skip-tls-verify: true", 1),
			field: "clusters[c].cluster.insecure-skip-tls-verify", optIn: KubeconfigPolicy{AllowInsecureTLS: true}, refused: true},
		{name: "http server", kubeconfig: strings.Replace(kubeconfigYAML("", ""), "https://", "http://", 1),
			field: "clusters[c].cluster.server", optIn: KubeconfigPolicy{AllowInsecureTLS: true}, refused: true},
		{name: "an unused user with exec", kubeconfig: kubeconfigYAML("", "") + "- name: other\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}\n",
			field: "users[other].user.exec", optIn: KubeconfigPolicy{AllowExec: true}, refused: true},
		{name: "empty", kubeconfig: "", field: ""},
		{name: "not a kubeconfig", kubeconfig: "{not yaml", field: ""},
		{name: "no current context", kubeconfig: strings.Replace(kubeconfigYAML("", ""), "current-context: c", "", 1), field: "current-context"},
		{name: "unknown cluster", kubeconfig: strings.Replace(kubeconfigYAML("", ""), "{cluster: c,", "{cluster: x,", 1), field: "contexts[c].context.cluster"},
		{name: "no server", kubeconfig: strings.Replace(kubeconfigYAML("", ""), "server: https://example.invalid:6443", "", 1), field: "clusters[c].cluster.server"},
		{name: "another scheme", kubeconfig: strings.Replace(kubeconfigYAML("", ""), "https://", "unix://", 1), field: "clusters[c].cluster.server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			valid := c.field == "" && c.name != "empty" && c.name != "not a kubeconfig"
			err := KubeconfigPolicy{}.Check([]byte(c.kubeconfig))
			if valid {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ke := AsKubeconfigError(err)
			if ke == nil {
				t.Fatalf("accepted (err %v), want it refused", err)
			}
			if ke.Field != c.field || ke.Refused != c.refused {
				t.Errorf("refused %+v, want field %q, refused=%v", ke, c.field, c.refused)
			}
			if !c.refused {
				if err := all.Check([]byte(c.kubeconfig)); err == nil {
					t.Errorf("accepted when every opt-in is on, want it invalid")
				}
				return
			}
			if !strings.Contains(err.Error(), "--insecure-kubeconfig-") {
				t.Errorf("message %q names no flag that accepts it", err)
			}
			if err := c.optIn.Check([]byte(c.kubeconfig)); err != nil {
				t.Errorf("refused with its opt-in %+v: %v", c.optIn, err)
			}
			for _, other := range []KubeconfigPolicy{{AllowExec: true}, {AllowFiles: true}, {AllowProxy: true}, {AllowInsecureTLS: true}} {
				if other == c.optIn {
					continue
				}
				if err := other.Check([]byte(c.kubeconfig)); err == nil {
					t.Errorf("accepted with another opt-in %+v", other)
				}
			}
		})
	}
}

// A Lease named after a cluster is a valid name whatever the length of the
// cluster's name, and two long names that share their beginning get two
// Leases.
func TestLeaseNames(t *testing.T) {
	long := strings.Repeat("a", 250)
	for _, cluster := range []string{"tenant-a", long, long[:240] + ".b-c", strings.Repeat("x.", 126) + "y"} {
		name := engineLeaseName(cluster)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("engineLeaseName(%q) = %q: %v", cluster, name, errs)
		}
	}
	if got := engineLeaseName("tenant-a"); got != "ownergc-engine-tenant-a" {
		t.Errorf("a short name is kept as it is: got %q", got)
	}
	if a, b := engineLeaseName(long+"a"), engineLeaseName(long+"b"); a == b {
		t.Errorf("two clusters share Lease %q", a)
	}
}
