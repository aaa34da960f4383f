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
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ownergc/ownergc/test/framework"
)

// negotiatedProtocol opens a TLS connection to the metrics server offering
// HTTP/2 and HTTP/1.1, as an HTTP/2-capable client does, and returns the
// protocol the server chose. The server may start listening a moment after
// the process starts (it generates its certificate first).
func negotiatedProtocol(t *testing.T, p *process) string {
	t.Helper()
	var proto string
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if err := p.Alive(); err != nil {
			return err
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp",
			fmt.Sprintf("127.0.0.1:%d", p.MetricsPort),
			&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			return err
		}
		defer conn.Close()
		proto = conn.ConnectionState().NegotiatedProtocol
		return nil
	}, "the metrics server of %s should accept a TLS handshake", p.Name)
	return proto
}

// TestMetricsServerDisablesHTTP2ByDefault checks the HTTP/2 rapid-reset
// mitigation: the metrics server negotiates HTTP/1.1 with a client that
// offers h2, unless the manager runs with --enable-http2.
func TestMetricsServerDisablesHTTP2ByDefault(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		p := startManager(t, "http1")
		if got := negotiatedProtocol(t, p); got != "http/1.1" {
			t.Fatalf("a client offering h2 and http/1.1 negotiated %q, want http/1.1: HTTP/2 must be off by default", got)
		}
	})
	t.Run("--enable-http2", func(t *testing.T) {
		p := startManager(t, "http2", "--enable-http2")
		if got := negotiatedProtocol(t, p); got != "h2" {
			t.Fatalf("with --enable-http2, a client offering h2 and http/1.1 negotiated %q, want h2", got)
		}
	})
}
