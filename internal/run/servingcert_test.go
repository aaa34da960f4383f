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

package run

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Without a mounted certificate the metrics server presents a self-signed
// ECDSA P-256 certificate that a client trusting it verifies for 127.0.0.1
// and localhost.
func TestTheMetricsServerIsSelfSignedWithAnECDSAKeyWhenNothingIsMounted(t *testing.T) {
	cfg := &tls.Config{}
	SelfSignedUnlessMounted(t.TempDir())(cfg)
	if cfg.GetCertificate == nil {
		t.Fatal("with no certificate mounted, the option should serve a self-signed one (GetCertificate is nil)")
	}
	cert, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatalf("the self-signed certificate: %v", err)
	}
	key, ok := cert.Leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || key.Curve != elliptic.P256() {
		t.Errorf("the self-signed certificate's key is %T, want an ECDSA P-256 key", cert.Leaf.PublicKey)
	}
	if d := cert.Leaf.NotAfter.Sub(cert.Leaf.NotBefore); d < selfSignedValidity {
		t.Errorf("the self-signed certificate is valid for %s, want at least %s", d, selfSignedValidity)
	}

	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = io.WriteString(c, "ok")
	}()
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if err := cert.Leaf.VerifyHostname(name); err != nil {
			t.Errorf("the self-signed certificate is not valid for %s: %v", name, err)
		}
	}
	c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("a client trusting the self-signed certificate could not connect: %v", err)
	}
	defer func() { _ = c.Close() }()
	if b, err := io.ReadAll(c); err != nil || string(b) != "ok" {
		t.Errorf("read %q, %v from the server; want \"ok\"", b, err)
	}
}

// A certificate mounted in the directory is left to controller-runtime,
// which serves it and reloads it when it changes; so is a GetCertificate
// another option set.
func TestAMountedCertificateIsLeftToControllerRuntime(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("mounted"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &tls.Config{}
	SelfSignedUnlessMounted(dir)(cfg)
	if cfg.GetCertificate != nil {
		t.Error("with tls.crt and tls.key mounted, the option should leave the certificate to controller-runtime (GetCertificate is set)")
	}

	// Only one of the two: controller-runtime would not serve it either.
	if err := os.Remove(filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	SelfSignedUnlessMounted(dir)(cfg)
	if cfg.GetCertificate == nil {
		t.Error("with tls.crt alone, the option should serve a self-signed certificate (GetCertificate is nil)")
	}

	theirs := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	cfg = &tls.Config{GetCertificate: theirs}
	SelfSignedUnlessMounted(t.TempDir())(cfg)
	if cfg.GetCertificate == nil {
		t.Fatal("the option removed another option's GetCertificate")
	}
	if c, _ := cfg.GetCertificate(nil); c != nil {
		t.Error("the option replaced another option's GetCertificate")
	}
}

// The self-signed certificate is kept for its year but its last day, and
// replaced at the first handshake in that day.
func TestTheSelfSignedCertificateIsReplacedInItsLastDay(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s := &selfSigned{now: func() time.Time { return now }}
	first, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(selfSignedValidity - selfSignedRenewal - time.Minute)
	if again, err := s.get(); err != nil || again != first {
		t.Errorf("a day and a minute before its end, the certificate was replaced (%v)", err)
	}
	now = now.Add(2 * time.Minute)
	renewed, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	if renewed == first {
		t.Fatal("in its last day, the certificate was not replaced")
	}
	if !renewed.Leaf.NotAfter.After(now.Add(selfSignedValidity - time.Minute)) {
		t.Errorf("the new certificate ends %s, want a year after %s", renewed.Leaf.NotAfter, now)
	}
}
