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

// Package run runs ownergc's manager in the mode main.go dispatches to: one
// cluster (Cluster: the engine, on a controller-runtime manager) or a fleet
// (Fleet: an engine per cluster of a cluster source, on a multicluster-runtime
// manager of the host). Both build their manager, set up what runs beside the
// engines (SetupEngine), and share the rest (serve): the liveness and
// readiness probes, the start, and the exit code.
//
// Files: run.go holds what both modes share, cluster.go the single-cluster
// mode, fleet.go the fleet mode.
package run

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/controllers"
	"github.com/ownergc/ownergc/internal/engine"
)

// Scheme is the managers' scheme: the built-in types and the GCPolicy API.
// Cluster and Fleet use it when their options name no other.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(ownergcv1alpha1.AddToScheme(s))
	return s
}()

var setupLog = ctrl.Log.WithName("setup")

// signals returns the context that SIGTERM and SIGINT cancel (tests replace
// it: controller-runtime's may be set up once per process).
var signals = ctrl.SetupSignalHandler

// SetupEngine adds what runs beside an engine on its manager: the GCPolicy
// controller, whose status is refreshed every refresh (0: its default) and,
// when only its lastSyncTime would change, written every heartbeat (0: at
// every refresh).
func SetupEngine(mgr manager.Manager, eng *engine.Engine, refresh, heartbeat time.Duration) error {
	r := gcPolicyReconciler(eng, refresh, heartbeat)
	r.Client, r.Elected = mgr.GetClient(), mgr.Elected()
	return r.SetupWithManager(mgr)
}

// gcPolicyReconciler is the GCPolicy reconciler of eng, in either mode,
// without its client and election (its controller's).
func gcPolicyReconciler(eng *engine.Engine, refresh, heartbeat time.Duration) *controllers.GCPolicyReconciler {
	return &controllers.GCPolicyReconciler{
		Engine:          eng,
		Recorder:        eng.EventRecorder("ownergc-gcpolicy"),
		RefreshInterval: refresh,
		Heartbeat:       heartbeat,
	}
}

// SetupMember returns what runs beside a fleet member's engine: its
// GCPolicy controller (GCPolicyReconciler.NewMemberController), with the
// engine's queue clock, refresh and heartbeat as in SetupEngine, waiting for
// at most syncTimeout for the GCPolicies' first list (0: controller-runtime's
// default), logging with ctx's logger. A cluster that does not serve
// GCPolicies makes it return a NoKindMatchError (see fleet.Options.Setup).
func SetupMember(ctx context.Context, eng *engine.Engine, refresh, heartbeat, syncTimeout time.Duration) ([]manager.Runnable, error) {
	r := gcPolicyReconciler(eng, refresh, heartbeat)
	if clk := eng.QueueClock(); clk != nil {
		// A queue whose unfinished-work gauges tick every few seconds, as
		// the engine's own queues do.
		r.NewQueue = func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: clk})
		}
	}
	c, err := r.NewMemberController(eng.Connection(), ctrl.LoggerFrom(ctx), syncTimeout)
	if err != nil {
		return nil, err
	}
	return []manager.Runnable{c}, nil
}

// MemberStatusHeartbeat is how often a fleet member's GCPolicy status is
// written when nothing but its lastSyncTime changed: a thousand idle
// members would otherwise take a hundred writes a second from their API
// servers' budget, for a time stamp.
const MemberStatusHeartbeat = time.Minute

// server is what serve needs of a manager: a controller-runtime manager,
// or the multicluster-runtime manager of a fleet's host.
type server interface {
	AddHealthzCheck(name string, check healthz.Checker) error
	AddReadyzCheck(name string, check healthz.Checker) error
	Start(ctx context.Context) error
}

// serve ties liveness to the process and readiness to ready (named
// readyName), starts mgr until the process is told to stop (SIGTERM,
// SIGINT), logging started with keysAndValues first, and returns the exit
// code: 0 when the manager stopped cleanly, 1 when it could not be set up
// or exited with an error.
func serve(mgr server, readyName string, ready healthz.Checker, started string, keysAndValues ...any) int {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return failed(err, "Unable to set up health checks")
	}
	if err := mgr.AddReadyzCheck(readyName, ready); err != nil {
		return failed(err, "Unable to set up readiness checks")
	}
	setupLog.Info(started, keysAndValues...)
	if err := mgr.Start(signals()); err != nil {
		return failed(err, "Manager exited with an error")
	}
	return 0
}

// failed logs why the manager cannot go on and returns its exit code.
func failed(err error, msg string, keysAndValues ...any) int {
	setupLog.Error(err, msg, keysAndValues...)
	return 1
}
