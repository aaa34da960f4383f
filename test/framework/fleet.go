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
	"cmp"
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/ownergc/ownergc/controllers"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/internal/run"
)

// FleetManager is an ownergc manager in the fleet mode running in the test
// process, wired as main.go wires it with --cluster-source=kubeconfig-secrets.
type FleetManager struct {
	Fleet *fleet.Fleet
	Mgr   mcmanager.Manager
	// MetricsAddr is the address of the host's metrics server (/metrics,
	// and /explain and /debug/graph per member), with FleetOptions.Metrics.
	MetricsAddr string
	// running's Stop stops the manager and waits for it, and every
	// engine, to exit.
	*running
}

// FleetOptions tune an in-process fleet manager.
type FleetOptions struct {
	// Namespace of the kubeconfig Secrets on the host.
	Namespace string
	// Shard, ReplicaID and LeaseDuration: see fleet.HostOptions.
	Shard         bool
	ReplicaID     string
	LeaseDuration time.Duration
	// StatusRefresh is the GCPolicy status refresh interval (default 10s).
	StatusRefresh time.Duration
	// Beside, when set, returns more to run beside each cluster's engine,
	// after the GCPolicy controller.
	Beside func(cluster string) manager.Runnable
	// Kubeconfig is what the kubeconfig Secrets may use beyond plain data
	// (main.go's --insecure-kubeconfig-* flags).
	Kubeconfig fleet.KubeconfigPolicy
	// MaxObjects and OverLimitRetryAfter: see fleet.Options
	// (--max-objects-per-cluster).
	MaxObjects          int
	OverLimitRetryAfter time.Duration
	// ConcurrentLists: see fleet.Options.
	ConcurrentLists int
	// DormantCheck: see fleet.Options (default here FleetDormantCheck:
	// the fleet's tests run with dormant kinds, woken within seconds).
	DormantCheck time.Duration
	// Metrics serves the host's metrics server (/metrics, and /explain and
	// /debug/graph per member) on a free local port, with authentication
	// and authorization as in production.
	Metrics bool
	// QPS and Burst are each member's client rate limit (default 1000 and
	// 2000: out of the tests' way).
	QPS   float32
	Burst int
}

// FleetDormantCheck is how often a test fleet's engines check their dormant
// kinds by default: often enough that a test's first object of a kind is
// seen within the waits of the tests written before kinds went dormant.
const FleetDormantCheck = 2 * time.Second

// StartFleetManager starts an in-process fleet manager on the host cluster
// cfg; it does not wait for any cluster.
func StartFleetManager(cfg *rest.Config, o FleetOptions) (*FleetManager, error) {
	skip := true
	metrics, err := metricsServer(o.Metrics)
	if err != nil {
		return nil, err
	}
	mgr, f, err := fleet.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	}, fleet.HostOptions{Namespace: o.Namespace, Shard: o.Shard, ReplicaID: o.ReplicaID, LeaseDuration: o.LeaseDuration, Kubeconfig: o.Kubeconfig},
		fleet.Options{
			MaxObjects:          o.MaxObjects,
			OverLimitRetryAfter: o.OverLimitRetryAfter,
			ConcurrentLists:     o.ConcurrentLists,
			DormantCheck:        cmp.Or(o.DormantCheck, FleetDormantCheck),
			Scheme:              Scheme,
			Config: func(c *rest.Config) {
				c.QPS, c.Burst = cmp.Or(o.QPS, 1000), cmp.Or(o.Burst, 2000)
			},
			Setup: func(ctx context.Context, cluster string, eng *engine.Engine) ([]manager.Runnable, error) {
				beside, err := run.SetupMember(ctx, eng, o.StatusRefresh, run.MemberStatusHeartbeat, 30*time.Second)
				if err != nil && !meta.IsNoMatchError(err) {
					return nil, err
				}
				if o.Beside != nil {
					beside = append(beside, o.Beside(cluster))
				}
				return beside, err // a NoMatch: the fleet builds the engine again once the CRD is served
			},
		})
	if err != nil {
		return nil, err
	}
	replica := o.ReplicaID
	if replica == "" {
		replica = "test"
	}
	statusClient, err := fleet.StatusClient(cfg, mgr.GetLocalManager())
	if err != nil {
		return nil, err
	}
	if err := (&controllers.ClusterGCStatusReconciler{
		Client: statusClient, Fleet: f, Namespace: o.Namespace, Replica: replica,
		RefreshInterval: o.StatusRefresh, ProbeTimeout: time.Second,
	}).SetupWithManager(mgr.GetLocalManager()); err != nil {
		return nil, err
	}
	m := &FleetManager{Fleet: f, Mgr: mgr, running: runInBackground(mgr.Start, 60*time.Second)}
	if o.Metrics {
		m.MetricsAddr = metrics.BindAddress
	}
	return m, nil
}

// Explain asks the fleet's /explain about an object of member cluster with
// query (explain.Query, or uid=) and the bearer token of who, and returns
// the status code and, when 200, the explanation.
func (m *FleetManager) Explain(t testing.TB, cluster string, who Identity, query string) (int, explain.Explanation) {
	t.Helper()
	return explainAt(t, m.Get, who, query+"&cluster="+url.QueryEscape(cluster))
}

// Get requests a path of the host's metrics server with a bearer token
// (none when empty); it retries while the server is not listening yet.
func (m *FleetManager) Get(path, bearer string) (int, []byte, error) {
	if m.MetricsAddr == "" {
		return 0, nil, fmt.Errorf("the fleet serves no metrics server (FleetOptions.Metrics)")
	}
	return getMetricsServer("https://"+m.MetricsAddr+path, bearer, nil)
}

// StartFleetManager starts an in-process fleet manager with cp as its host,
// stopped when the test ends.
func (cp *ControlPlane) StartFleetManager(t testing.TB, o FleetOptions) *FleetManager {
	t.Helper()
	m, err := StartFleetManager(cp.Config, o)
	if err != nil {
		t.Fatalf("starting the ownergc fleet: %v", err)
	}
	t.Cleanup(m.Stop)
	return m
}

// WaitSynced waits until the engine of cluster runs and its graph has
// synced.
func (m *FleetManager) WaitSynced(t testing.TB, cluster string, timeout time.Duration) *engine.Engine {
	t.Helper()
	var eng *engine.Engine
	Eventually(t, timeout, func() error {
		if err := m.hasExited(); err != nil {
			return err
		}
		st, ok := m.Fleet.State(cluster)
		if !ok {
			return fmt.Errorf("cluster %s is not engaged (engaged: %v)", cluster, m.Fleet.Clusters())
		}
		if st.Engine == nil {
			return fmt.Errorf("cluster %s has no running engine (last error: %v)", cluster, st.LastError)
		}
		eng = st.Engine
		return eng.GraphSyncedCheck(nil)
	}, "the engine of cluster %s should run and sync", cluster)
	return eng
}

// WaitDisengaged waits until cluster is no longer engaged: its engine has
// stopped.
func (m *FleetManager) WaitDisengaged(t testing.TB, cluster string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() error {
		if _, ok := m.Fleet.State(cluster); ok {
			return fmt.Errorf("cluster %s is still engaged", cluster)
		}
		return nil
	}, "cluster %s should be disengaged", cluster)
}

// WriteKubeconfigSecret writes, in namespace ns of the host, the Secret
// that engages cp as cluster name in a fleet: the kubeconfig of an admin
// user of cp.
func (cp *ControlPlane) WriteKubeconfigSecret(t testing.TB, host *ControlPlane, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := cp.CreateKubeconfigSecret(host, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// CreateKubeconfigSecret is WriteKubeconfigSecret outside a test.
func (cp *ControlPlane) CreateKubeconfigSecret(host *ControlPlane, ns, name string) (*corev1.Secret, error) {
	data, err := cp.AdminKubeconfig()
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of %s: %w", name, err)
	}
	return CreateKubeconfigSecretWith(host, ns, name, data)
}

// AdminKubeconfig returns a kubeconfig of an admin user of cp, all of it
// data (certificates inline).
func (cp *ControlPlane) AdminKubeconfig() ([]byte, error) {
	admin, err := cp.Env.AddUser(envtest.User{Name: "ownergc-fleet", Groups: []string{"system:masters"}}, cp.Config)
	if err != nil {
		return nil, fmt.Errorf("adding the fleet's user: %w", err)
	}
	return admin.KubeConfig()
}

// WriteKubeconfigSecretWith writes, in namespace ns of the host, a
// kubeconfig Secret name (labelled) holding data, or writes data into the
// Secret when it exists, and returns the Secret.
func WriteKubeconfigSecretWith(t testing.TB, host *ControlPlane, ns, name string, data []byte) *corev1.Secret {
	t.Helper()
	s, err := CreateKubeconfigSecretWith(host, ns, name, data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// CreateKubeconfigSecretWith is WriteKubeconfigSecretWith outside a test.
func CreateKubeconfigSecretWith(host *ControlPlane, ns, name string, data []byte) (*corev1.Secret, error) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{fleet.KubeconfigSecretLabel: "true"}},
		Data:       map[string][]byte{fleet.KubeconfigSecretKey: data},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := host.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		var existing corev1.Secret
		if err := host.Client.Get(ctx, client.ObjectKeyFromObject(s), &existing); err != nil {
			return nil, fmt.Errorf("reading the kubeconfig Secret %s/%s: %w", ns, name, err)
		}
		existing.Labels, existing.Data = s.Labels, s.Data
		err = host.Client.Update(ctx, &existing)
		s = &existing
	}
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig Secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}
