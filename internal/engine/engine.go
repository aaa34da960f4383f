// Package engine assembles ownergc's engines — discovery, the per-kind
// monitors feeding the graph, and the collector — and wires them into a
// controller-runtime manager. main.go and the integration tests use it the
// same way.
package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ownergc/ownergc/internal/collector"
	"github.com/ownergc/ownergc/internal/debug"
	ogdiscovery "github.com/ownergc/ownergc/internal/discovery"
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

// Engine is the assembled collector.
type Engine struct {
	Graph     *graph.Graph
	Policy    *policy.Store
	Discovery *ogdiscovery.Discoverer
	Monitors  *monitor.Set
	Collector *collector.Collector

	metadata  metadata.Interface
	triggers  metadatainformer.SharedInformerFactory
	crdLister toolscache.SharedIndexInformer
}

// New builds an engine talking to the API server of cfg. The collector's
// writes and live reads are rate-limited by cfg's QPS and Burst.
func New(cfg *rest.Config) (*Engine, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}
	e := &Engine{
		Graph:    graph.New(AbsentOwnerCacheSize),
		Policy:   policy.NewStore(),
		metadata: mc,
		triggers: metadatainformer.NewSharedInformerFactory(mc, 0),
	}
	e.crdLister = e.triggers.ForResource(crdResource).Informer()
	e.Discovery = ogdiscovery.New(ogdiscovery.Options{Client: dc, CRDExists: e.crdExists})
	e.Monitors = monitor.NewSet(nil, e.Graph, nil, e.Policy, e.Discovery)
	return e, nil
}

// ManagerOptions adds what the engine needs to the manager's options: the
// metadata transform, the informer constructor that tracks failing
// resources, and a REST mapper that follows discovery.
func (e *Engine) ManagerOptions(o ctrl.Options) ctrl.Options {
	o.Cache.DefaultTransform = monitor.Transform
	o.Cache.NewInformer = e.Monitors.NewInformer
	o.MapperProvider = func(c *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
		fallback, err := apiutil.NewDynamicRESTMapper(c, httpClient)
		if err != nil {
			return nil, err
		}
		return ogdiscovery.NewMapper(e.Discovery, fallback), nil
	}
	return o
}

// SetupWithManager creates the collector and adds every engine to mgr. The
// graph, discovery and monitors run on every replica; the collector's workers
// run on the leader only.
func (e *Engine) SetupWithManager(mgr manager.Manager) error {
	e.Collector = collector.New(collector.Options{
		Graph:       e.Graph,
		Resources:   e.Discovery,
		Objects:     e.Monitors,
		Client:      e.metadata,
		Recorder:    mgr.GetEventRecorder("ownergc-garbage-collector"),
		Policy:      e.Policy,
		GraphSynced: e.Monitors.Synced,
	})
	if err := mgr.AddMetricsServerExtraHandler(debug.GraphPath, debug.GraphHandler(e.Graph)); err != nil {
		return err
	}
	e.Monitors.SetCache(mgr.GetCache())
	e.Monitors.SetSink(e.Collector)
	for _, r := range []manager.Runnable{
		everywhere(e.runTriggers),
		e.Discovery,
		e.Monitors,
		e.Collector,
		everywhere(e.runGauges),
	} {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return nil
}

// Status returns the state of discovery and the monitors.
func (e *Engine) Status() monitor.Status { return e.Monitors.Status() }

// GraphSize returns the number of nodes and virtual nodes in the graph.
func (e *Engine) GraphSize() (nodes, virtual int) { return e.Graph.Len(), e.Graph.VirtualLen() }

// GraphSyncedCheck is a readiness check: ready once the graph has synced
// every resource that can be synced.
func (e *Engine) GraphSyncedCheck(_ *http.Request) error {
	st := e.Monitors.Status()
	if st.Synced {
		return nil
	}
	if len(st.Syncing) > 0 {
		return fmt.Errorf("graph is syncing %d resources: %s", len(st.Syncing), strings.Join(first(st.Syncing, 5), ", "))
	}
	return errors.New("discovery has not completed")
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

// runTriggers watches CustomResourceDefinitions and APIServices (metadata
// only, in informers of their own so that ignoring those resources does not
// stop them) and asks for a rediscovery on every change.
func (e *Engine) runTriggers(ctx context.Context) error {
	trigger := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { e.Discovery.TriggerWithFollowUps() },
		UpdateFunc: func(any, any) { e.Discovery.TriggerWithFollowUps() },
		DeleteFunc: func(any) { e.Discovery.TriggerWithFollowUps() },
	}
	if _, err := e.crdLister.AddEventHandler(trigger); err != nil {
		return err
	}
	if _, err := e.triggers.ForResource(apiServiceResource).Informer().AddEventHandler(trigger); err != nil {
		return err
	}
	e.triggers.Start(ctx.Done())
	<-ctx.Done()
	e.triggers.Shutdown()
	return nil
}

func (e *Engine) crdExists(name string) (exists, known bool) {
	if !e.crdLister.HasSynced() {
		return false, false
	}
	_, exists, err := e.crdLister.GetIndexer().GetByKey(name)
	return exists, err == nil
}

// runGauges keeps the graph gauges current.
func (e *Engine) runGauges(ctx context.Context) error {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		metrics.GraphNodes.Set(float64(e.Graph.Len()))
		metrics.GraphVirtualNodes.Set(float64(e.Graph.VirtualLen()))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
