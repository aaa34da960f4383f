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
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/explain/serve"
	"github.com/ownergc/ownergc/internal/run"
)

// In-process managers log to the file $OWNERGC_TEST_LOG, when set, at the
// level $OWNERGC_TEST_LOG_LEVEL (default 2: decisions).
func init() {
	path := os.Getenv("OWNERGC_TEST_LOG")
	if path == "" {
		ctrl.SetLogger(logr.Discard())
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		panic(err)
	}
	level := 2
	if v, err := strconv.Atoi(os.Getenv("OWNERGC_TEST_LOG_LEVEL")); err == nil {
		level = v
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(f), zap.Level(zapcore.Level(-level))))
}

// Scheme knows the built-in types and the GCPolicy API: the manager's.
var Scheme = run.Scheme

// Manager is an ownergc manager running in the test process, wired exactly
// as main.go wires it.
type Manager struct {
	Engine *engine.Engine
	Mgr    ctrl.Manager
	// MetricsAddr is the metrics server's host:port, with Metrics.
	MetricsAddr string
	*running
}

// running is a manager started in the test process.
//
// Concurrency: err is written before exited is closed; Stop may be called
// from any goroutine, any number of times.
type running struct {
	cancel context.CancelFunc
	exited chan struct{}
	err    error
	// grace bounds how long Stop waits for the manager to exit.
	grace time.Duration
	stop  sync.Once
}

// runInBackground runs start until Stop.
func runInBackground(start func(context.Context) error, grace time.Duration) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, exited: make(chan struct{}), grace: grace}
	go func() {
		r.err = start(ctx)
		close(r.exited)
	}()
	return r
}

// hasExited returns an error once the manager has exited.
func (r *running) hasExited() error {
	select {
	case <-r.exited:
		return fmt.Errorf("the manager exited: %v", r.err)
	default:
		return nil
	}
}

// ExitError is how the manager ended, once Stop has returned: nil when it
// stopped cleanly, an error when it failed or had not exited by Stop's
// grace period.
func (r *running) ExitError() error {
	select {
	case <-r.exited:
		return r.err
	default:
		return fmt.Errorf("the manager had not exited %s after it was told to stop", r.grace)
	}
}

// Stop stops the manager and waits for it (at most its grace period) to
// exit; calls after the first do nothing. How it ended is ExitError's.
func (r *running) Stop() {
	r.stop.Do(func() {
		r.cancel()
		select {
		case <-r.exited:
		case <-time.After(r.grace):
		}
	})
}

// ManagerOptions tune an in-process manager.
type ManagerOptions struct {
	// QPS and Burst of the collector's client (default unthrottled-ish: 1000).
	QPS   float32
	Burst int
	// StatusRefresh is the GCPolicy status refresh interval (default 10s).
	StatusRefresh time.Duration
	// ReadyTimeout bounds the wait for the manager to be ready (default
	// two minutes).
	ReadyTimeout time.Duration
	// User, with ControlPlane.StartManager, is the user the manager
	// authenticates as (a member of system:masters; default: the control
	// plane's admin), so that its requests can be told apart in the audit
	// log.
	User string
	// Metrics serves the metrics server (/metrics, /debug/graph, /explain)
	// on a free local port, with authentication and authorization as in
	// production.
	Metrics bool
	// PodQuarantine replaces the terminated-Pod collector's 40 s
	// quarantine of missing Nodes (engine.Tuning).
	PodQuarantine time.Duration
	// Explain replaces /explain's limits and sets its test hook
	// (engine.Tuning).
	Explain serve.Options
	// DormantCheck runs the engine with dormant kinds, checked this often
	// (engine.Tuning; the fleet's engines run so by default).
	DormantCheck time.Duration
}

// metricsServer is an in-process manager's metrics server: none, or, when
// enabled, one on a free local port with authentication and authorization
// as in production.
func metricsServer(enabled bool) (metricsserver.Options, error) {
	if !enabled {
		return metricsserver.Options{BindAddress: "0"}, nil
	}
	port, err := FreePort()
	if err != nil {
		return metricsserver.Options{}, err
	}
	return metricsserver.Options{BindAddress: fmt.Sprintf("127.0.0.1:%d", port), SecureServing: true}, nil
}

// StartManager starts an in-process manager against cfg and waits until its
// graph has synced.
func StartManager(cfg *rest.Config, o ManagerOptions) (*Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	if o.QPS > 0 {
		cfg.QPS, cfg.Burst = o.QPS, o.Burst
	}
	skip := true
	metrics, err := metricsServer(o.Metrics)
	if err != nil {
		return nil, err
	}
	mgr, eng, err := engine.NewTunedManager(cfg, ctrl.Options{
		Scheme:                 Scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: "0",
		// A controller that waits for more than its own informers (the
		// whole cache, say) fails quickly rather than after two minutes.
		Controller: config.Controller{SkipNameValidation: &skip, CacheSyncTimeout: 30 * time.Second},
	}, engine.Tuning{PodQuarantine: o.PodQuarantine, Explain: o.Explain, DormantCheck: o.DormantCheck})
	if err != nil {
		return nil, err
	}
	if err := run.SetupEngine(mgr, eng, o.StatusRefresh, 0); err != nil {
		return nil, err
	}
	m := &Manager{Engine: eng, Mgr: mgr, running: runInBackground(mgr.Start, 30*time.Second)}
	if o.Metrics {
		m.MetricsAddr = metrics.BindAddress
	}
	readyTimeout := 2 * time.Minute
	if o.ReadyTimeout > 0 {
		readyTimeout = o.ReadyTimeout
	}
	if err := Poll(readyTimeout, func() error {
		if err := m.hasExited(); err != nil {
			return err
		}
		return eng.GraphSyncedCheck(nil)
	}); err != nil {
		m.cancel()
		return nil, fmt.Errorf("waiting for the graph to sync: %w", err)
	}
	return m, nil
}

// Get requests a path of the metrics server with a bearer token (none when
// empty); it retries while the server is not listening yet.
func (m *Manager) Get(path, bearer string) (int, []byte, error) {
	if m.MetricsAddr == "" {
		return 0, nil, fmt.Errorf("the manager serves no metrics server (ManagerOptions.Metrics)")
	}
	return getMetricsServer("https://"+m.MetricsAddr+path, bearer, nil)
}

// Explain asks the manager's /explain (on its metrics server) with query
// (explain.Query, or uid=) and the bearer token of who, and returns the
// status code and, when 200, the explanation.
func (m *Manager) Explain(t testing.TB, who Identity, query string) (int, explain.Explanation) {
	t.Helper()
	return explainAt(t, m.Get, who, query)
}

// explainAt asks /explain through get with query and who's token.
func explainAt(t testing.TB, get func(path, bearer string) (int, []byte, error), who Identity, query string) (int, explain.Explanation) {
	t.Helper()
	code, body, err := get(explain.Path+"?"+query, who.Token)
	if err != nil {
		t.Fatalf("GET %s: %v", explain.Path, err)
	}
	var ex explain.Explanation
	if code == http.StatusOK {
		if err := json.Unmarshal(body, &ex); err != nil {
			t.Fatalf("decoding the explanation: %v\n%s", err, body)
		}
	}
	return code, ex
}

// Describe says what the manager knows of o and of its kind, for failure
// messages: the kind's monitor, discovery, o's node in the graph, the
// monitors' status and the queues.
func (m *Manager) Describe(o Object) string {
	gk := o.GroupKind()
	ks := m.Engine.KindState(gk)
	st := m.Engine.Status()
	node := "not in the graph"
	if n := m.Engine.Graph().Node(o.UID); n != nil {
		node = fmt.Sprintf("%+v", m.Engine.Graph().Describe(n))
	}
	discovered := "no discovery snapshot"
	if snap := m.Engine.Discovered(); snap != nil {
		r, ok := snap.ResourceFor(o.GVR.GroupVersion().WithKind(o.Kind.Kind))
		discovered = fmt.Sprintf("latest discovery (%s ago): served=%t %+v", time.Since(snap.Time).Round(time.Millisecond), ok, r)
	}
	return fmt.Sprintf("ownergc: kind %s %+v, %d nodes; %s; node %s; monitors=%d synced=%t syncing=%v failed=%s; queues: attemptToDelete=%d attemptToOrphan=%d",
		gk, ks, m.Engine.Graph().KindLen(gk), discovered, node, st.Monitored, st.Synced, st.Syncing, DescribeFailures(st.Failed), st.AttemptToDelete, st.AttemptToOrphan)
}

// DescribeFailures lists the resources and group-versions a manager reports
// as failed, "(none)" when there are none.
func DescribeFailures(failed []engine.Failure) string {
	if len(failed) == 0 {
		return "(none)"
	}
	var parts []string
	for _, f := range failed {
		parts = append(parts, fmt.Sprintf("%s/%s/%s: %s", f.Group, f.Version, f.Resource, f.Message))
	}
	return strings.Join(parts, "; ")
}

// WaitObserved waits until the manager's graph has observed every object
// through its informers, so that what the test does next is seen after them.
func (m *Manager) WaitObserved(t testing.TB, objs ...Object) {
	t.Helper()
	Eventually(t, CascadeTimeout, func() error {
		for _, o := range objs {
			if !m.Engine.Graph().Owner(o.UID).Observed {
				return fmt.Errorf("%s is not observed yet", o)
			}
		}
		return nil
	}, "ownergc should observe the objects")
}

// WaitLinked waits until the manager's graph links dependent to owner (with
// blocking set, by a reference that blocks the owner's deletion), so that
// what the test does next is seen after that link.
func (m *Manager) WaitLinked(t testing.TB, owner, dependent Object, blocking bool) {
	t.Helper()
	Eventually(t, CascadeTimeout, func() error {
		n := m.Engine.Graph().Node(owner.UID)
		if n == nil {
			return fmt.Errorf("%s is not in the graph", owner)
		}
		for _, d := range m.Engine.Graph().Dependents(n, blocking) {
			if d.Identity.UID == dependent.UID {
				return nil
			}
		}
		return fmt.Errorf("%s not linked (blocking=%v) yet", dependent, blocking)
	}, "ownergc's graph should link %s as a dependent of %s", dependent, owner)
}
