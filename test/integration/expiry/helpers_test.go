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

package expiry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/expiry"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/run"
	"github.com/ownergc/ownergc/test/framework"
)

// annotated sets annotations on the object, keeping those it has.
func annotated(kv ...string) framework.Option {
	return func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			a[kv[i]] = kv[i+1]
		}
		u.SetAnnotations(a)
	}
}

// ttl and expires annotate an object with ownergc.io/ttl and
// ownergc.io/expires.
func ttl(v string) framework.Option { return annotated(ownergcv1alpha1.TTLAnnotation, v) }

func expires(v string) framework.Option { return annotated(ownergcv1alpha1.ExpiresAnnotation, v) }

// in is an ownergc.io/expires value d from now, in RFC 3339 with
// fractions of a second.
func in(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }

// setExpiry puts the expiry collector's spec in force (and the mode) and
// waits until the policy is Ready.
func setExpiry(t *testing.T, mode ownergcv1alpha1.Mode, e ownergcv1alpha1.ExpiryCollector, change ...func(*ownergcv1alpha1.GCPolicySpec)) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	return framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Mode = mode
		s.Collectors.Expiry = e
		for _, f := range change {
			f(s)
		}
	})
}

// enabled is expiry enabled, with rules.
func enabled(rules ...ownergcv1alpha1.ExpiryRule) ownergcv1alpha1.ExpiryCollector {
	return ownergcv1alpha1.ExpiryCollector{Enabled: true, Rules: rules}
}

// resetOnCleanup puts the policy back to the defaults when the test ends
// (expiry disabled, Enforce), while its manager still runs.
func resetOnCleanup(t *testing.T) {
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) { *s = ownergcv1alpha1.DefaultSpec() })
	})
}

// startManager starts a manager for the test and puts the policy back to
// the defaults when the test ends (cleanups run last first: the reset,
// then the manager's stop).
func startManager(t *testing.T) *framework.Manager {
	t.Helper()
	m := cp.StartManager(t, framework.ManagerOptions{StatusRefresh: time.Second})
	resetOnCleanup(t)
	return m
}

// expiryStatus is the expiry collector's state in the engine.
func expiryStatus(t *testing.T, e *engine.Engine) apigc.Status {
	t.Helper()
	for _, c := range e.Status().Collectors {
		if c.Name == expiry.Name {
			return c
		}
	}
	t.Fatal("the engine reports no expiry collector")
	return apigc.Status{}
}

// events returns the events of namespace ns about the object uid with
// reason, oldest first: their notes.
func events(t *testing.T, ns string, uid types.UID, reason string) []string {
	t.Helper()
	list, err := cp.Clientset.EventsV1().Events(ns).List(framework.Context(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason {
			out = append(out, e.Type+" "+e.Note)
		}
	}
	return out
}

// waitEvent waits for an event with reason about o, and returns its note.
func waitEvent(t *testing.T, o framework.Object, reason string) string {
	t.Helper()
	var got []string
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if got = events(t, o.Namespace, o.UID, reason); len(got) == 0 {
			return fmt.Errorf("no %s event about %s", reason, o)
		}
		return nil
	}, "an event %s should be recorded about %s", reason, o)
	return got[0]
}

// waitDeleting waits until o is gone or being deleted (a Namespace stays
// Terminating on a control plane without kube-controller-manager).
func waitDeleting(t *testing.T, o framework.Object, why string) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		u, ok := cp.Get(t, o)
		if !ok || u.GetDeletionTimestamp() != nil {
			return nil
		}
		return fmt.Errorf("%s is still there, not being deleted", o)
	}, "%s", why)
}

// manager is an in-process manager wired as main.go wires it, with what the
// framework's managers do not take: leader election, and the expiry
// collector's hook before a deletion.
type manager struct {
	engine *engine.Engine
	mgr    ctrl.Manager
	stop   context.CancelFunc
	done   chan struct{}
}

// managerOptions are what startElected takes.
type managerOptions struct {
	// lease, when set, runs the manager with leader election on this Lease
	// in namespace default, not released when it stops: a standby waits
	// for it to expire (leaseDuration).
	lease         string
	leaseDuration time.Duration
	// beforeDelete is engine.Tuning.ExpiryBeforeDelete.
	beforeDelete func(ctx context.Context, obj *graph.Object)
}

// startOwnManager starts such a manager and waits until its graph has
// synced; it is stopped when the test ends, or by stop.
func startOwnManager(t *testing.T, o managerOptions) *manager {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	skip := true
	opts := ctrl.Options{
		Scheme:                 framework.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip, CacheSyncTimeout: 30 * time.Second},
	}
	if o.lease != "" {
		renew, retry := o.leaseDuration*3/4, 500*time.Millisecond
		opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = true, o.lease, "default"
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &o.leaseDuration, &renew, &retry
	}
	mgr, eng, err := engine.NewTunedManager(cfg, opts, engine.Tuning{ExpiryBeforeDelete: o.beforeDelete})
	if err != nil {
		t.Fatalf("building a manager: %v", err)
	}
	if err := run.SetupEngine(mgr, eng, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &manager{engine: eng, mgr: mgr, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if err := mgr.Start(ctx); err != nil {
			t.Logf("manager: %v", err)
		}
	}()
	t.Cleanup(m.Stop)
	framework.Eventually(t, 2*time.Minute, func() error { return eng.GraphSyncedCheck(nil) }, "the manager's graph should sync")
	return m
}

// Stop stops the manager and waits (a bounded time) until it has.
func (m *manager) Stop() {
	m.stop()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
	}
}

// namespaceObject is namespace ns, as the framework names objects.
func namespaceObject(t *testing.T, ns string) framework.Object {
	t.Helper()
	n, err := cp.Clientset.CoreV1().Namespaces().Get(framework.Context(t), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return framework.Object{Kind: namespaces, Name: ns, UID: n.UID}
}
