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

// Command manager runs ownergc, a Kubernetes garbage collector: cascading
// deletion from metadata.ownerReferences for every resource, configured by
// the `default` GCPolicy. main.go reads the flags and dispatches to the mode
// they choose (internal/run: one cluster, or a fleet); logging.go builds the
// logger.
package main

import (
	"crypto/tls"
	"flag"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/internal/run"
)

// flags are the manager's command-line flags; their names are a public
// interface.
type flags struct {
	metricsAddr             string
	enableHTTP2             bool
	probeAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	qps                     float64
	burst                   int
	zap                     zap.Options

	// The fleet mode (see internal/fleet): clusterSource, and what goes
	// with it. What a kubeconfig Secret may use beyond plain data is off
	// by default (see docs/security.md).
	clusterSource string
	fleet         run.FleetOptions
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443",
		"The address the metrics endpoint binds to, served over HTTPS with authentication and authorization. Use 0 to disable it.")
	flag.BoolVar(&f.enableHTTP2, "enable-http2", false,
		"Serve the metrics endpoint over HTTP/2 too. Off by default: HTTP/1.1 only, against the HTTP/2 Stream Cancellation and Rapid Reset CVEs.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "The address the /healthz and /readyz probes bind to.")
	flag.BoolVar(&f.leaderElect, "leader-elect", false,
		"Enable leader election: with several replicas, only the leader deletes, patches and orphans; every replica keeps the graph.")
	flag.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; defaults to the pod's namespace (required when running outside a cluster).")
	flag.Float64Var(&f.qps, "kube-api-qps", 40, "Queries per second the collector may send to the API server.")
	flag.IntVar(&f.burst, "kube-api-burst", 30, "Burst of queries the collector may send to the API server.")
	flag.StringVar(&f.clusterSource, "cluster-source", "",
		"Where the clusters to collect come from. Empty (the default): the cluster the manager runs in (or its kubeconfig points at). "+
			"\""+fleet.SourceKubeconfigSecrets+"\": every Secret labelled "+fleet.KubeconfigSecretLabel+"=true in --cluster-namespace holds the kubeconfig of a cluster, "+
			"named after the Secret, which gets an engine of its own.")
	flag.StringVar(&f.fleet.Namespace, "cluster-namespace", "",
		"Namespace of the kubeconfig Secrets (and, with --shard, of the replicas' and engines' Leases); defaults to the pod's namespace.")
	flag.BoolVar(&f.fleet.Shard, "shard", false,
		"With --cluster-source, split the clusters between the replicas that shard (each cluster on exactly one at a time, fenced by a claim per cluster that its replica's heartbeat Lease keeps valid); replaces --leader-elect.")
	flag.StringVar(&f.fleet.ReplicaID, "replica-id", "", "This replica's name among those that shard (default: the host name).")
	flag.DurationVar(&f.fleet.LeaseDuration, "shard-lease-duration", 20*time.Second,
		"With --shard, the validity of a replica's heartbeat Lease: how long the clusters of a replica that died wait, once it is seen gone, before another takes them.")
	flag.IntVar(&f.fleet.MaxObjects, "max-objects-per-cluster", 1_000_000,
		"With --cluster-source, the most objects one cluster's engine may hold in its graph: beyond it the engine stops (its ClusterGCStatus says ObjectLimitExceeded) and is built again 10 minutes later, so that one cluster cannot take the memory of all. 0: no bound.")
	flag.DurationVar(&f.fleet.DormantCheck, "dormant-check-interval", fleet.DefaultDormantCheck,
		"In the fleet mode, a kind with no object in a cluster is not watched but checked for one this often (and before an orphaning or foreground deletion completes); 0 watches every kind.")
	flag.BoolVar(&f.fleet.Kubeconfig.AllowExec, "insecure-kubeconfig-exec", false,
		"With --cluster-source, accept kubeconfig Secrets with exec or auth-provider credential plugins. RISK: whoever can write a Secret in --cluster-namespace runs any command in the manager's container, with its service account token.")
	flag.BoolVar(&f.fleet.Kubeconfig.AllowFiles, "insecure-kubeconfig-files", false,
		"With --cluster-source, accept kubeconfig Secrets that name files (tokenFile, client-certificate, client-key, certificate-authority). RISK: whoever can write such a Secret has the manager read any file it can, its own service account token included, and send it to a server of their choosing.")
	flag.BoolVar(&f.fleet.Kubeconfig.AllowProxy, "insecure-kubeconfig-proxy", false,
		"With --cluster-source, accept kubeconfig Secrets with a proxy-url. RISK: the cluster's traffic, credentials included, goes through the proxy the Secret names.")
	flag.BoolVar(&f.fleet.Kubeconfig.AllowInsecureTLS, "insecure-kubeconfig-tls", false,
		"With --cluster-source, accept kubeconfig Secrets with insecure-skip-tls-verify or an http:// server. RISK: the credentials go to a server that is not verified, or in clear text.")
	f.zap = zap.Options{Development: false}
	f.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	f.fleet.Source = f.clusterSource
	return f
}

func main() {
	f := parseFlags()
	ctrl.SetLogger(newLogger(f.zap, os.Stderr))

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	// Compression stays on, as for kube-controller-manager's clients: the
	// API server (1.37, WatchListCompression) gzips the streamed initial
	// list of a kind for a client that accepts it, which sends every object
	// of the cluster to the monitors at start-up in a fraction of the bytes.

	if f.clusterSource != "" {
		os.Exit(run.Fleet(cfg, managerOptions(f), f.fleet))
	}
	os.Exit(run.Cluster(cfg, managerOptions(f)))
}

// managerOptions are the options of the manager (the host's, in the fleet
// mode) that the flags set. Leader election's Leases are granted by
// config/rbac/leader_election_role.yaml (in the manager's namespace), the
// token and access reviews of the metrics endpoint by
// config/rbac/metrics_auth_role.yaml.
func managerOptions(f flags) ctrl.Options {
	var tlsOpts []func(*tls.Config)
	if !f.enableHTTP2 {
		tlsOpts = append(tlsOpts, disableHTTP2)
	}
	// A certificate mounted in MetricsCertDir is served; without one, a
	// self-signed ECDSA one, cheaper to make than controller-runtime's.
	tlsOpts = append(tlsOpts, run.SelfSignedUnlessMounted(run.MetricsCertDir))
	return ctrl.Options{
		// The engine authenticates and authorizes the metrics server's
		// requests (engine.NewManager sets its FilterProvider; in the fleet
		// mode, run.Fleet sets controller-runtime's).
		Metrics: metricsserver.Options{
			BindAddress:   f.metricsAddr,
			SecureServing: true,
			CertDir:       run.MetricsCertDir,
			TLSOpts:       tlsOpts,
		},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "garbage-collector.ownergc.io",
		LeaderElectionNamespace:       f.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
}

// disableHTTP2 makes a TLS server offer HTTP/1.1 only, so that clients never
// negotiate HTTP/2: the mitigation of the HTTP/2 Stream Cancellation and
// Rapid Reset vulnerabilities (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8)
// that kubebuilder's scaffold applies by default.
func disableHTTP2(c *tls.Config) {
	c.NextProtos = []string{"http/1.1"}
}
