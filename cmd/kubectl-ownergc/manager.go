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
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
)

// managerFlags say how to reach the ownergc manager's metrics server, which
// serves /explain and /debug/graph, and how to trust it.
type managerFlags struct {
	serverURL  string
	namespace  string
	deployment string
	binding    string
	port       int
	timeout    time.Duration
	// caFile, insecure and serverName say how the manager's certificate
	// is verified; kubectl's --insecure-skip-tls-verify applies to the API
	// server alone.
	caFile     string
	insecure   bool
	serverName string
	// cluster is the member of a fleet asked about (--cluster); context
	// the kubeconfig context the manager is reached and authenticated
	// through (--manager-context).
	cluster string
	context string
}

func (f *managerFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.serverURL, "server-url", "", "URL of the ownergc manager's metrics server (https://host:port; http:// is refused, since your token would cross the network in cleartext). By default the plugin port-forwards to the manager's pod through the API server. Its certificate is verified against --manager-ca-file, or the system's roots")
	fs.StringVar(&f.caFile, "manager-ca-file", "", "PEM file of the certificate authority that signed the manager's serving certificate: the certificate is verified against it, at --server-url and through the port-forward (where it must be valid for --manager-tls-server-name)")
	fs.BoolVar(&f.insecure, "manager-insecure-skip-tls-verify", false, "Do not verify the certificate of the manager at --server-url. Your bearer token is then sent to whoever answers at that address: use it only where nobody can stand in between (a manager on this machine, or behind kubectl port-forward). kubectl's --insecure-skip-tls-verify applies to the API server alone")
	fs.StringVar(&f.serverName, "manager-tls-server-name", "", "Name the manager's certificate must be valid for (default: the host of --server-url; through the port-forward, <deployment>-metrics-service.<namespace>.svc), with --manager-ca-file")
	fs.StringVar(&f.binding, "manager-clusterrolebinding", "", "ClusterRoleBinding of the manager's ClusterRole, which names the ServiceAccount the manager runs as (default: "+defaultManagerBinding+", or the one labelled "+ownergcNameLabel+" that binds a ClusterRole *-"+managerRoleSuffix+"): the port-forward goes only to a pod running as that ServiceAccount")
	fs.StringVar(&f.namespace, "manager-namespace", "", "Namespace of the ownergc manager (default: that of the ServiceAccount its ClusterRoleBinding names; when given, that ServiceAccount must be in it)")
	fs.StringVar(&f.deployment, "manager-deployment", "ownergc-controller-manager", "Name of the ownergc manager's Deployment, in the manager's namespace (for the automatic port-forward)")
	fs.IntVar(&f.port, "manager-port", 8443, "Port of the manager's metrics server in its pod (for the automatic port-forward)")
	fs.DurationVar(&f.timeout, "manager-timeout", 30*time.Second, "How long to wait for the manager to answer")
	fs.StringVar(&f.cluster, "cluster", "", "Member cluster of an ownergc fleet to ask about (the name of its kubeconfig Secret on the fleet's host). Objects are read through the current context, which should be the member's; the fleet's manager is reached at --server-url, or through --manager-context, and answers a caller the member authorizes (your token of the member), or a host identity granted get on clustergcstatuses/explain (graph: clustergcstatuses/graph) of the member on the host")
	fs.StringVar(&f.context, "manager-context", "", "Kubeconfig context through which the manager is reached (its port-forward) and whose bearer token it is sent (default: the current context). With --cluster, a context of the fleet's host. --token and --token-file apply to the current context only")
}

// managerClient asks the manager's metrics server, with the caller's own
// credentials: the manager authenticates them with a TokenReview and
// authorizes with the caller's RBAC.
type managerClient struct {
	base *url.URL
	http *http.Client
	// cluster is the fleet member every request asks about (--cluster).
	cluster string
	// via says how the manager is reached, for messages.
	via   string
	close func()
}

// managerStatusError is a manager's answer other than 200.
type managerStatusError struct {
	path string
	code int
	body string
}

func (e *managerStatusError) Error() string {
	msg := fmt.Sprintf("the manager answered %d %s to %s", e.code, http.StatusText(e.code), e.path)
	if b := strings.TrimSpace(e.body); b != "" {
		if len(b) > 300 {
			b = b[:300] + "…"
		}
		msg += ": " + b
	}
	return msg
}

// connectManager reaches the manager through c, or the clients of
// --manager-context. Close the client when done.
func (o *options) connectManager(ctx context.Context, c *clients, f managerFlags) (*managerClient, error) {
	if f.cluster != "" {
		if err := validName("--cluster", f.cluster); err != nil {
			return nil, err
		}
	}
	if f.context == "" {
		return c.connectManager(ctx, f)
	}
	mc, err := o.contextClients(f.context)
	if err != nil {
		return nil, fmt.Errorf("--manager-context %s: %w", display(f.context), err)
	}
	mc.forward = c.forward
	return mc.connectManager(ctx, f)
}

// contextClients are the clients of a context of the kubeconfig, with its
// own credentials: what connectManager needs of them.
func (o *options) contextClients(name string) (*clients, error) {
	loader := o.config.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, err
	}
	if _, ok := raw.Contexts[name]; !ok {
		return nil, errors.New("no such context in the kubeconfig")
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(raw, name, &clientcmd.ConfigOverrides{}, loader.ConfigAccess()).ClientConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{config: cfg, kube: kube, dynamic: dyn}, nil
}

// connectManager reaches the manager: at --server-url, or through a
// port-forward to its pod. Close the client when done.
func (c *clients) connectManager(ctx context.Context, f managerFlags) (*managerClient, error) {
	if f.caFile != "" && f.insecure {
		return nil, errors.New("give --manager-ca-file or --manager-insecure-skip-tls-verify, not both")
	}
	if f.serverURL != "" {
		u, err := url.Parse(f.serverURL)
		switch {
		case err == nil && u.Scheme == "http":
			return nil, fmt.Errorf("--server-url %s is refused: the plugin sends your bearer token to the manager, never in cleartext; give its https:// URL", display(f.serverURL))
		case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil:
			return nil, fmt.Errorf("--server-url %s is not an https://host:port URL", display(f.serverURL))
		}
		tc, err := f.tlsConfig(u.Hostname(), false)
		if err != nil {
			return nil, err
		}
		hc, err := managerHTTPClient(c.config, tc, f.timeout)
		if err != nil {
			return nil, err
		}
		return &managerClient{base: u, http: hc, cluster: f.cluster, via: u.Redacted(), close: func() {}}, nil
	}
	if f.namespace != "" {
		if err := validNamespace("--manager-namespace", f.namespace); err != nil {
			return nil, err
		}
	}
	id, err := c.findManagerIdentity(ctx, f)
	if err != nil {
		return nil, err
	}
	pod, err := c.replicaPod(ctx, id, f.cluster)
	if err == nil && pod == "" {
		pod, err = c.managerPod(ctx, id, f.deployment)
		if err != nil && f.cluster != "" {
			err = fmt.Errorf("%w\nWith --cluster, the plugin port-forwards to the replica that collects the member, which the member's ClusterGCStatus in namespace %s names, when you may get it (the Role %s on the fleet's host grants that)", err, id.namespace, fleetMemberReaderRole)
		}
	}
	if err != nil {
		return nil, err
	}
	tc, err := f.tlsConfig(fmt.Sprintf("%s-metrics-service.%s.svc", f.deployment, id.namespace), true)
	if err != nil {
		return nil, err
	}
	forward := c.forward
	if forward == nil {
		forward = c.portForward
	}
	local, stop, err := forward(ctx, id.namespace, pod, f.port)
	if err != nil {
		return nil, fmt.Errorf("port-forwarding to pod %s/%s: %w", id.namespace, pod, err)
	}
	hc, err := managerHTTPClient(c.config, tc, f.timeout)
	if err != nil {
		stop()
		return nil, err
	}
	return &managerClient{
		base: &url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", local)}, http: hc, cluster: f.cluster,
		via: fmt.Sprintf("pod %s/%s, port-forwarded", id.namespace, pod), close: stop,
	}, nil
}

// tlsConfig is how the manager's certificate is verified: against
// --manager-ca-file, for --manager-tls-server-name or serverName; not at
// all with --manager-insecure-skip-tls-verify; against the system's roots
// otherwise. Through a port-forward (portForwarded) it is not verified
// without --manager-ca-file: the manager's certificate is self-signed by
// default, and the connection goes through the API server, over its
// verified TLS, to the pod it names, which the plugin checked runs as the
// manager's ServiceAccount.
func (f managerFlags) tlsConfig(serverName string, portForwarded bool) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if f.serverName != "" {
		tc.ServerName = f.serverName
	}
	switch {
	case f.caFile != "":
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--manager-ca-file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--manager-ca-file %s holds no PEM certificate", f.caFile)
		}
	case f.insecure || portForwarded:
		tc.InsecureSkipVerify = true //nolint:gosec // asked for with --manager-insecure-skip-tls-verify, or to a pod checked through the API server
	}
	return tc, nil
}

// managerHTTPClient sends the kubeconfig's bearer token (a token, a token
// file, an exec or auth provider's token) but not its client certificate,
// nor a user name and password, nor impersonation: the manager
// authenticates bearer tokens only. It follows no redirect: one would take
// the token elsewhere.
func managerHTTPClient(cfg *rest.Config, tlsConfig *tls.Config, timeout time.Duration) (*http.Client, error) {
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, err
	}
	tc.Impersonate = transport.ImpersonationConfig{}
	tc.Username, tc.Password = "", ""
	base := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	rt, err := transport.HTTPWrappersForConfig(tc, base)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the manager redirected to %s, which the plugin does not follow: it would take your token there", req.URL.Redacted())
	}}, nil
}

// hasBearerCredentials reports whether cfg carries credentials the manager
// can authenticate.
func hasBearerCredentials(cfg *rest.Config) bool {
	return cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil
}

// get requests path?query; an answer other than 200 is a
// *managerStatusError.
func (m *managerClient) get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	u := *m.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	if m.cluster != "" {
		q := url.Values{}
		maps.Copy(q, query)
		q.Set("cluster", m.cluster)
		query = q
	}
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var ve *tls.CertificateVerificationError
		if errors.As(err, &ve) {
			err = fmt.Errorf("%w (give the certificate authority that signed the manager's certificate with --manager-ca-file, or, knowing that your token then goes to whoever answers, --manager-insecure-skip-tls-verify; kubectl's --insecure-skip-tls-verify applies to the API server alone)", err)
		}
		return nil, fmt.Errorf("requesting %s from the manager (%s): %w", path, m.via, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the manager's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &managerStatusError{path: path, code: resp.StatusCode, body: string(body)}
	}
	return body, nil
}
