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

package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/engine"
)

// gcPolicyKind is the GCPolicy's group, version and kind.
var gcPolicyKind = ownergcv1alpha1.GroupVersion.WithKind("GCPolicy")

// NewMemberController returns the GCPolicy controller of a fleet member, to
// run beside its engine (engine.Engine.Run) with no manager of its own: the
// member's GCPolicies are followed by one watch (policyFollower, a
// reflector into a store of its own, no informer), which the reconciler
// reads through its client; its writes (the GCPolicy it creates, the
// status) go through conn; one worker reconciles, on the queue NewQueue
// builds. It reconciles what SetupWithManager's controller reconciles:
// the policy's creation, deletion and changes to anything but its status,
// the engine's status changes, and once at the start. r.Client is set to
// the member's client, r.Elected to nil (every member's engine leads).
//
// A cluster that does not serve GCPolicies makes it return a
// NoKindMatchError (see fleet.Options.Setup). syncTimeout bounds the wait
// for the first list (0: controller-runtime's default); log is the
// controller's logger.
func (r *GCPolicyReconciler) NewMemberController(conn engine.Connection, log logr.Logger, syncTimeout time.Duration) (manager.Runnable, error) {
	if _, err := conn.Mapper.RESTMapping(gcPolicyKind.GroupKind(), gcPolicyKind.Version); err != nil {
		return nil, fmt.Errorf("mapping GCPolicies: %w", asNoKindMatch(err))
	}
	rc, err := apiutil.RESTClientForGVK(gcPolicyKind, false, false, conn.Config, serializer.NewCodecFactory(conn.Scheme), conn.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("creating the GCPolicies' REST client: %w", err)
	}
	follower := newPolicyFollower(toolscache.NewListWatchFromClient(rc, "gcpolicies", "", fields.Everything()), log)
	c, err := client.New(conn.Config, client.Options{
		HTTPClient: conn.HTTPClient, Scheme: conn.Scheme, Mapper: conn.Mapper,
		Cache: &client.CacheOptions{Reader: follower},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the GCPolicies' client: %w", err)
	}
	r.Client, r.Elected = c, nil
	r.Engine.OnStatusChange(follower.kick)
	ctl, err := controller.NewTypedUnmanaged("gcpolicy", controller.TypedOptions[reconcile.Request]{
		Reconciler:         r,
		NewQueue:           r.NewQueue,
		SkipNameValidation: ptr.To(true),
		NeedLeaderElection: ptr.To(false),
		Logger:             log,
		CacheSyncTimeout:   syncTimeout,
	})
	if err != nil {
		return nil, err
	}
	if err := ctl.Watch(follower); err != nil {
		return nil, err
	}
	return ctl, nil
}

// policyFollower follows a member's GCPolicies through one watch: a
// client-go reflector (one goroutine, and its watch's) into a store of its
// own. It is the member's GCPolicy controller's source: it queues the
// policy on its creation and deletion and on changes of its generation,
// labels or annotations (what policyChanged passes; the status writes
// that come back are not queued), on the engine's status changes (kick),
// and once when it starts; and it is the reader of the controller's
// client, answering Get about GCPolicies from the store.
//
// Concurrency: mu guards objects and queue; the reflector alone writes the
// store, the reconciler and kick read it from other goroutines.
type policyFollower struct {
	reflector *toolscache.Reflector
	synced    chan struct{}
	syncOnce  sync.Once

	mu      sync.Mutex
	objects map[string]*ownergcv1alpha1.GCPolicy
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

var (
	_ source.TypedSyncingSource[reconcile.Request] = (*policyFollower)(nil)
	_ client.Reader                                = (*policyFollower)(nil)
	_ toolscache.ReflectorStore                    = (*policyStore)(nil)
)

func newPolicyFollower(lw toolscache.ListerWatcher, log logr.Logger) *policyFollower {
	f := &policyFollower{synced: make(chan struct{}), objects: make(map[string]*ownergcv1alpha1.GCPolicy)}
	log = log.WithName("gcpolicies")
	f.reflector = toolscache.NewReflectorWithOptions(lw, &ownergcv1alpha1.GCPolicy{}, (*policyStore)(f),
		toolscache.ReflectorOptions{Name: "gcpolicies", Logger: &log})
	return f
}

// Start implements source.Source: it starts the reflector, until ctx ends,
// and queues the policy once.
func (f *policyFollower) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	f.mu.Lock()
	f.queue = queue
	f.mu.Unlock()
	go f.reflector.RunWithContext(ctx)
	f.kick()
	return nil
}

// WaitForSync implements source.SyncingSource: the first list has been
// stored. Cancelled (the engine stops), it returns nil, as
// controller-runtime's sources do; past the controller's CacheSyncTimeout,
// an error.
func (f *policyFollower) WaitForSync(ctx context.Context) error {
	select {
	case <-f.synced:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil
		}
		return fmt.Errorf("the GCPolicies were not listed: %w", ctx.Err())
	}
}

func (f *policyFollower) String() string { return "member GCPolicies" }

// kick queues the policy, once the follower has started.
func (f *policyFollower) kick() { f.queueName(ownergcv1alpha1.PolicyName) }

func (f *policyFollower) queueName(name string) {
	f.mu.Lock()
	q := f.queue
	f.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}

// Get implements client.Reader for GCPolicies, from the store: a copy,
// NotFound when the store has none of that name.
func (f *policyFollower) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	out, ok := obj.(*ownergcv1alpha1.GCPolicy)
	if !ok {
		return fmt.Errorf("the member's GCPolicy reader reads GCPolicies, not %T", obj)
	}
	f.mu.Lock()
	stored := f.objects[key.Name]
	f.mu.Unlock()
	if stored == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: gcPolicyKind.Group, Resource: "gcpolicies"}, key.Name)
	}
	stored.DeepCopyInto(out)
	out.SetGroupVersionKind(gcPolicyKind)
	return nil
}

// List implements client.Reader: the controller never lists.
func (f *policyFollower) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the member's GCPolicy reader does not list")
}

// policyStore is the follower as the reflector's store.
type policyStore policyFollower

func (s *policyStore) Add(obj any) error    { return s.put(obj) }
func (s *policyStore) Update(obj any) error { return s.put(obj) }
func (s *policyStore) Resync() error        { return nil }

func (s *policyStore) Delete(obj any) error {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	gcp, ok := obj.(*ownergcv1alpha1.GCPolicy)
	if !ok {
		return fmt.Errorf("unexpected object %T in the GCPolicies' watch", obj)
	}
	s.mu.Lock()
	_, had := s.objects[gcp.Name]
	delete(s.objects, gcp.Name)
	s.mu.Unlock()
	if had {
		(*policyFollower)(s).queueName(gcp.Name)
	}
	return nil
}

// put stores a created or updated GCPolicy, and queues it unless only its
// status (or nothing the controller reconciles) changed.
func (s *policyStore) put(obj any) error {
	gcp, ok := obj.(*ownergcv1alpha1.GCPolicy)
	if !ok {
		return fmt.Errorf("unexpected object %T in the GCPolicies' watch", obj)
	}
	s.mu.Lock()
	old := s.objects[gcp.Name]
	s.objects[gcp.Name] = gcp
	s.mu.Unlock()
	if policyDiffers(old, gcp) {
		(*policyFollower)(s).queueName(gcp.Name)
	}
	return nil
}

// Replace stores a new list, queueing what it created, changed or deleted,
// and marks the follower synced.
func (s *policyStore) Replace(list []any, _ string) error {
	next := make(map[string]*ownergcv1alpha1.GCPolicy, len(list))
	for _, obj := range list {
		gcp, ok := obj.(*ownergcv1alpha1.GCPolicy)
		if !ok {
			return fmt.Errorf("unexpected object %T in the GCPolicies' list", obj)
		}
		next[gcp.Name] = gcp
	}
	s.mu.Lock()
	prev := s.objects
	s.objects = next
	s.mu.Unlock()
	for name, gcp := range next {
		if policyDiffers(prev[name], gcp) {
			(*policyFollower)(s).queueName(name)
		}
	}
	for name := range prev {
		if next[name] == nil {
			(*policyFollower)(s).queueName(name)
		}
	}
	s.syncOnce.Do(func() { close(s.synced) })
	return nil
}

// policyDiffers reports whether next, stored where old was (nil: none),
// is what policyChanged passes: a creation, or a change of its generation,
// labels or annotations.
func policyDiffers(old, next *ownergcv1alpha1.GCPolicy) bool {
	return old == nil || old.Generation != next.Generation ||
		!maps.Equal(old.Labels, next.Labels) || !maps.Equal(old.Annotations, next.Annotations)
}
