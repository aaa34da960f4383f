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

package collector

import (
	"context"
	"errors"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/logging"
)

// orphanParallelism bounds the patches one orphaning owner sends at once.
const orphanParallelism = 8

// processAttemptToOrphan removes an owner deleted with the orphan policy from
// the owner references of its dependents, then removes its orphan finalizer.
func (c *Collector) processAttemptToOrphan(ctx context.Context, n *graph.Node) error {
	s := c.opts.Graph.Describe(n)
	var err error
	if !s.Removed && s.Orphaning {
		ctx = ctrl.LoggerInto(ctx, logging.WithValues(ctrl.LoggerFrom(ctx), "owner", s.Identity))
		err = c.orphan(ctx, n, s)
	}
	c.trackFailures(n, s.Identity, err)
	return err
}

func (c *Collector) orphan(ctx context.Context, n *graph.Node, s graph.NodeState) error {
	deps := c.opts.Graph.Dependents(n, false)
	ctrl.LoggerFrom(ctx).V(2).Info("Orphaning dependents", "dependents", len(deps))

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, orphanParallelism)
	)
	for _, d := range deps {
		obj, ok := c.opts.Objects.Cached(d.Identity.GroupKind(), d.Identity.Namespace, d.Identity.Name)
		if ok && obj.UID == d.Identity.UID && !hasOwner(obj, s.Identity.UID) {
			continue // already orphaned
		}
		if !ok || obj.UID != d.Identity.UID {
			obj = nil
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(dep graph.Identity, obj *metav1.PartialObjectMetadata) {
			defer func() { <-sem; wg.Done() }()
			changed, err := c.removeOwnerRefs(ctx, ActionOrphan, dep, obj, []types.UID{s.Identity.UID})
			if err != nil {
				mu.Lock()
				errs = append(errs, c.aboutIdentity(dep, err)) // about the dependent, not the owner
				mu.Unlock()
				return
			}
			if changed {
				c.opts.Metrics.OrphanedDependents.Inc()
				ctrl.LoggerFrom(ctx).V(2).Info("Orphaned dependent", "dependent", dep)
			}
		}(d.Identity, obj)
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := c.confirmDormantEmpty(ctx); err != nil {
		return err
	}

	obj, ok := c.opts.Objects.Cached(s.Identity.GroupKind(), s.Identity.Namespace, s.Identity.Name)
	if !ok || obj.UID != s.Identity.UID {
		obj = nil
	}
	return c.removeFinalizer(ctx, s.Identity, obj, metav1.FinalizerOrphanDependents)
}

func hasOwner(obj *metav1.PartialObjectMetadata, uid types.UID) bool {
	return slices.ContainsFunc(obj.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
}
