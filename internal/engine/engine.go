// Package engine assembles ownergc's engines — discovery, the per-kind
// monitors feeding the graph, and the collector — on a controller-runtime
// manager, and reports their state. main.go and the integration tests use it
// the same way.
package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ownergc/ownergc/internal/access"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/collector"
	"github.com/ownergc/ownergc/internal/debug"
	ogdiscovery "github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/explain/serve"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/policy"
)

// AbsentOwnerCacheSize is the number of confirmed-absent owners remembered.
const AbsentOwnerCacheSize = 4096

var (
	crdResource        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Engine is the assembled collector. Build it with NewManager.
type Engine struct {
	graph     *graph.Graph
	policy    *policy.Store
	discovery *ogdiscovery.Discoverer
	monitors  *monitor.Set
	collector *collector.Collector
	// apiGC are the API-level collectors (terminated Pods, finished Jobs,
	// CertificateSigningRequests), in the order of spec.collectors.
	apiGC  []apigc.Collector
	status *notifier

	// access authenticates and authorizes the metrics server's requests;
	// set when the metrics server starts.
	access atomic.Pointer[access.Access]

	// triggers watches CRDs (metadata) and APIServices (whole objects,
	// for their backend service) to trigger rediscoveries.
	crds        toolscache.SharedIndexInformer
	apiServices toolscache.SharedIndexInformer
	informers   []interface{ Start(<-chan struct{}) }
	deletedCRDs *nameSet

	// cluster names the engine's cluster in the fleet mode, empty in the
	// single-cluster mode; metrics are the metrics it writes.
	cluster string
	metrics *metrics.Set
}

// NewManager builds a controller-runtime manager from cfg and opts, with
// what the engine needs in its options (the metadata transform, the
// informer constructor that tracks failing resources, a REST mapper that
// follows discovery), and the engine on it: discovery, the graph and the
// monitors run on every replica, the collector and the API-level
// collectors on the leader only. The collectors' writes and live reads are
// rate-limited by cfg's QPS and Burst.
func NewManager(cfg *rest.Config, opts ctrl.Options) (manager.Manager, *Engine, error) {
	return newManager("", cfg, opts, Tuning{})
}

// NewClusterManager is NewManager for the engine of one cluster of a fleet,
// named cluster: its metrics carry the cluster label.
func NewClusterManager(cluster string, cfg *rest.Config, opts ctrl.Options) (manager.Manager, *Engine, error) {
	return newManager(cluster, cfg, opts, Tuning{})
}

// Tuning changes what only tests need to change; main.go never sets it, and
// no flag or GCPolicy field reaches it.
type Tuning struct {
	// PodQuarantine replaces kube-controller-manager's 40 s quarantine
	// before the terminated-Pod collector confirms that a Node is gone.
	PodQuarantine time.Duration
	// Explain replaces /explain's limits and sets its test hook.
	Explain serve.Options
}

// /explain's live reads go through a client of their own, and the metrics
// server's TokenReviews and SubjectAccessReviews through clients of their
// own: neither ever takes from the collectors' rate limit (--kube-api-qps).
const (
	explainQPS, explainBurst = 10, 20
	accessQPS, accessBurst   = 20, 40
)

// NewTunedManager is NewManager with tuning.
func NewTunedManager(cfg *rest.Config, opts ctrl.Options, tuning Tuning) (manager.Manager, *Engine, error) {
	return newManager("", cfg, opts, tuning)
}

// newManager builds the engine of cluster (empty: the single-cluster mode).
func newManager(cluster string, cfg *rest.Config, opts ctrl.Options, tuning Tuning) (_ manager.Manager, _ *Engine, err error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating discovery client: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the HTTP client: %w", err)
	}
	typed, err := apigc.NewClients(cfg, httpClient)
	if err != nil {
		return nil, nil, err
	}
	explainClient, err := metadata.NewForConfig(withRateLimit(cfg, explainQPS, explainBurst))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the explanations' metadata client: %w", err)
	}
	e := &Engine{
		graph:       graph.New(AbsentOwnerCacheSize),
		policy:      policy.NewStore(),
		deletedCRDs: newNameSet(),
		cluster:     cluster,
		metrics:     metrics.For(cluster),
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
	metaInformers := metadatainformer.NewSharedInformerFactory(mc, 0)
	dynInformers := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	e.crds = metaInformers.ForResource(crdResource).Informer()
	e.apiServices = dynInformers.ForResource(apiServiceResource).Informer()
	e.informers = []interface{ Start(<-chan struct{}) }{metaInformers, dynInformers}
	e.discovery = ogdiscovery.New(ogdiscovery.Options{Client: dc, CRDDeleted: e.deletedCRDs.has, APIServices: e.listAPIServices})
	e.discovery.Subscribe(func(ogdiscovery.Change) { e.status.kick() })

	listWatches := monitor.NewListWatches(e.status.kick)
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(listWatches.Transport)
	opts.Cache.DefaultTransform = monitor.Transform
	if opts.Metrics.SecureServing {
		// Every request is authenticated; /explain authorizes each request
		// by the object it asks about, the other paths by URL.
		opts.Metrics.FilterProvider = func(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
			a, err := access.New(withRateLimit(c, accessQPS, accessBurst), httpClient)
			if err != nil {
				return nil, err
			}
			e.access.Store(a)
			return a.Filter(explain.Path), nil
		}
	}
	opts.MapperProvider = func(c *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
		fallback, err := apiutil.NewDynamicRESTMapper(c, httpClient)
		if err != nil {
			return nil, err
		}
		return ogdiscovery.NewMapper(e.discovery, fallback), nil
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, err
	}

	e.collector = collector.New(collector.Options{
		Graph:       e.graph,
		Resources:   e.discovery,
		Objects:     (*objects)(e),
		Client:      mc,
		Recorder:    mgr.GetEventRecorder("ownergc-garbage-collector"),
		Policy:      e.policy,
		GraphSynced: func() bool { return e.monitors.Status().Synced },
		Changed:     e.status.kick,
		Metrics:     e.metrics,
		// DryRun's decisions go at the pace of the writes they stand for.
		DryRunLimiter: clientRateLimiter(cfg),

		// Explanations read through a client of their own.
		ExplainClient: explainClient,
	})
	e.monitors = monitor.NewSet(monitor.Options{
		Config:      cfg,
		HTTPClient:  mgr.GetHTTPClient(),
		ListWatches: listWatches,
		Graph:       e.graph,
		Sink:        e.collector,
		Policy:      e.policy,
		Discovery:   e.discovery,
		Changed:     e.status.kick,
	})
	apiGC := apigc.Options{Client: typed, Policy: e.policy, Changed: e.status.kick, PodQuarantine: tuning.PodQuarantine, Metrics: e.metrics}
	e.apiGC = []apigc.Collector{
		apigc.NewTerminatedPods(apiGC),
		apigc.NewFinishedJobs(apiGC),
		apigc.NewCertificateSigningRequests(apiGC),
	}
	if err := mgr.AddMetricsServerExtraHandler(debug.GraphPath, debug.GraphHandler(e.graph)); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddMetricsServerExtraHandler(explain.Path, serve.Handler((*explainer)(e), e.authorizer, tuning.Explain)); err != nil {
		return nil, nil, err
	}
	for _, r := range []manager.Runnable{
		everywhere(e.runTriggers),
		e.discovery,
		e.monitors,
		e.collector,
		everywhere(e.status.run),
		everywhere(e.runGauges),
		e.apiGC[0], e.apiGC[1], e.apiGC[2],
	} {
		if err := mgr.Add(r); err != nil {
			return nil, nil, err
		}
	}
	return mgr, e, nil
}

// Cluster returns the name of the engine's cluster in the fleet mode, empty
// in the single-cluster mode.
func (e *Engine) Cluster() string { return e.cluster }

// Release lets go of what the engine holds outside its manager, once the
// manager has stopped or will never start (fleet mode: a cluster's engine is
// built again for each run): it shuts down the collector's queues (their
// goroutines run from construction; the collector's Start shuts them down
// too, but a manager that failed before starting it never called it) and
// deletes the series of the engine's cluster (the single-cluster metrics
// stay). By then every queue is shut down: the collector's here, an API-level
// collector's when its session ends, before the manager's Start returns. A
// queue that outlived it (a runnable past the manager's graceful-shutdown
// timeout) writes to series already deleted, which no registry reports
// (metrics.Set.Forget).
func (e *Engine) Release() {
	if e.collector != nil {
		e.collector.Close()
	}
	e.metrics.Forget()
}

// Policy returns the policy in force.
func (e *Engine) Policy() *policy.Policy { return e.policy.Get() }

// SetPolicy puts p in force.
func (e *Engine) SetPolicy(p *policy.Policy) { e.policy.Set(p) }

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
func (e *Engine) authorizer() serve.Authorizer {
	if a := e.access.Load(); a != nil {
		return a
	}
	return nil
}

// explainer explains objects for the /explain endpoint.
type explainer Engine

// Resolve implements serve.Explainer. It checks the query's names first
// (explain.ValidateQuery); by UID, a node whose name or namespace cannot be
// one path segment (a virtual node made from an owner reference) names no
// object: explain.ErrNotFound.
func (x *explainer) Resolve(q url.Values) (explain.Target, error) {
	if err := explain.ValidateQuery(q); err != nil {
		return explain.Target{}, err
	}
	snap := x.discovery.Snapshot()
	if snap == nil {
		return explain.Target{}, errors.New("discovery has not run yet")
	}
	if q.Has("uid") {
		n := x.graph.Node(types.UID(q.Get("uid")))
		if n == nil {
			return explain.Target{}, explain.ErrNotFound
		}
		id := x.graph.Describe(n).Identity
		r, ok := snap.Resolve(id.GroupVersionKind())
		if !ok {
			return explain.Target{}, explain.ErrNotFound
		}
		ns := id.Namespace
		if !r.Namespaced {
			ns = ""
		}
		if explain.ValidatePath(ns, id.Name) != nil {
			return explain.Target{}, explain.ErrNotFound
		}
		return explain.Target{Resource: r.GroupVersionResource, Kind: r.GVK(), Namespaced: r.Namespaced, Namespace: ns, Name: id.Name}, nil
	}
	gvr := schema.GroupVersionResource{Group: q.Get("group"), Version: q.Get("version"), Resource: q.Get("resource")}
	name := q.Get("name")
	if gvr.Version == "" || gvr.Resource == "" || name == "" {
		return explain.Target{}, errors.New("give version, resource and name (group and namespace where they apply), or uid")
	}
	r, ok := snap.ForResource(gvr)
	if !ok {
		return explain.Target{}, fmt.Errorf("the API server does not serve %s", ogdiscovery.FormatGVR(gvr))
	}
	ns := q.Get("namespace")
	if !r.Namespaced {
		ns = ""
	} else if ns == "" {
		return explain.Target{}, fmt.Errorf("%s is namespaced: give a namespace", ogdiscovery.FormatGVR(gvr))
	}
	return explain.Target{Resource: r.GroupVersionResource, Kind: r.GVK(), Namespaced: r.Namespaced, Namespace: ns, Name: name}, nil
}

// Explain implements serve.Explainer.
func (x *explainer) Explain(ctx context.Context, t explain.Target, limits explain.Limits, visible explain.Visibility) explain.Explanation {
	return x.collector.Explain(ctx, t, limits.Reads, visible)
}

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

// runTriggers watches CustomResourceDefinitions and APIServices (in
// informers of their own, so that ignoring those resources does not stop
// them) and asks for a rediscovery on every change. It records the CRDs it
// sees deleted: their resources' objects are gone.
func (e *Engine) runTriggers(ctx context.Context) error {
	trigger := func(any) { e.discovery.TriggerWithFollowUps() }
	if _, err := e.crds.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			e.deletedCRDs.remove(nameOf(o))
			trigger(o)
		},
		UpdateFunc: func(_, o any) { trigger(o) },
		DeleteFunc: func(o any) {
			e.deletedCRDs.add(nameOf(o))
			trigger(o)
		},
	}); err != nil {
		return err
	}
	if _, err := e.apiServices.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    trigger,
		UpdateFunc: func(_, o any) { trigger(o) },
		DeleteFunc: trigger,
	}); err != nil {
		return err
	}
	for _, f := range e.informers {
		f.Start(ctx.Done())
	}
	<-ctx.Done()
	return nil
}

func nameOf(o any) string {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		return tomb.Key
	}
	if m, ok := o.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

// listAPIServices lists the registered group-versions and whether each has
// a backend service, from the APIService informer.
func (e *Engine) listAPIServices(context.Context) (map[schema.GroupVersion]bool, error) {
	if !e.apiServices.HasSynced() {
		return nil, errors.New("APIServices not listed yet")
	}
	out := make(map[schema.GroupVersion]bool)
	for _, item := range e.apiServices.GetStore().List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
		service, _, _ := unstructured.NestedMap(u.Object, "spec", "service")
		out[schema.GroupVersion{Group: group, Version: version}] = service != nil
	}
	return out, nil
}

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

// nameSet is a set of names safe for concurrent use.
type nameSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func newNameSet() *nameSet { return &nameSet{names: make(map[string]bool)} }

func (s *nameSet) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[name] = true
}

func (s *nameSet) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.names, name)
}

func (s *nameSet) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// withRateLimit returns a copy of cfg whose clients have a rate limit of
// their own, at qps and burst.
func withRateLimit(cfg *rest.Config, qps float32, burst int) *rest.Config {
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
