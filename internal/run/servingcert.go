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
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// MetricsCertDir is where the metrics server looks for a serving
// certificate and its key (tls.crt and tls.key, controller-runtime's
// names), controller-runtime's default directory: a certificate mounted
// there is served, and reloaded when it changes, by controller-runtime.
var MetricsCertDir = filepath.Join(os.TempDir(), "k8s-metrics-server", "serving-certs")

const (
	// selfSignedValidity is how long a self-signed serving certificate is
	// valid (controller-runtime's are valid a year too).
	selfSignedValidity = 365 * 24 * time.Hour
	// selfSignedRenewal is how long before its end a self-signed serving
	// certificate is replaced, at the next handshake.
	selfSignedRenewal = 24 * time.Hour
)

// SelfSignedUnlessMounted returns a TLS option for the metrics server: when
// dir holds no tls.crt and tls.key, the server presents a self-signed
// certificate for localhost and 127.0.0.1 with an ECDSA P-256 key, made
// here (well under a millisecond) and replaced in the last day of its year.
// Without it, controller-runtime makes its self-signed certificate with
// two 2048-bit RSA keys (a CA's and the server's): 0.1 to 0.3 CPU seconds
// of prime searching at every start, a tenth of the fleet process's CPU
// when many members are engaged at once (`go run ./test/bench -only
// storm`). Nobody verifies either certificate (a scraper of a self-signed
// endpoint skips verification); both encrypt. When dir holds a
// certificate, or the key cannot be made, the option leaves the
// certificate to controller-runtime.
func SelfSignedUnlessMounted(dir string) func(*tls.Config) {
	return func(c *tls.Config) {
		if c.GetCertificate != nil || mounted(dir) {
			return
		}
		s := &selfSigned{now: time.Now}
		if _, err := s.get(); err != nil {
			return
		}
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.get() }
	}
}

// mounted reports whether dir holds a certificate and a key under
// controller-runtime's names, as it checks them.
func mounted(dir string) bool {
	for _, name := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(dir, name)); os.IsNotExist(err) {
			return false
		}
	}
	return true
}

// selfSigned is a self-signed serving certificate, made again when it is
// about to end.
//
// Concurrency: mu guards cert and notAfter; handshakes call get from their
// own goroutines.
type selfSigned struct {
	now func() time.Time

	mu       sync.Mutex
	cert     *tls.Certificate
	notAfter time.Time
}

// get returns the certificate, made again in its last day; a certificate
// that could not be made again is served until its end.
func (s *selfSigned) get() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.cert != nil && now.Before(s.notAfter.Add(-selfSignedRenewal)) {
		return s.cert, nil
	}
	cert, notAfter, err := newSelfSigned(now)
	if err != nil {
		if s.cert != nil && now.Before(s.notAfter) {
			return s.cert, nil
		}
		return nil, err
	}
	s.cert, s.notAfter = cert, notAfter
	return cert, nil
}

// newSelfSigned makes a self-signed certificate for serving localhost and
// 127.0.0.1, valid from an hour before now (clocks differ) for
// selfSignedValidity.
func newSelfSigned(now time.Time) (*tls.Certificate, time.Time, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("making the metrics server's key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("making the metrics server's certificate: %w", err)
	}
	notAfter := now.Add(selfSignedValidity)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "ownergc-metrics"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("making the metrics server's certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("parsing the metrics server's certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, notAfter, nil
}
