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

// Package engine assembles ownergc's engines — discovery and its triggers,
// the per-kind monitors feeding the graph, the collector, the API-level
// collectors (expiry among them) and the /explain and graph endpoints — and
// reports their state: on a controller-runtime manager in the single-cluster
// mode (NewManager), run by the fleet without one for each of its members
// (NewCluster, Run). main.go, the fleet and the integration tests use it the
// same way. engine.go is the wiring: every engine is built complete by its
// own package; status.go reports their state.
package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ownergc/ownergc/internal/access"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/collector"
	"github.com/ownergc/ownergc/internal/debug"
	ogdiscovery "github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/expiry"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/explain/serve"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/policy"
	"github.com/ownergc/ownergc/internal/workers"
)

// AbsentOwnerCacheSize is the number of confirmed-absent owners remembered.
const AbsentOwnerCacheSize = 4096

// Engine is the assembled collector. Build it with NewManager, or for a
// fleet's member with NewCluster.
type Engine struct {
	graph     *graph.Graph
	policy    *policy.Store
	discovery *ogdiscovery.Discoverer
	monitors  *monitor.Set
	collector *collector.Collector
	// apiGC are the API-level collectors, in the order of spec.collectors,
	// each named by its field there (NewAPICollectors).
	apiGC  []apigc.Collector
	status *notifier
	// events write the engine's Events (recorder.go).
	events *recorders

	// access authenticates and authorizes the metrics server's requests;
	// set when the metrics server starts.
	access atomic.Pointer[access.Access]
	// explainHandler and graphHandler serve /explain and /debug/graph:
	// on the engine's metrics server in the single-cluster mode, through
	// the fleet's (ExplainHandler, GraphHandler) in the fleet mode.
	explainHandler, graphHandler http.Handler
	// memberAccess reviews tokens and access at the cluster of a fleet's
	// engine, for the fleet's /explain and /debug/graph (MemberAccess):
	// built on first use, since most members are never asked.
	memberAccess struct {
		sync.Mutex
		built *access.Access
		build func() (*access.Access, error)
	}

	// cluster names the engine's cluster in the fleet mode, empty in the
	// single-cluster mode; metrics are the metrics it writes.
	cluster string
	metrics *metrics.Set
	// scheme knows the kinds of the engine's Events.
	scheme *runtime.Scheme
	// conn is the engine's connection to its cluster.
	conn connection
	// runnables are the engine's: its manager runs them in the
	// single-cluster mode, Run in the fleet mode.
	runnables []manager.Runnable
}

// connection is how an engine reaches its cluster.
type connection struct {
	// cfg is the engine's configuration (with the monitors' list and watch
	// tracking), http the engine's client (compressed answers).
	cfg  *rest.Config
	http *http.Client
	// policyHTTP and mapper are what runs beside a fleet member's engine
	// reads and writes through (Connection).
	policyHTTP *http.Client
	mapper     meta.RESTMapper
}

// Connection is what reads and writes a fleet member's cluster beside its
// engine (the GCPolicy controller): the engine's configuration, an HTTP
// client over the engine's connection that asks for uncompressed answers,
// the engine's REST mapper (discovery's snapshots) and scheme.
type Connection struct {
	Config     *rest.Config
	HTTPClient *http.Client
	Mapper     meta.RESTMapper
	Scheme     *runtime.Scheme
}

// Connection returns what reads and writes the cluster of a fleet's engine
// beside it. It is for a fleet's engine only: in the single-cluster mode
// its Mapper is nil (the manager has the engine's).
func (e *Engine) Connection() Connection {
	return Connection{Config: e.conn.cfg, HTTPClient: e.conn.policyHTTP, Mapper: e.conn.mapper, Scheme: e.scheme}
}

// NewManager builds a controller-runtime manager from cfg and opts, with
// what the engine needs in its options (the metadata transform, the
// informer constructor that tracks failing resources, a REST mapper that
// follows discovery), and the engine on it: discovery, the graph and the
// monitors run on every replica, the collector and the API-level
// collectors on the leader only. The collectors' writes and live reads are
// rate-limited by cfg's QPS and Burst.
func NewManager(cfg *rest.Config, opts ctrl.Options) (manager.Manager, *Engine, error) {
	return newManager(cfg, opts, Tuning{})
}

// NewCluster builds the engine of one cluster of a fleet, named cluster,
// without a manager: the fleet runs it (Run). Its metrics carry the
// cluster label, its monitors and collector run as co says, and what runs
// beside it reads and writes the cluster through Connection.
func NewCluster(cluster string, cfg *rest.Config, co ClusterOptions) (*Engine, error) {
	if cluster == "" {
		return nil, errors.New("a fleet's engine needs its cluster's name")
	}
	e, err := build(cluster, cfg, Tuning{lists: co.Lists, workers: co.Workers, DormantCheck: co.DormantCheck}, co.Scheme, co.Logger)
	if err != nil {
		return nil, err
	}
	// The fleet authenticates and authorizes each request and puts its
	// authorizer in the request's context (fleet/endpoints.go).
	e.explainHandler = serve.Handler(e.explainer(), serve.AuthorizerFrom, serve.Options{})
	e.memberAccess.build = func() (*access.Access, error) { return access.New(e.conn.cfg, e.conn.http) }
	return e, nil
}

// ClusterOptions are what the fleet sets for each cluster's engine.
type ClusterOptions struct {
	// Lists are the list slots the fleet's engines share (nil: unbounded).
	Lists *monitor.ListSlots
	// Workers are the workers the fleet's engines share, for every queue
	// (nil: pools of the engine's own).
	Workers *workers.Shared
	// DormantCheck: see monitor.Options.DormantCheck (0: every kind
	// watched).
	DormantCheck time.Duration
	// Scheme knows the kinds the engine's Events are about, and what
	// runs beside it reads and writes (default: client-go's).
	Scheme *runtime.Scheme
	// Logger is the engine's logger when it has no context (its Events').
	Logger logr.Logger
}

// Tuning changes what only tests need to change in the single-cluster mode:
// main.go never sets it, and no flag or GCPolicy field reaches it (the
// fleet's engines get lists and DormantCheck through NewCluster).
type Tuning struct {
	// PodQuarantine replaces kube-controller-manager's 40 s quarantine
	// before the terminated-Pod collector confirms that a Node is gone.
	PodQuarantine time.Duration
	// Explain replaces /explain's limits and sets its test hook.
	Explain serve.Options
	// ExpiryBeforeDelete is called by the expiry collector after it decided
	// an object due and before it deletes it (expiry.Options.BeforeDelete).
	ExpiryBeforeDelete func(ctx context.Context, obj *graph.Object)
	// DormantCheck runs the single-cluster engine with dormant kinds, as
	// a fleet's engines run (monitor.Options.DormantCheck).
	DormantCheck time.Duration

	// lists are the list slots of a fleet's engines, workers their shared
	// workers (NewCluster).
	lists   *monitor.ListSlots
	workers *workers.Shared
}

// /explain's live reads go through a client of their own, and the metrics
// server's TokenReviews and SubjectAccessReviews through clients of their
// own (access.New): neither ever takes from the collectors' rate limit
// (--kube-api-qps).
const explainQPS, explainBurst = 10, 20

// NewTunedManager is NewManager with tuning.
func NewTunedManager(cfg *rest.Config, opts ctrl.Options, tuning Tuning) (manager.Manager, *Engine, error) {
	return newManager(cfg, opts, tuning)
}

// newManager builds the single-cluster engine and the manager it runs on.
func newManager(cfg *rest.Config, opts ctrl.Options, tuning Tuning) (_ manager.Manager, _ *Engine, err error) {
	// The engine's Events take the manager's scheme and logger, and build
	// gives them the manager's defaults.
	e, err := build("", cfg, tuning, opts.Scheme, opts.Logger)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			e.Release()
		}
	}()
	opts.Cache.DefaultTransform = monitor.Transform
	if opts.Metrics.SecureServing {
		// Every request is authenticated; /explain authorizes each request
		// by the object it asks about, the other paths by URL.
		opts.Metrics.FilterProvider = func(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
			a, err := access.New(c, httpClient)
			if err != nil {
				return nil, err
			}
			e.access.Store(a)
			return a.Filter(explain.Path), nil
		}
	}
	opts.MapperProvider = func(c *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
		return e.newMapper(c, httpClient)
	}
	mgr, err := ctrl.NewManager(e.conn.cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	e.explainHandler = serve.Handler(e.explainer(), e.authorizer, tuning.Explain)
	if err := mgr.AddMetricsServerExtraHandler(debug.GraphPath, e.graphHandler); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddMetricsServerExtraHandler(explain.Path, e.explainHandler); err != nil {
		return nil, nil, err
	}
	for _, r := range e.runnables {
		if err := mgr.Add(r); err != nil {
			return nil, nil, err
		}
	}
	return mgr, e, nil
}

// build builds the engine of cluster (empty: the single-cluster mode), its
// Events written with scheme and logged by log (unset: a controller-runtime
// manager's defaults, client-go's scheme and ctrl.Log).
func build(cluster string, cfg *rest.Config, tuning Tuning, scheme *runtime.Scheme, log logr.Logger) (_ *Engine, err error) {
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	if log.GetSink() == nil {
		log = ctrl.Log
	}
	dc, err := ogdiscovery.NewClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the HTTP client: %w", err)
	}
	typed, err := apigc.NewClients(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	explainClient, err := metadata.NewForConfig(WithRateLimit(cfg, explainQPS, explainBurst))
	if err != nil {
		return nil, fmt.Errorf("creating the explanations' metadata client: %w", err)
	}
	e := &Engine{
		graph: graph.New(AbsentOwnerCacheSize),
		// Settled by the GCPolicy controller (or, in a fleet, for a
		// member that does not serve GCPolicies).
		policy:  policy.NewPendingStore(),
		cluster: cluster,
		metrics: metrics.For(cluster),
		scheme:  scheme,
	}
	defer func() {
		if err != nil {
			e.Release() // the collector's queues and the cluster's series
		}
	}()
	e.status = newNotifier(e.computeStatus, e.metrics)
	// Which ignored resources match no served resource follows discovery
	// and the policy.
	e.policy.Subscribe(func(_, _ *policy.Policy) { e.status.kick() })
	// CRD and APIService changes trigger rediscoveries. Their followers
	// read on their streaming lists' watches, which the API server would
	// compress for as long as they last: they ask for uncompressed answers.
	followHTTP := &http.Client{Transport: uncompressed{httpClient.Transport}, Timeout: httpClient.Timeout}
	followMC, err := metadata.NewForConfigAndClient(cfg, followHTTP)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery triggers' metadata client: %w", err)
	}
	followAPIServices, err := ogdiscovery.NewAPIServiceClient(cfg, followHTTP)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery triggers' APIService client: %w", err)
	}
	var triggers *ogdiscovery.Triggers
	e.discovery, triggers = ogdiscovery.NewWithTriggers(ogdiscovery.Options{Client: dc}, followMC, followAPIServices)
	e.discovery.Subscribe(func(ogdiscovery.Change) { e.status.kick() })

	listWatches := monitor.NewListWatches(e.status.kick)
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(listWatches.Transport)
	// The monitors' client: the engine's connection, with the list and
	// watch tracking.
	monitorClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the monitors' HTTP client: %w", err)
	}
	e.conn = connection{cfg: cfg, http: httpClient, policyHTTP: monitorClient}
	readOn := false
	if cluster != "" {
		// A fleet member's monitors, and what runs beside its engine (its
		// GCPolicy follower and client), ask for uncompressed answers,
		// over the same connection: the API server compresses a streaming
		// list's watch until that watch ends, 5 to 10 minutes after the
		// member's start, and the decompressor (some 40 KiB) would be held
		// that long (the discovery triggers' followers ask for
		// uncompressed answers too). So the monitors read each streaming
		// list's watch on as the kind's watch, where a compressed list
		// ends at its bookmark and a plain watch is opened: one request
		// per kind, not two, and no compression on either side, which the
		// members' API servers and this process paid for when many
		// members are engaged at once (`go run ./test/bench -only storm`;
		// docs/architecture.md). Members usually run beside the fleet (a
		// platform's hosted control planes), where bandwidth is what is
		// cheap; a single cluster's monitors keep compression for their
		// initial lists.
		monitorClient = &http.Client{Transport: uncompressed{monitorClient.Transport}, Timeout: monitorClient.Timeout}
		e.conn.policyHTTP, readOn = monitorClient, true
		if e.conn.mapper, err = e.newMapper(cfg, monitorClient); err != nil {
			return nil, err
		}
	}
	eventsClient, err := eventsv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	idle := time.Duration(0) // the single-cluster mode: as controller-runtime's
	if cluster != "" {
		idle = recorderIdle
	}
	e.events = newRecorders(eventsClient, scheme, log.WithName("events"), idle)

	e.collector = collector.New(collector.Options{
		Graph:       e.graph,
		Resources:   e.discovery,
		Objects:     (*objects)(e),
		Client:      mc,
		Recorder:    e.events.For("ownergc-garbage-collector"),
		Policy:      e.policy,
		GraphSynced: func() bool { return e.monitors.Status().Synced },
		Changed:     e.status.kick,
		Metrics:     e.metrics,
		// DryRun's decisions go at the pace of the writes they stand for.
		DryRunLimiter: clientRateLimiter(cfg),

		// Explanations read through a client of their own.
		ExplainClient: explainClient,
		Shared:        tuning.workers,
	})
	// Expiry schedules from the monitors' observations and deletes through
	// the collector's client, within its rate limit.
	expiring := expiry.New(expiry.Options{
		Graph:        e.graph,
		Policy:       e.policy,
		Discovery:    e.discovery,
		Client:       mc,
		Recorder:     e.events.For("ownergc-expiry"),
		Metrics:      e.metrics,
		Changed:      e.status.kick,
		BeforeDelete: tuning.ExpiryBeforeDelete,
		Shared:       tuning.workers,
	})
	e.monitors = monitor.NewSet(monitor.Options{
		Config:      cfg,
		HTTPClient:  monitorClient,
		ListWatches: listWatches,
		Graph:       e.graph,
		Sink:        e.collector,
		Policy:      e.policy,
		Discovery:   e.discovery,
		Changed:     e.status.kick,
		Observer:    expiring,
		Lists:       tuning.lists,
		// Dormant kinds: see dormant.go in internal/monitor.
		DormantCheck:         tuning.DormantCheck,
		ReadOnStreamingLists: readOn,
	})
	e.apiGC, err = NewAPICollectors(apigc.Options{Client: typed, Policy: e.policy, Changed: e.status.kick,
		PodQuarantine: tuning.PodQuarantine, Metrics: e.metrics, Shared: tuning.workers}, expiring)
	if err != nil {
		return nil, err
	}
	e.graphHandler = debug.GraphHandler(e.graph)
	e.runnables = []manager.Runnable{
		triggers,
		e.discovery,
		e.monitors,
		e.collector,
		everywhere(e.status.run),
		everywhere(e.runGauges),
	}
	for _, c := range e.apiGC {
		e.runnables = append(e.runnables, c)
	}
	return e, nil
}

// newMapper returns the engine's REST mapper: discovery's snapshots, and
// for what they do not hold, the discovery of a group version through
// httpClient.
func (e *Engine) newMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	fallback, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	gv, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return ogdiscovery.NewMapper(e.discovery, ogdiscovery.NewGroupVersionMapper(gv, fallback)), nil
}

// explainer answers /explain about the engine's objects.
func (e *Engine) explainer() explainer {
	return explainer{Resolver: serve.NewResolver(e.discovery, e.graph), collector: e.collector}
}

// ShutdownTimeout is how long Run waits for a fleet engine's runnables to
// return once they were told to stop, as a controller-runtime manager
// waits by default.
const ShutdownTimeout = 30 * time.Second

// Run runs a fleet's engine (NewCluster), and beside it what else runs on
// its cluster (the GCPolicy controller), each runnable in a goroutine of its
// own, until ctx ends or one of them fails; then it stops the others and
// waits for them, for at most ShutdownTimeout. It returns the first
// runnable's error, nil when ctx ended (whatever the runnables returned
// then); an error too when a runnable did not return in time (it may still
// be running). A runnable that returns nil early leaves the others running.
//
// It is what a controller-runtime manager does for the runnables it runs
// without leader election, caches or servers, for a few goroutines where a
// manager per member took some forty.
func (e *Engine) Run(ctx context.Context, beside ...manager.Runnable) error {
	if e.cluster == "" {
		return errors.New("a single-cluster engine runs on its manager")
	}
	return runAll(ctx, append(slices.Clone(e.runnables), beside...), ShutdownTimeout)
}

// runAll runs each runnable in a goroutine of its own until ctx ends or one
// of them fails, then stops the others and waits for them for at most
// timeout (Run). An error returned once parent has ended is not a failure.
func runAll(parent context.Context, runnables []manager.Runnable, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		once   sync.Once
		failed error
	)
	done := make(chan struct{}, len(runnables))
	for _, r := range runnables {
		go func() {
			defer func() { done <- struct{}{} }()
			// A runnable told to stop from outside may return an error
			// (a sync cut short): the engine stopped, it did not fail.
			if err := r.Start(ctx); err != nil && parent.Err() == nil {
				once.Do(func() { failed = err })
				cancel()
			}
		}()
	}
	<-ctx.Done()
	stop := time.NewTimer(timeout)
	defer stop.Stop()
	for left := len(runnables); left > 0; left-- {
		select {
		case <-done:
		case <-stop.C:
			return fmt.Errorf("%d of the engine's runnables did not stop within %s", left, timeout)
		}
	}
	return failed
}

// NewAPICollectors builds the API-level collectors (terminated Pods,
// finished Jobs, CertificateSigningRequests), in the order of
// spec.collectors, followed by expiring, the expiry collector (built by
// its package: it needs the graph). Each is known by its name, its field in
// spec.collectors (apigc.Status.Name), which must be unique: the status
// reports each collector by it.
func NewAPICollectors(opts apigc.Options, expiring *expiry.Engine) ([]apigc.Collector, error) {
	collectors := []apigc.Collector{
		apigc.NewTerminatedPods(opts),
		apigc.NewFinishedJobs(opts),
		apigc.NewCertificateSigningRequests(opts),
		expiring,
	}
	names := make(map[string]bool, len(collectors))
	for _, c := range collectors {
		name := c.Status().Name
		if name == "" || names[name] {
			return nil, fmt.Errorf("API-level collector %q: every collector needs a name of its own", name)
		}
		names[name] = true
	}
	return collectors, nil
}

// QueueClock is the clock of the engine's workqueues: nil in the
// single-cluster mode (the real clock), in the fleet mode one whose tickers
// tick every few seconds (metrics.Set.QueueClock), for the queues of what
// runs beside the engine too.
func (e *Engine) QueueClock() clock.WithTicker { return e.metrics.QueueClock }

// Cluster returns the name of the engine's cluster in the fleet mode, empty
// in the single-cluster mode.
func (e *Engine) Cluster() string { return e.cluster }

// Release lets go of what the engine holds outside its runnables, once
// they have stopped or will never start (its manager's Start, or Run, has
// returned or was never called; fleet mode: a cluster's engine is built
// again for each run): it shuts down the collector's queues (their
// goroutines run from construction; the collector's Start shuts them down
// too, but one that never started never did) and deletes the series of the
// engine's cluster (the single-cluster metrics stay). By then every queue
// is shut down: the collector's here, an API-level collector's when its
// session ends, before Start or Run returns. A queue that outlived it (a
// runnable past the graceful-shutdown timeout) writes to series already
// deleted, which no registry reports (metrics.Set.Forget).
func (e *Engine) Release() {
	if e.collector != nil {
		e.collector.Close()
	}
	if e.events != nil {
		e.events.Stop()
	}
	e.metrics.Forget()
}

// Policy returns the policy in force.
func (e *Engine) Policy() *policy.Policy { return e.policy.Get() }

// SetPolicy puts p in force.
func (e *Engine) SetPolicy(p *policy.Policy) { e.policy.Set(p) }

// SettlePolicy says that the policy in force is the cluster's: no GCPolicy
// exists, or the cluster does not serve the kind, so the defaults are in
// force. Until the policy is set or settled the collector's workers do not
// start.
func (e *Engine) SettlePolicy() { e.policy.Settle() }

// GraphSyncedCheck is a readiness check: ready once the graph has synced
// every resource that can be synced.
func (e *Engine) GraphSyncedCheck(_ *http.Request) error {
	st := e.monitors.Status()
	if st.Synced {
		return nil
	}
	if len(st.Syncing) > 0 {
		return fmt.Errorf("graph is syncing %d resources: %s", len(st.Syncing), strings.Join(first(st.Syncing, 5), ", "))
	}
	return errors.New("discovery has not completed")
}

// GraphReader reads the ownership graph.
type GraphReader interface {
	Len() int
	VirtualLen() int
	KindLen(gk schema.GroupKind) int
	Node(uid types.UID) *graph.Node
	NodeFor(group, kind, namespace, name string) *graph.Node
	Owner(uid types.UID) graph.OwnerState
	Describe(n *graph.Node) graph.NodeState
	Dependents(n *graph.Node, blockingOnly bool) []graph.DependentState
}

// Graph returns the ownership graph, to read.
func (e *Engine) Graph() GraphReader { return e.graph }

// EventRecorder returns the recorder of the engine's component name: its
// Events are written by a broadcaster that runs only while there are
// Events to write (recorder.go).
func (e *Engine) EventRecorder(name string) events.EventRecorder { return e.events.For(name) }

// KindState returns the state of a kind's monitor.
func (e *Engine) KindState(gk schema.GroupKind) monitor.KindState { return e.monitors.Kind(gk) }

// ServesKind reports whether the latest discovery found the kind served,
// at any version (false before the first discovery).
func (e *Engine) ServesKind(gk schema.GroupKind) bool {
	snap := e.discovery.Snapshot()
	return snap != nil && snap.ServesKind(gk)
}

// OnDiscovery has f called after every rediscovery that changed something.
func (e *Engine) OnDiscovery(f func()) {
	e.discovery.Subscribe(func(ogdiscovery.Change) { f() })
}

// Discovered returns the latest discovery snapshot, or nil.
func (e *Engine) Discovered() *ogdiscovery.Snapshot { return e.discovery.Snapshot() }

// authorizer returns what authorizes explanations, nil before the metrics
// server has started (or when it does not authenticate).
func (e *Engine) authorizer(*http.Request) serve.Authorizer {
	if a := e.access.Load(); a != nil {
		return a
	}
	return nil
}

// ExplainHandler serves /explain about the engine's objects. In the fleet
// mode the request's context carries its caller (request.WithUser) and
// what authorizes the caller (serve.WithAuthorizer); without them it is
// answered 401.
func (e *Engine) ExplainHandler() http.Handler { return e.explainHandler }

// GraphHandler serves /debug/graph of the engine's graph. It authorizes
// nothing: its caller must have.
func (e *Engine) GraphHandler() http.Handler { return e.graphHandler }

// MemberAccess returns what reviews tokens and access at the cluster of a
// fleet's engine (TokenReview and SubjectAccessReview there, within a rate
// limit of their own, with the answers cached as the API server caches
// them), built on first use; an error in the single-cluster mode.
func (e *Engine) MemberAccess() (*access.Access, error) {
	e.memberAccess.Lock()
	defer e.memberAccess.Unlock()
	if e.memberAccess.built != nil {
		return e.memberAccess.built, nil
	}
	if e.memberAccess.build == nil {
		return nil, errors.New("the engine is not a fleet's")
	}
	a, err := e.memberAccess.build()
	if err != nil {
		return nil, err
	}
	e.memberAccess.built = a
	return a, nil
}

// explainer is what the /explain endpoint asks: serve's Resolver maps the
// query to its object, the collector explains it.
type explainer struct {
	*serve.Resolver
	collector *collector.Collector
}

// Explain implements serve.Explainer.
func (x explainer) Explain(ctx context.Context, t explain.Target, limits explain.Limits, visible explain.Visibility) explain.Explanation {
	return x.collector.Explain(ctx, t, limits.Reads, visible)
}

// uncompressed asks for answers that are not compressed: a request that
// names its Accept-Encoding gets no gzip from the API server, and Go's
// transport then neither asks for nor decompresses it.
type uncompressed struct{ rt http.RoundTripper }

func (u uncompressed) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept-Encoding") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Accept-Encoding", "identity")
	}
	return u.rt.RoundTrip(req)
}

// WrappedRoundTripper lets client-go see through the wrapper.
func (u uncompressed) WrappedRoundTripper() http.RoundTripper { return u.rt }

// everywhere is a runnable that runs on every replica, leader or not.
type everywhere func(context.Context) error

func (f everywhere) Start(ctx context.Context) error { return f(ctx) }
func (everywhere) NeedLeaderElection() bool          { return false }

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// objects is what the collector reads from the monitors.
type objects Engine

func (o *objects) Cached(gk schema.GroupKind, namespace, name string) (*metav1.PartialObjectMetadata, bool) {
	return o.monitors.Cached(gk, namespace, name)
}

func (o *objects) Kind(gk schema.GroupKind) monitor.KindState { return o.monitors.Kind(gk) }

func (o *objects) ConfirmDormantEmpty(ctx context.Context) error {
	return o.monitors.ConfirmDormantEmpty(ctx)
}

func (o *objects) WakeKind(gk schema.GroupKind) { o.monitors.WakeKind(gk) }

// runGauges keeps the graph gauges current.
func (e *Engine) runGauges(ctx context.Context) error {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		e.metrics.GraphNodes.Set(float64(e.graph.Len()))
		e.metrics.GraphVirtualNodes.Set(float64(e.graph.VirtualLen()))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// WithRateLimit returns a copy of cfg whose clients have a rate limit of
// their own, at qps and burst (the explanations' client; in a fleet, the
// host's clients for the clusters' Leases and statuses).
func WithRateLimit(cfg *rest.Config, qps float32, burst int) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter, c.QPS, c.Burst = nil, qps, burst
	return c
}

// clientRateLimiter returns a rate limiter like the one client-go gives a
// client made from cfg: cfg's own, or a token bucket at cfg's QPS and Burst
// (client-go's defaults when unset); nil when cfg's QPS is negative (no
// limit).
func clientRateLimiter(cfg *rest.Config) flowcontrol.RateLimiter {
	switch {
	case cfg.RateLimiter != nil:
		// Shared with the clients made from cfg: waiting here takes
		// tokens from them. A limiter of our own at the same rate.
		return flowcontrol.NewTokenBucketRateLimiter(cfg.RateLimiter.QPS(), max(cfg.Burst, 1))
	case cfg.QPS < 0:
		return nil
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
}
