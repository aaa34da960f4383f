// Package faults_test is the fault-injection tier: each test changes the API
// surface or the control plane under a running collector — groups switched
// off at an API server restart, aggregated APIs removed and restored, CRD
// versions changed mid-cascade, conversion webhooks that are down, duplicate
// owner references, watch expiry, API server restarts — and checks both
// halves of the collector's rule: nothing with a live owner is deleted, and
// everything whose owners are gone is collected, nothing stuck in deletion.
//
// The package has a control plane of its own, since its tests restart
// kube-apiserver; they run one at a time, each with its own manager.
package faults_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if cp, err = framework.StartControlPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	return m.Run()
}

// current is the manager of the running test, for diagnoses.
var current struct {
	sync.Mutex
	m *framework.Manager
}

// startManager starts an in-process manager that stops when the test ends.
func startManager(t *testing.T) *framework.Manager {
	t.Helper()
	return startManagerWith(t, framework.ManagerOptions{})
}

func startManagerWith(t *testing.T, o framework.ManagerOptions) *framework.Manager {
	t.Helper()
	m, err := framework.StartManager(cp.Config, o)
	if err != nil {
		t.Fatalf("starting ownergc: %v", err)
	}
	current.Lock()
	current.m = m
	current.Unlock()
	cp.Diagnose = diagnose
	t.Cleanup(func() {
		m.Stop()
		current.Lock()
		current.m = nil
		current.Unlock()
	})
	return m
}

// diagnose describes what the running manager knows of o's kind.
func diagnose(o framework.Object) string {
	current.Lock()
	m := current.m
	current.Unlock()
	if m == nil {
		return "ownergc: no manager running"
	}
	gk := o.GroupKind()
	ks := m.Engine.KindState(gk)
	st := m.Engine.Status()
	n := m.Engine.Graph().Node(o.UID)
	node := "not in the graph"
	if n != nil {
		node = fmt.Sprintf("%+v", m.Engine.Graph().Describe(n))
	}
	return fmt.Sprintf("ownergc: kind %s %+v, %d nodes; node %s; synced=%t failed=%v; queues: attemptToDelete=%d attemptToOrphan=%d",
		gk, ks, m.Engine.Graph().KindLen(gk), node, st.Synced, st.Failed, st.AttemptToDelete, st.AttemptToOrphan)
}

// waitWatched waits until the manager watches gk (synced) or, with
// watched false, no longer watches it.
func waitWatched(t *testing.T, m *framework.Manager, gk schema.GroupKind, watched bool) {
	t.Helper()
	framework.Eventually(t, framework.CRDTimeout, func() error {
		ks := m.Engine.KindState(gk)
		if watched && !(ks.Watched && ks.Synced) {
			return fmt.Errorf("%s: %+v", gk, ks)
		}
		if !watched && ks.Watched {
			return fmt.Errorf("%s is still watched", gk)
		}
		return nil
	}, "ownergc should %s %s", map[bool]string{true: "watch", false: "stop watching"}[watched], gk)
}

// waitInGraph waits until every object is observed in the manager's graph.
func waitInGraph(t *testing.T, m *framework.Manager, objs ...framework.Object) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		for _, o := range objs {
			n := m.Engine.Graph().Node(o.UID)
			if n == nil || !m.Engine.Graph().Describe(n).Observed {
				return fmt.Errorf("%s is not observed yet", o)
			}
		}
		return nil
	}, "objects should be observed by ownergc")
}

// withField sets a top-level field of the object (a RuntimeClass's handler).
func withField(name string, value any) framework.Option {
	return func(u *unstructured.Unstructured) { u.Object[name] = value }
}
