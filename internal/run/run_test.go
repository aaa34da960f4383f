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
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// fakeServer records what serve asks of a manager, and fails where told.
type fakeServer struct {
	checks   []string
	failAt   string
	started  bool
	startErr error
}

func (f *fakeServer) AddHealthzCheck(name string, _ healthz.Checker) error {
	return f.add("healthz " + name)
}

func (f *fakeServer) AddReadyzCheck(name string, _ healthz.Checker) error {
	return f.add("readyz " + name)
}

func (f *fakeServer) add(check string) error {
	if check == f.failAt {
		return errors.New("refused")
	}
	f.checks = append(f.checks, check)
	return nil
}

func (f *fakeServer) Start(context.Context) error {
	f.started = true
	return f.startErr
}

// Both modes end the same way: liveness tied to the process, readiness to
// their check, the manager started on the signal context, and exit code 0
// only when it stopped cleanly.
func TestServeProbesStartsAndExits(t *testing.T) {
	signals = context.Background
	defer func() { signals = ctrl.SetupSignalHandler }()
	ready := func(*http.Request) error { return nil }
	for name, tc := range map[string]struct {
		server  *fakeServer
		code    int
		started bool
	}{
		"a clean stop":         {server: &fakeServer{}, code: 0, started: true},
		"a manager that fails": {server: &fakeServer{startErr: errors.New("lost the lease")}, code: 1, started: true},
		"no liveness probe":    {server: &fakeServer{failAt: "healthz ping"}, code: 1},
		"no readiness check":   {server: &fakeServer{failAt: "readyz graph-synced"}, code: 1},
	} {
		t.Run(name, func(t *testing.T) {
			if code := serve(tc.server, "graph-synced", ready, "Starting"); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if tc.server.started != tc.started {
				t.Errorf("started: %t, want %t", tc.server.started, tc.started)
			}
			if tc.started && !slices.Equal(tc.server.checks, []string{"healthz ping", "readyz graph-synced"}) {
				t.Errorf("checks %v", tc.server.checks)
			}
		})
	}
}

// The fleet mode refuses an unknown cluster source, and outside a pod it
// needs the namespace of the kubeconfig Secrets, before anything is built.
func TestFleetNeedsAKnownSourceAndANamespace(t *testing.T) {
	if code := Fleet(&rest.Config{}, ctrl.Options{}, FleetOptions{Source: "clusterapi"}); code != 1 {
		t.Errorf("an unknown source: exit code %d, want 1", code)
	}
	if ns, err := clusterNamespace("tenants"); ns != "tenants" || err != nil {
		t.Errorf("clusterNamespace(tenants) = %q, %v", ns, err)
	}
	defer func(path string) { serviceAccountNamespace = path }(serviceAccountNamespace)
	serviceAccountNamespace = filepath.Join(t.TempDir(), "namespace")
	if _, err := clusterNamespace(""); err == nil || !strings.Contains(err.Error(), "--cluster-namespace") {
		t.Errorf("outside a pod, without --cluster-namespace: %v, want an error naming the flag", err)
	}
	for content, want := range map[string]string{"ownergc-system\n": "ownergc-system", " \n": ""} {
		if err := os.WriteFile(serviceAccountNamespace, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if ns, err := clusterNamespace(""); ns != want || (want == "") != (err != nil) {
			t.Errorf("in a pod whose namespace file holds %q: %q, %v; want %q", content, ns, err, want)
		}
	}
}

// The fleet mode runs the garbage collector at GOGC=50, unless GOGC is set.
func TestFleetGCPercent(t *testing.T) {
	unset := func(string) (string, bool) { return "", false }
	if p, ok := fleetGCPercent(unset); !ok || p != 50 {
		t.Errorf("without GOGC: %d, %t; want 50", p, ok)
	}
	set := func(k string) (string, bool) { return "200", k == "GOGC" }
	if _, ok := fleetGCPercent(set); ok {
		t.Error("with GOGC set, the fleet mode must leave the collector alone")
	}
}

// While the engines' lists stream, the fleet mode runs the garbage
// collector at GOGC=100; at rest again, at its setting at rest.
func TestListBurstGC(t *testing.T) {
	before := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	b := listBurstGC(50)
	b.Start()
	if got := debug.SetGCPercent(50); got != 100 {
		t.Errorf("GOGC while the lists stream: %d, want 100", got)
	}
	b.Start()
	b.End()
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GOGC after the burst: %d, want 50 (the setting at rest)", got)
	}
}
