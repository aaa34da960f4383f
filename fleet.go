package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"

	"github.com/ownergc/ownergc/controllers"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/fleet"
)

// runFleet runs the fleet mode: one engine per cluster of the cluster
// source, on the host cluster cfg. It returns the exit code.
func runFleet(f flags, cfg *rest.Config) int {
	if f.clusterSource != fleet.SourceKubeconfigSecrets {
		setupLog.Error(nil, "Unknown cluster source", "cluster-source", f.clusterSource, "known", []string{fleet.SourceKubeconfigSecrets})
		return 1
	}
	ns, err := clusterNamespace(f)
	if err != nil {
		setupLog.Error(err, "Unable to tell the namespace of the kubeconfig Secrets")
		return 1
	}
	opts := managerOptions(f)
	if opts.Metrics.SecureServing {
		opts.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = ns
	}
	qps, burst := float32(f.qps), f.burst
	ho := fleet.HostOptions{Namespace: ns, Shard: f.shard, ReplicaID: f.replicaID, LeaseDuration: f.shardLease, Kubeconfig: f.kubeconfig}
	if f.kubeconfig != (fleet.KubeconfigPolicy{}) {
		setupLog.Info("Kubeconfig Secrets may use more than plain data: whoever can write a Secret in the cluster namespace can use what these flags allow, with the manager's rights",
			"exec", f.kubeconfig.AllowExec, "files", f.kubeconfig.AllowFiles, "proxy", f.kubeconfig.AllowProxy, "insecureTLS", f.kubeconfig.AllowInsecureTLS)
	}
	mgr, fl, err := fleet.NewManager(cfg, opts, ho,
		fleet.Options{
			ManagerOptions: func(string) ctrl.Options { return ctrl.Options{Scheme: scheme} },
			MaxObjects:     f.maxObjects,
			Config: func(c *rest.Config) {
				c.QPS, c.Burst = qps, burst
			},
			// A cluster that does not serve GCPolicies yet makes the setup
			// return the REST mapper's NoKindMatchError: the fleet runs the
			// engine with the built-in defaults and builds it again once
			// the CRD is installed there.
			Setup: func(_ string, mgr manager.Manager, eng *engine.Engine) error { return setupReconcilers(mgr, eng) },
		})
	if err != nil {
		setupLog.Error(err, "Unable to create the fleet manager")
		return 1
	}
	replica, _ := ho.Replica() // the status names no replica if the host has no name
	if f.shard && f.leaderElect {
		setupLog.Info("--shard replaces --leader-elect: every replica collects the clusters the coordinator gives it")
	}
	if err := (&controllers.ClusterGCStatusReconciler{
		Client: mgr.GetLocalManager().GetClient(), Fleet: fl, Namespace: ns, Replica: replica,
	}).SetupWithManager(mgr.GetLocalManager()); err != nil {
		setupLog.Error(err, "Unable to set up the ClusterGCStatus controller")
		return 1
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up health checks")
		return 1
	}
	// Ready once the host's cache (the kubeconfig Secrets, the
	// ClusterGCStatuses) has synced: each cluster's own state is reported in
	// its ClusterGCStatus, and one cluster's trouble must not take the
	// replica out of its Service or stall a rollout.
	hostCache := mgr.GetLocalManager().GetCache()
	if err := mgr.AddReadyzCheck("host-cache", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !hostCache.WaitForCacheSync(ctx) {
			return errors.New("the host's cache has not synced")
		}
		return nil
	}); err != nil {
		setupLog.Error(err, "Unable to set up readiness checks")
		return 1
	}
	setupLog.Info("Starting the fleet manager", "cluster-source", f.clusterSource, "namespace", ns, "shard", f.shard)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "Manager exited with an error")
		return 1
	}
	return 0
}

// clusterNamespace is --cluster-namespace, or the pod's namespace.
func clusterNamespace(f flags) (string, error) {
	if f.clusterNamespace != "" {
		return f.clusterNamespace, nil
	}
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "", fmt.Errorf("--cluster-namespace is required outside a pod: %w", err)
	}
	ns := strings.TrimSpace(string(data))
	if ns == "" {
		return "", errors.New("--cluster-namespace is required: the pod's namespace is empty")
	}
	return ns, nil
}
