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

package fleet

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	"github.com/ownergc/ownergc/internal/access"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/metrics"
)

// SourceKubeconfigSecrets is the cluster source that engages a cluster for
// every Secret, in the manager's namespace, that holds a kubeconfig
// (multicluster-runtime's kubeconfig provider).
const SourceKubeconfigSecrets = "kubeconfig-secrets"

// KubeconfigSecretLabel marks the Secrets the kubeconfig-secrets source reads
// (value "true"); the cluster is named after the Secret.
const KubeconfigSecretLabel = kubeconfig.DefaultKubeconfigSecretLabel

// KubeconfigSecretKey is the key of a Secret's kubeconfig.
const KubeconfigSecretKey = kubeconfig.DefaultKubeconfigSecretKey

// HostOptions configure the host side of a fleet: where clusters come from
// and how replicas share them.
type HostOptions struct {
	// Namespace holds the kubeconfig Secrets (and, when sharding, the
	// Leases); the host manager's cache is limited to it.
	Namespace string
	// SecretLabel and SecretKey override KubeconfigSecretLabel and
	// KubeconfigSecretKey.
	SecretLabel, SecretKey string
	// Shard splits the clusters between the replicas that shard (the
	// coordinator): each cluster's engine runs on exactly one of them at a
	// time, fenced by a per-cluster claim that an engine holds from before
	// it is built until it has stopped, valid while its replica's heartbeat
	// is renewed (engineFence).
	Shard bool
	// ReplicaID names this replica among those that shard (default: the
	// host name).
	ReplicaID string
	// LeaseDuration is the validity of a replica's heartbeat when sharding
	// (default 20s, renewed every sixth of it): how long a dead replica's
	// clusters wait, once the others have seen it gone (its peer Lease
	// expires after 30 s), before another takes them.
	LeaseDuration time.Duration
	// Kubeconfig says which fields of a kubeconfig that are not plain data
	// (exec plugins, files, proxies, unverified servers) a Secret may use;
	// by default none.
	Kubeconfig KubeconfigPolicy
}

// Replica returns the replica's name: ReplicaID, or the host name (a pod's
// name).
func (ho HostOptions) Replica() (string, error) {
	if ho.ReplicaID != "" {
		return ho.ReplicaID, nil
	}
	name, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("naming the replica: %w", err)
	}
	return name, nil
}

// leaseQPS bounds the engines' claims: each cluster's claim is read while
// its engine waits for it (about every 3 s, jittered) and written when its
// engine starts and stops (a thousand clusters engaged at once are claimed
// in about ten seconds).
const leaseQPS = 100

// heartbeatQPS bounds the heartbeat's requests: a renewal every sixth of
// the Lease's duration, and the retries of a failing one.
const heartbeatQPS = 5

// statusQPS bounds the ClusterGCStatus controller's writes to the host
// (StatusClient): a cluster's status is created and written once its
// engine has synced (or has failed, or a refresh interval has passed), on
// change, and every two minutes at rest (a thousand clusters: some eight
// writes a second). With the host manager's rate limit (--kube-api-qps,
// which each cluster's engine gets for its own cluster) twenty clusters
// engaged at once waited seconds for their Ready to be written, a thousand
// would wait over a minute; at 100 a second (burst 200), a thousand are
// written in about thirty seconds. (controller-runtime's client has a
// rate limiter per resource; this client writes ClusterGCStatuses alone.)
const statusQPS = 100

// leaseClient is a client of the host's Leases with a rate limiter of its
// own, qps (burst twice that).
func leaseClient(cfg *rest.Config, qps float32) (coordinationv1client.LeasesGetter, error) {
	return coordinationv1client.NewForConfig(engine.WithRateLimit(cfg, qps, int(2*qps)))
}

// StatusClient returns the ClusterGCStatus controller's client: it reads
// through the host manager local's cache, as local's client does, and
// writes through a rate limiter of its own (statusQPS, burst twice that)
// over local's connection to the host, cfg.
func StatusClient(cfg *rest.Config, local manager.Manager) (client.Client, error) {
	return client.New(engine.WithRateLimit(cfg, statusQPS, int(2*statusQPS)), client.Options{Scheme: local.GetScheme(), Mapper: local.GetRESTMapper(), HTTPClient: local.GetHTTPClient(),
		Cache: &client.CacheOptions{Reader: local.GetCache()}})
}

// leaseDuration is ho.LeaseDuration or its default.
func leaseDuration(ho HostOptions) time.Duration {
	if ho.LeaseDuration <= 0 {
		return 20 * time.Second
	}
	return ho.LeaseDuration
}

// The replicas' peer Leases (multicluster-runtime's registry) are named
// after this prefix.
const peerLeasePrefix = "ownergc-peer"

// NewManager returns a multicluster-runtime manager on the host cluster cfg,
// with the kubeconfig provider engaging the clusters of the Secrets in
// ho.Namespace and the fleet running an engine for each (sharded between
// replicas when ho.Shard), and the fleet.
func NewManager(cfg *rest.Config, opts ctrl.Options, ho HostOptions, fo Options) (mcmanager.Manager, *Fleet, error) {
	if ho.Namespace == "" {
		return nil, nil, fmt.Errorf("the namespace of the kubeconfig Secrets is required")
	}
	// Before the metrics server starts: the engines' metrics name their
	// cluster.
	metrics.UseFleet()
	opts.Cache.DefaultNamespaces = map[string]cache.Config{ho.Namespace: {}}
	if ho.Shard {
		// Every replica runs the clusters the coordinator gives it.
		opts.LeaderElection = false
	}
	var hostAccess atomic.Pointer[access.Access]
	if opts.Metrics.SecureServing {
		// Every request is authenticated by the host, but for the members'
		// /explain and /debug/graph, which a member's own caller may ask
		// with a token of the member (Handler); /metrics is authorized by
		// the host's RBAC on its URL.
		opts.Metrics.FilterProvider = func(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
			a, err := access.New(c, httpClient)
			if err != nil {
				return nil, err
			}
			hostAccess.Store(a)
			paths := make([]string, len(Endpoints))
			for i, ep := range Endpoints {
				paths[i] = ep.Path
			}
			return a.FleetFilter(paths...), nil
		}
	}
	local, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the host manager: %w", err)
	}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:             ho.Namespace,
		KubeconfigSecretLabel: ho.SecretLabel,
		KubeconfigSecretKey:   ho.SecretKey,
	})
	g := &gate{
		policy:            ho.Kubeconfig,
		namespace:         ho.Namespace,
		label:             cmp.Or(ho.SecretLabel, KubeconfigSecretLabel),
		key:               cmp.Or(ho.SecretKey, KubeconfigSecretKey),
		recorder:          local.GetEventRecorder("ownergc-fleet"),
		verdicts:          make(map[string]error),
		reconcileProvider: provider.Reconcile,
		providerHas: func(ctx context.Context, name string) bool {
			_, err := provider.Get(ctx, multicluster.ClusterName(name))
			return err == nil
		},
	}
	var mcOpts []mcmanager.Option
	var replica string
	if ho.Shard {
		if replica, err = ho.Replica(); err != nil {
			return nil, nil, err
		}
		// It names the replica's peer Lease, <peerLeasePrefix>-<replica>.
		if errs := validation.IsDNS1123Subdomain(peerLeasePrefix + "-" + replica); len(errs) > 0 {
			return nil, nil, fmt.Errorf("the replica's name %q (--replica-id, or the host name) names its Leases, and %s-%s is not a valid name: %s",
				replica, peerLeasePrefix, replica, strings.Join(errs, "; "))
		}
		lease := leaseDuration(ho)
		reg := peers.NewLeaseRegistry(local.GetClient(), ho.Namespace, peerLeasePrefix, replica, 1, ctrl.Log.WithName("shard"))
		mcOpts = append(mcOpts, mcmanager.WithCoordinator(newCoordinator(reg, lease/4, ctrl.Log.WithName("shard"))))
	}
	mgr, err := mcmanager.WithMultiCluster(local, provider, mcOpts...)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the multicluster manager: %w", err)
	}
	// The provider reads the Secrets through the gate: it never sees one
	// that may not engage a cluster.
	guarded := guardedManager{Manager: mgr, local: guardedLocal{Manager: local, client: guardedClient{Client: local.GetClient(), g: g}}}
	if err := provider.SetupWithManager(context.Background(), guarded); err != nil {
		return nil, nil, fmt.Errorf("setting up the kubeconfig provider: %w", err)
	}
	f := New(fo)
	f.gate = g
	g.changed = f.changed
	if err := g.setup(local); err != nil {
		return nil, nil, fmt.Errorf("setting up the kubeconfig Secrets' gate: %w", err)
	}
	if ho.Shard {
		// The Leases have a rate limiter of their own: one shared with the
		// host manager (--kube-api-qps) would let the engines' claims
		// queue behind other requests, and the heartbeat miss its deadline.
		leases, err := leaseClient(cfg, leaseQPS)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the host's client for the engine Leases: %w", err)
		}
		// The heartbeat's renewals have a client of their own too: claims
		// waited for by many clusters at once never delay them.
		heartbeat, err := leaseClient(cfg, heartbeatQPS)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the host's client for the replica's heartbeat: %w", err)
		}
		f.fence = newEngineFence(leases, heartbeat, ho.Namespace, replica, leaseDuration(ho))
	}
	if err := mgr.Add(f); err != nil {
		return nil, nil, fmt.Errorf("adding the fleet: %w", err)
	}
	for _, ep := range Endpoints {
		if err := local.AddMetricsServerExtraHandler(ep.Path, f.Handler(ep, hostAccess.Load, ho.Namespace)); err != nil {
			return nil, nil, fmt.Errorf("serving %s: %w", ep.Path, err)
		}
	}
	return mgr, f, nil
}
