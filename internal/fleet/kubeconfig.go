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
	"errors"
	"fmt"
	"net/url"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigPolicy says which of a kubeconfig's fields that are not plain
// data a fleet accepts. A kubeconfig Secret is written by whoever may write
// Secrets in the cluster namespace, and the manager that reads it holds its
// own token and the right to delete anything: a kubeconfig is data, never
// code. By default every one of these is refused; each opt-in is a manager
// flag (main.go), documented with its risk in docs/security.md.
type KubeconfigPolicy struct {
	// AllowExec accepts exec credential plugins and auth-provider plugins:
	// the manager runs the command a Secret names, with the manager's
	// environment and file system.
	AllowExec bool
	// AllowFiles accepts paths to files (tokenFile, client-certificate,
	// client-key, certificate-authority): the manager reads the file a
	// Secret names, its own service account token included, and sends it
	// to the Secret's server.
	AllowFiles bool
	// AllowProxy accepts proxy-url: the manager sends the cluster's
	// traffic, credentials included, through the proxy a Secret names.
	AllowProxy bool
	// AllowInsecureTLS accepts insecure-skip-tls-verify and http://
	// servers: the credentials are sent to a server that is not verified,
	// or in clear text.
	AllowInsecureTLS bool
}

// KubeconfigError says why a kubeconfig Secret engages no cluster.
type KubeconfigError struct {
	// Refused is true when the kubeconfig is valid but asks for what the
	// policy refuses (KubeconfigRefused), false when it cannot be used at
	// all (KubeconfigInvalid).
	Refused bool
	// Field names the field at fault, as a path into the kubeconfig
	// (users[admin].user.exec), empty when the kubeconfig as a whole is.
	Field string
	// Reason says why, in words.
	Reason string
}

func (e *KubeconfigError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// AsKubeconfigError returns the KubeconfigError in err's chain, or nil.
func AsKubeconfigError(err error) *KubeconfigError {
	var ke *KubeconfigError
	if errors.As(err, &ke) {
		return ke
	}
	return nil
}

// flags names the opt-in flag of each kind of field, for the messages.
const (
	flagExec  = "--insecure-kubeconfig-exec"
	flagFiles = "--insecure-kubeconfig-files"
	flagProxy = "--insecure-kubeconfig-proxy"
	flagTLS   = "--insecure-kubeconfig-tls"
)

// Check decodes a kubeconfig, without acting on any of it, and returns a
// *KubeconfigError unless every field of every cluster and user is plain
// data the policy accepts, and its current context names a cluster with a
// server. Only decoding happens here: clientcmd.Load runs no plugin, reads
// no file and contacts no server (clientcmd's ClientConfig, which does,
// runs only on kubeconfigs that passed).
func (p KubeconfigPolicy) Check(data []byte) error {
	if len(data) == 0 {
		return &KubeconfigError{Reason: "the kubeconfig is empty"}
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return &KubeconfigError{Reason: fmt.Sprintf("the kubeconfig does not parse: %v", err)}
	}
	if cfg.CurrentContext == "" {
		return &KubeconfigError{Field: "current-context", Reason: "it is not set"}
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || ctx == nil {
		return &KubeconfigError{Field: "current-context", Reason: fmt.Sprintf("context %q is not in the kubeconfig", cfg.CurrentContext)}
	}
	if _, ok := cfg.Clusters[ctx.Cluster]; !ok {
		return &KubeconfigError{Field: fmt.Sprintf("contexts[%s].context.cluster", cfg.CurrentContext),
			Reason: fmt.Sprintf("cluster %q is not in the kubeconfig", ctx.Cluster)}
	}
	if _, ok := cfg.AuthInfos[ctx.AuthInfo]; ctx.AuthInfo != "" && !ok {
		return &KubeconfigError{Field: fmt.Sprintf("contexts[%s].context.user", cfg.CurrentContext),
			Reason: fmt.Sprintf("user %q is not in the kubeconfig", ctx.AuthInfo)}
	}
	// Every entry, used or not, in a stable order: a refused field anywhere
	// refuses the Secret, and the message names the same one every time.
	for _, name := range sortedKeys(cfg.Clusters) {
		if err := p.checkCluster(name, cfg.Clusters[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(cfg.AuthInfos) {
		if err := p.checkUser(name, cfg.AuthInfos[name]); err != nil {
			return err
		}
	}
	return nil
}

func (p KubeconfigPolicy) checkCluster(name string, c *clientcmdapi.Cluster) error {
	field := func(f string) string { return fmt.Sprintf("clusters[%s].cluster.%s", name, f) }
	if c == nil {
		return &KubeconfigError{Field: fmt.Sprintf("clusters[%s]", name), Reason: "the cluster is empty"}
	}
	if c.CertificateAuthority != "" && !p.AllowFiles {
		return refused(field("certificate-authority"), "a path to a file of the manager's machine", flagFiles)
	}
	if c.ProxyURL != "" && !p.AllowProxy {
		return refused(field("proxy-url"), "a proxy the cluster's traffic and credentials would go through", flagProxy)
	}
	if c.InsecureSkipTLSVerify && !p.AllowInsecureTLS {
		return refused(field("insecure-skip-tls-verify"), "the server's certificate would not be verified", flagTLS)
	}
	if c.Server == "" {
		return &KubeconfigError{Field: field("server"), Reason: "it is not set"}
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Host == "" {
		return &KubeconfigError{Field: field("server"), Reason: fmt.Sprintf("%q is not a URL with a host", c.Server)}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowInsecureTLS:
	case u.Scheme == "http":
		return refused(field("server"), "an http:// server would receive the credentials in clear text", flagTLS)
	default:
		return &KubeconfigError{Field: field("server"), Reason: fmt.Sprintf("scheme %q is not https", u.Scheme)}
	}
	return nil
}

func (p KubeconfigPolicy) checkUser(name string, u *clientcmdapi.AuthInfo) error {
	field := func(f string) string { return fmt.Sprintf("users[%s].user.%s", name, f) }
	if u == nil {
		return nil
	}
	if u.Exec != nil && !p.AllowExec {
		return refused(field("exec"), "a command the manager would run", flagExec)
	}
	if u.AuthProvider != nil && !p.AllowExec {
		return refused(field("auth-provider"), "a credential plugin the manager would run", flagExec)
	}
	for _, f := range []struct{ name, value string }{
		{"tokenFile", u.TokenFile},
		{"client-certificate", u.ClientCertificate},
		{"client-key", u.ClientKey},
	} {
		if f.value != "" && !p.AllowFiles {
			return refused(field(f.name), "a path to a file of the manager's machine", flagFiles)
		}
	}
	return nil
}

func refused(field, what, flag string) error {
	return &KubeconfigError{Refused: true, Field: field,
		Reason: fmt.Sprintf("refused: %s; kubeconfig Secrets are data, never code (the manager's %s flag accepts it)", what, flag)}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
