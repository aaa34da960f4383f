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

package framework

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Recorder is an HTTP server that stands where a test must see what is
// sent (a manager's place for the kubectl plugin, the API server a
// kubeconfig names): it records what record makes of each request, then
// answers it with answer. It is closed when the test ends.
type Recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

// StartRecorder starts a Recorder over TLS (with a certificate of its own,
// CAData), or plain HTTP.
func StartRecorder(t testing.TB, tls bool, record func(*http.Request) string, answer http.HandlerFunc) *Recorder {
	r := &Recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, record(req))
		r.mu.Unlock()
		answer(w, req)
	})
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

// Seen returns what was recorded of the requests received so far, in
// order.
func (r *Recorder) Seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// CAData is the PEM of the certificate of a Recorder started over TLS.
func (r *Recorder) CAData() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
}
