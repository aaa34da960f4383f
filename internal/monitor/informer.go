package monitor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// failureGrace is how long list or watch errors must persist before a
// resource is reported as failed, so that one dropped connection does not
// flap the status.
const failureGrace = 5 * time.Second

// Informers is the cache's informer constructor (cache.Options.NewInformer).
// It builds the metadata informers the monitors watch through, without a
// namespace index (the collector never lists by namespace, and the index
// costs memory per object), and records each one's list and watch errors:
// how a resource that cannot be listed is found.
//
// Concurrency: mu guards errs. Each informer's errors live in a listErrors of
// its own, which its list and watch functions write from the informer's
// goroutines: an informer that was replaced or stopped can only write to its
// own, forgotten, record.
type Informers struct {
	mu   sync.Mutex
	errs map[schema.GroupVersionKind]*listErrors
	// changed is called when a resource starts or stops failing.
	changed func()
}

// NewInformers returns an informer constructor; changed, when not nil, is
// called (without locks held) when a resource may have started or stopped
// failing.
func NewInformers(changed func()) *Informers {
	if changed == nil {
		changed = func() {}
	}
	return &Informers{errs: make(map[schema.GroupVersionKind]*listErrors), changed: changed}
}

// listErrors is the error state of one informer.
type listErrors struct {
	// failing is set while err is; it keeps the success path lock-free.
	failing atomic.Bool
	mu      sync.Mutex
	err     error
	since   time.Time
	timer   *time.Timer
}

// New implements cache.NewInformerFunc.
func (i *Informers) New(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if pom, ok := obj.(*metav1.PartialObjectMetadata); ok {
		if l, ok := lw.(*toolscache.ListWatch); ok {
			st := &listErrors{}
			i.mu.Lock()
			i.errs[pom.GroupVersionKind()] = st
			i.mu.Unlock()
			lw = i.tracking(st, l)
		}
		indexers = nil
	}
	return toolscache.NewSharedIndexInformerWithOptions(lw, obj, toolscache.SharedIndexInformerOptions{
		ResyncPeriod: resync,
		Indexers:     indexers,
	})
}

// Failing returns the error of the informer for gvk if it has failed to list
// or watch for longer than the grace period.
func (i *Informers) Failing(gvk schema.GroupVersionKind, now time.Time) (error, bool) {
	i.mu.Lock()
	st, ok := i.errs[gvk]
	i.mu.Unlock()
	if !ok || !st.failing.Load() {
		return nil, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil || now.Sub(st.since) < failureGrace {
		return nil, false
	}
	return st.err, true
}

// Forget drops the error record of gvk's informer, once the informer is
// removed from the cache.
func (i *Informers) Forget(gvk schema.GroupVersionKind) {
	i.mu.Lock()
	st, ok := i.errs[gvk]
	delete(i.errs, gvk)
	i.mu.Unlock()
	if ok {
		st.mu.Lock()
		if st.timer != nil {
			st.timer.Stop()
		}
		st.mu.Unlock()
	}
}

// record sets the informer's error state; err nil means it works.
func (i *Informers) record(st *listErrors, err error) {
	if err == nil && !st.failing.Load() {
		return
	}
	st.mu.Lock()
	changed := false
	switch {
	case err == nil:
		st.err = nil
		st.failing.Store(false)
		if st.timer != nil {
			st.timer.Stop()
			st.timer = nil
		}
		changed = time.Since(st.since) >= failureGrace
	case st.err == nil:
		st.err, st.since = err, time.Now()
		st.failing.Store(true)
		// Reported once the grace period has passed.
		st.timer = time.AfterFunc(failureGrace, i.changed)
	default:
		st.err = err
	}
	st.mu.Unlock()
	if changed {
		i.changed()
	}
}

// tracking wraps an informer's list and watch functions to record errors: a
// failed list or watch call, and an error reported inside a watch stream
// (with streaming lists, the initial list arrives through the watch); a
// successful list, or any object or bookmark the watch delivers, clears
// them.
func (i *Informers) tracking(st *listErrors, l *toolscache.ListWatch) *toolscache.ListWatch {
	list, watchFn := l.ListWithContextFunc, l.WatchFuncWithContext
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out, err := list(ctx, opts)
			i.record(st, err)
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, opts)
			if err != nil {
				i.record(st, err)
				return w, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if ev.Type == watch.Error {
					i.record(st, apiStatusError(ev.Object))
				} else {
					i.record(st, nil)
				}
				return ev, true
			}), nil
		},
	}
}

// watchError is an error event of a watch stream.
type watchError struct{ msg string }

func (e *watchError) Error() string { return e.msg }

func apiStatusError(obj runtime.Object) error {
	if s, ok := obj.(*metav1.Status); ok {
		if s.Reason == metav1.StatusReasonExpired || s.Code == 410 {
			// A compacted resourceVersion: the informer relists, which is
			// not a failure of the resource.
			return nil
		}
		return &watchError{msg: s.Message}
	}
	return &watchError{msg: "watch reported an error"}
}
