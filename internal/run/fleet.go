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
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ownergc/ownergc/controllers"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/internal/monitor"
)

// FleetOptions are the settings of the fleet mode (--cluster-source and the
// flags that go with it).
type FleetOptions struct {
	// Source is where the clusters come from: fleet.SourceKubeconfigSecrets.
	Source string
	// Namespace holds the kubeconfig Secrets and the shard Leases; empty:
	// the pod's namespace.
	Namespace string
	// Shard, ReplicaID and LeaseDuration split the clusters between the
	// replicas (fleet.HostOptions).
	Shard         bool
	ReplicaID     string
	LeaseDuration time.Duration
	// MaxObjects bounds the objects one cluster's engine may hold
	// (fleet.Options.MaxObjects); 0 for no bound.
	MaxObjects int
	// DormantCheck is how often a kind with no object, which is then not
	// watched, is checked for one (fleet.Options.DormantCheck); 0 watches
	// every kind.
	DormantCheck time.Duration
	// Kubeconfig is what a kubeconfig Secret may use beyond plain data
	// (the --insecure-kubeconfig-* flags).
	Kubeconfig fleet.KubeconfigPolicy
}

// Fleet runs the fleet mode: one engine per cluster of the cluster source,
// each with cfg's rate limits, on a manager of the host cluster cfg with
// opts (Scheme when they name none), ready once the host's cache has synced.
// It returns the exit code.
func Fleet(cfg *rest.Config, opts ctrl.Options, fo FleetOptions) int {
	if fo.Source != fleet.SourceKubeconfigSecrets {
		return failed(nil, "Unknown cluster source", "cluster-source", fo.Source, "known", []string{fleet.SourceKubeconfigSecrets})
	}
	ns, err := clusterNamespace(fo.Namespace)
	if err != nil {
		return failed(err, "Unable to tell the namespace of the kubeconfig Secrets")
	}
	var listBurst monitor.Burst
	if percent, ok := fleetGCPercent(os.LookupEnv); ok {
		debug.SetGCPercent(percent)
		listBurst = listBurstGC(percent)
		setupLog.Info("The fleet mode sets the Go garbage collector's GOGC (set GOGC to choose otherwise)", "atRest", percent, "whileListsStream", burstGCPercent)
	}
	if opts.Scheme == nil {
		opts.Scheme = Scheme
	}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = ns
	}
	ho := fleet.HostOptions{Namespace: ns, Shard: fo.Shard, ReplicaID: fo.ReplicaID, LeaseDuration: fo.LeaseDuration, Kubeconfig: fo.Kubeconfig}
	if fo.Kubeconfig != (fleet.KubeconfigPolicy{}) {
		setupLog.Info("Kubeconfig Secrets may use more than plain data: whoever can write a Secret in the cluster namespace can use what these flags allow, with the manager's rights",
			"exec", fo.Kubeconfig.AllowExec, "files", fo.Kubeconfig.AllowFiles, "proxy", fo.Kubeconfig.AllowProxy, "insecureTLS", fo.Kubeconfig.AllowInsecureTLS)
	}
	scheme, qps, burst := opts.Scheme, cfg.QPS, cfg.Burst
	mgr, fl, err := fleet.NewManager(cfg, opts, ho, fleet.Options{
		Scheme:       scheme,
		MaxObjects:   fo.MaxObjects,
		DormantCheck: dormantCheck(fo.DormantCheck),
		ListBurst:    listBurst,
		Config: func(c *rest.Config) {
			c.QPS, c.Burst = qps, burst
		},
		// A cluster that does not serve GCPolicies yet makes the setup
		// return a NoKindMatchError: the fleet runs the engine with the
		// built-in defaults and builds it again once the CRD is installed
		// there.
		Setup: func(ctx context.Context, _ string, eng *engine.Engine) ([]manager.Runnable, error) {
			return SetupMember(ctx, eng, 0, MemberStatusHeartbeat, 0)
		},
	})
	if err != nil {
		return failed(err, "Unable to create the fleet manager")
	}
	replica, _ := ho.Replica() // the status names no replica if the host has no name
	if fo.Shard && opts.LeaderElection {
		setupLog.Info("--shard replaces --leader-elect: every replica collects the clusters the coordinator gives it")
	}
	statusClient, err := fleet.StatusClient(cfg, mgr.GetLocalManager())
	if err != nil {
		return failed(err, "Unable to create the ClusterGCStatus controller's client")
	}
	if err := (&controllers.ClusterGCStatusReconciler{
		Client: statusClient, Fleet: fl, Namespace: ns, Replica: replica,
	}).SetupWithManager(mgr.GetLocalManager()); err != nil {
		return failed(err, "Unable to set up the ClusterGCStatus controller")
	}
	// Ready once the host's cache (the kubeconfig Secrets, the
	// ClusterGCStatuses) has synced: each cluster's own state is reported in
	// its ClusterGCStatus, and one cluster's trouble must not take the
	// replica out of its Service or stall a rollout.
	hostCache := mgr.GetLocalManager().GetCache()
	return serve(mgr, "host-cache", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !hostCache.WaitForCacheSync(ctx) {
			return errors.New("the host's cache has not synced")
		}
		return nil
	}, "Starting the fleet manager", "cluster-source", fo.Source, "namespace", ns, "shard", fo.Shard)
}

// fleetGCPercent is the Go garbage collector's GOGC in the fleet mode,
// unless the environment sets GOGC (lookupEnv): 50, so that the heap grows
// to half again its live size between collections, not twice. A fleet's
// memory is its members' graphs, clients and goroutines, most of them idle
// and making little garbage: collecting more often cost up to a few tenths
// of a millicore per idle member, and (with the members' uncompressed
// GCPolicy informers) took each from 2.0–2.2 MiB to 1.6 MiB (`make bench`,
// fleet at rest; docs/architecture.md).
func fleetGCPercent(lookupEnv func(string) (string, bool)) (int, bool) {
	if _, set := lookupEnv("GOGC"); set {
		return 0, false
	}
	return 50, true
}

// burstGCPercent is the Go garbage collector's GOGC in the fleet mode while
// the engines' lists stream (monitor.Burst): engaging many clusters at
// once decodes every object of every kind of each, most of it dropped at
// once, while their graphs grow from nothing; at GOGC=50 the collector
// then marked the heap and the stacks of some 1,400 goroutines twenty
// times in a storm of twenty members (GODEBUG=gctrace=1), over a quarter
// of the process's CPU in it; at 100, eleven times. The heap may then grow
// to twice its live size while the lists stream, not more: a third above
// its ceiling at rest at any size, within the storm's bound of 1.5 times
// the memory at rest (`make bench`, the engagement storm).
const burstGCPercent = 100

// listBurstGC runs the garbage collector at burstGCPercent while the
// engines' lists stream, at rest otherwise.
func listBurstGC(atRest int) monitor.Burst {
	return monitor.Burst{
		Start: func() { debug.SetGCPercent(burstGCPercent) },
		End:   func() { debug.SetGCPercent(atRest) },
	}
}

// serviceAccountNamespace is where a pod finds its namespace (tests change
// it).
var serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// clusterNamespace is namespace (--cluster-namespace), or the pod's
// namespace.
func clusterNamespace(namespace string) (string, error) {
	if namespace != "" {
		return namespace, nil
	}
	data, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return "", fmt.Errorf("--cluster-namespace is required outside a pod: %w", err)
	}
	ns := strings.TrimSpace(string(data))
	if ns == "" {
		return "", errors.New("--cluster-namespace is required: the pod's namespace is empty")
	}
	return ns, nil
}

// dormantCheck is fleet.Options.DormantCheck for the flag's value: 0 (the
// flag's "watch every kind") is a negative DormantCheck.
func dormantCheck(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
