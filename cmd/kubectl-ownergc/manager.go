package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// managerFlags say how to reach the ownergc manager's metrics server, which
// serves /explain and /debug/graph.
type managerFlags struct {
	serverURL  string
	namespace  string
	deployment string
	port       int
	timeout    time.Duration
}

func (f *managerFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.serverURL, "server-url", "", "URL of the ownergc manager's metrics server (https://host:port); by default the plugin port-forwards to the manager's pod through the API server. Its certificate is verified unless --insecure-skip-tls-verify is given")
	fs.StringVar(&f.namespace, "manager-namespace", "ownergc-system", "Namespace of the ownergc manager's Deployment (for the automatic port-forward)")
	fs.StringVar(&f.deployment, "manager-deployment", "ownergc-controller-manager", "Name of the ownergc manager's Deployment (for the automatic port-forward)")
	fs.IntVar(&f.port, "manager-port", 8443, "Port of the manager's metrics server in its pod (for the automatic port-forward)")
	fs.DurationVar(&f.timeout, "manager-timeout", 30*time.Second, "How long to wait for the manager to answer")
}

// managerClient asks the manager's metrics server, with the caller's own
// credentials: the manager authenticates them with a TokenReview and
// authorizes with the caller's RBAC.
type managerClient struct {
	base *url.URL
	http *http.Client
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

// connectManager reaches the manager: at --server-url, or through a
// port-forward to its pod. Close the client when done.
func (o *options) connectManager(ctx context.Context, c *clients, f managerFlags) (*managerClient, error) {
	insecure := o.config.Insecure != nil && *o.config.Insecure
	if f.serverURL != "" {
		u, err := url.Parse(f.serverURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("--server-url %q is not an http(s)://host:port URL", f.serverURL)
		}
		hc, err := managerHTTPClient(c.config, insecure, f.timeout)
		if err != nil {
			return nil, err
		}
		return &managerClient{base: u, http: hc, via: u.String(), close: func() {}}, nil
	}
	pod, err := c.managerPod(ctx, f.namespace, f.deployment)
	if err != nil {
		return nil, err
	}
	local, stop, err := c.portForward(ctx, f.namespace, pod, f.port)
	if err != nil {
		return nil, fmt.Errorf("port-forwarding to pod %s/%s: %w", f.namespace, pod, err)
	}
	// The manager's certificate is self-signed; the connection goes through
	// the API server, to the pod it names.
	hc, err := managerHTTPClient(c.config, true, f.timeout)
	if err != nil {
		stop()
		return nil, err
	}
	return &managerClient{
		base: &url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", local)}, http: hc,
		via: fmt.Sprintf("pod %s/%s, port-forwarded", f.namespace, pod), close: stop,
	}, nil
}

// managerHTTPClient sends the kubeconfig's credentials (a bearer token, a
// token file, an exec or auth provider's token) but not its client
// certificate, nor impersonation: the manager authenticates bearer tokens
// only.
func managerHTTPClient(cfg *rest.Config, insecure bool, timeout time.Duration) (*http.Client, error) {
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, err
	}
	tc.Impersonate = transport.ImpersonationConfig{}
	base := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12}, //nolint:gosec // only when asked, or through a port-forward
		TLSHandshakeTimeout: 10 * time.Second,
	}
	rt, err := transport.HTTPWrappersForConfig(tc, base)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: timeout}, nil
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
