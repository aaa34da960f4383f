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

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// expectation is what a workload waits for in its namespace: objects that
// must disappear, objects whose reference to an owner must be removed, and
// objects that must survive. Keys are "configmaps/<name>" or "secrets/<name>".
type expectation struct {
	mustGo   map[string]bool
	orphanOf map[string]types.UID
	mustStay map[string]bool
}

func newExpectation() *expectation {
	return &expectation{mustGo: map[string]bool{}, orphanOf: map[string]types.UID{}, mustStay: map[string]bool{}}
}

// tracker watches the ConfigMaps and Secrets of one namespace through
// informers (the benchmark's only reads during a measurement are this LIST
// and WATCH) and notes the moment the expectation is met.
type tracker struct {
	mu         sync.Mutex
	exp        *expectation
	violations []string
	met        time.Time
	done       chan struct{}
	cancel     context.CancelFunc
	last       time.Time
	gone       []time.Time // deletion events of expected ConfigMap deletions
}

func (b *bench) track(ns string, exp *expectation) (*tracker, error) { return trackOn(b.cs, ns, exp) }

// trackOn tracks namespace ns of the cluster of cs.
func trackOn(cs kubernetes.Interface, ns string, exp *expectation) (*tracker, error) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &tracker{exp: exp, done: make(chan struct{}), cancel: cancel}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	for _, inf := range []struct {
		resource string
		informer cache.SharedIndexInformer
	}{
		{"configmaps", factory.Core().V1().ConfigMaps().Informer()},
		{"secrets", factory.Core().V1().Secrets().Informer()},
	} {
		resource := inf.resource
		_, err := inf.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) { t.updated(resource, obj) },
			DeleteFunc: func(obj any) { t.deleted(resource, obj) },
		})
		if err != nil {
			cancel()
			return nil, err
		}
	}
	factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer syncCancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("the benchmark's informer for %v did not sync", typ)
		}
	}
	t.mu.Lock()
	t.check()
	t.mu.Unlock()
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

func key(resource string, obj any) (string, metav1.Object) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return resource + "/" + o.Name, o
	case *corev1.Secret:
		return resource + "/" + o.Name, o
	}
	return "", nil
}

func (t *tracker) updated(resource string, obj any) {
	t.observe(resource, obj, func(k string, o metav1.Object) {
		if uid, ok := t.exp.orphanOf[k]; ok && !hasOwner(o, uid) {
			delete(t.exp.orphanOf, k)
		}
		if t.exp.mustStay[k] && o.GetDeletionTimestamp() != nil {
			t.violations = append(t.violations, k+" is being deleted but must survive")
		}
	})
}

func (t *tracker) deleted(resource string, obj any) {
	t.observe(resource, obj, func(k string, _ metav1.Object) {
		if t.exp.mustGo[k] && resource == "configmaps" {
			t.gone = append(t.gone, t.last)
		}
		delete(t.exp.mustGo, k)
		if t.exp.mustStay[k] {
			t.violations = append(t.violations, k+" was deleted but must survive")
		}
	})
}

// observe notes an event about obj, of resource: apply changes the
// expectation (with mu held, t.last its time), then it is checked.
func (t *tracker) observe(resource string, obj any, apply func(k string, o metav1.Object)) {
	k, o := key(resource, obj)
	if o == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	apply(k, o)
	t.check()
}

func hasOwner(o metav1.Object, uid types.UID) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// check notes the first moment nothing is pending. Callers hold mu.
func (t *tracker) check() {
	if t.met.IsZero() && len(t.exp.mustGo) == 0 && len(t.exp.orphanOf) == 0 {
		t.met = time.Now()
		close(t.done)
	}
}

// wait blocks until the expectation is met, the timeout passes or alive
// fails; it returns the moment the expectation was met.
func (t *tracker) wait(timeout time.Duration, alive func() error, progress func(pending string)) (time.Time, error) {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			t.mu.Lock()
			defer t.mu.Unlock()
			return t.met, t.violationErr()
		case <-deadline:
			return time.Time{}, fmt.Errorf("not done after %s: %s", timeout, t.pending())
		case <-tick.C:
			if err := alive(); err != nil {
				return time.Time{}, err
			}
			if progress != nil {
				progress(t.pending())
			}
		}
	}
}

func (t *tracker) pending() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := fmt.Sprintf("%d objects still to be deleted, %d owner references still to be removed", len(t.exp.mustGo), len(t.exp.orphanOf))
	if len(t.violations) > 0 {
		s += "; " + t.violationErr().Error()
	}
	return s
}

// violations reports objects that must survive but did not.
func (t *tracker) violationErr() error {
	if len(t.violations) == 0 {
		return nil
	}
	v := append([]string(nil), t.violations...)
	sort.Strings(v)
	if len(v) > 5 {
		v = append(v[:5], fmt.Sprintf("and %d more", len(t.violations)-5))
	}
	return fmt.Errorf("wrong collection: %s", strings.Join(v, "; "))
}

// finalViolations re-checks the survivors after the fact.
func (t *tracker) finalViolations() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.violationErr()
}

// progress returns when the first, half and 90% of the expected ConfigMap
// deletions were seen, relative to t0.
func (t *tracker) progress(t0 time.Time) (first, half, p90 time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.gone) == 0 {
		return 0, 0, 0
	}
	at := func(q float64) time.Duration {
		i := int(q * float64(len(t.gone)))
		if i >= len(t.gone) {
			i = len(t.gone) - 1
		}
		return t.gone[i].Sub(t0)
	}
	return t.gone[0].Sub(t0), at(0.5), at(0.9)
}
