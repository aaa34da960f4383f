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

// Package explain_test checks the manager's /explain endpoint on a real
// kube-apiserver: what it answers for objects in the states users ask about,
// and to whom (each caller's own RBAC decides, per object).
package explain_test

import (
	"net/http"
	"os"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/explain/serve"
	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
)

// limits are the manager's /explain limits, smaller than the defaults so
// that tests reach them with a few objects (the tests of the other
// behaviours stay within them).
var limits = explain.Limits{InFlight: 2, Reviews: 8, Reads: 6}

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Manager: &framework.ManagerOptions{
		Metrics: true,
		Explain: serve.Options{Limits: limits, Admitted: held.hold},
	}}, &cp, &manager))
}

// held holds /explain requests in flight while a test arms it: its hold is
// the manager's Admitted hook.
var held = &holder{}

// holder holds the requests admitted while it is armed until released,
// and says when each was admitted.
type holder struct {
	mu       sync.Mutex
	admitted chan struct{}
	release  chan struct{}
}

func (h *holder) hold(*http.Request) {
	h.mu.Lock()
	admitted, release := h.admitted, h.release
	h.mu.Unlock()
	if admitted == nil {
		return
	}
	admitted <- struct{}{}
	<-release
}

// arm holds the requests admitted from now on; each sends on admitted
// once it holds a place. release lets them all go and disarms the holder.
func (h *holder) arm(t *testing.T) (admitted <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.admitted, h.release = make(chan struct{}, limits.InFlight), make(chan struct{})
	var once sync.Once
	release = func() {
		once.Do(func() {
			h.mu.Lock()
			close(h.release)
			h.admitted, h.release = nil, nil
			h.mu.Unlock()
		})
	}
	t.Cleanup(release)
	return h.admitted, release
}

func queryFor(o framework.Object) string {
	return explain.Query(o.GVR, o.Namespace, o.Name).Encode()
}

// mustExplain asks as who and fails unless the answer is 200.
func mustExplain(t *testing.T, who framework.Identity, o framework.Object) explain.Explanation {
	t.Helper()
	code, ex := manager.Explain(t, who, queryFor(o))
	if code != http.StatusOK {
		t.Fatalf("explaining %s as %s: %d, want 200", o, who.Name, code)
	}
	return ex
}

// reader may get every ConfigMap and Secret of its namespace.
func reader(t *testing.T, ns string) framework.Identity {
	return cp.NewIdentity(t, ns, "reader", false, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "events"}, Verbs: []string{"get"}})
}

// configMapReader is an identity of ns, name, that may get ConfigMaps and
// nothing else.
func configMapReader(t *testing.T, ns, name string) framework.Identity {
	return cp.NewIdentity(t, ns, name, false, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
}

// withEventFields fills the fields a core Event needs.
func withEventFields(ns string) framework.Option {
	return func(u *unstructured.Unstructured) {
		u.Object["involvedObject"] = map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "x"}
		u.Object["reason"] = "Test"
		u.Object["message"] = "an event"
	}
}
