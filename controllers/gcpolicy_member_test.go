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
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// plainListWatch is a ListWatch the reflector lists and then watches (no
// streaming list: the fake watch does not end one).
type plainListWatch struct{ *toolscache.ListWatch }

func (plainListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// followed is a GCPolicy as the member's API server would store it.
func followed(name string, generation int64, rv string) *ownergcv1alpha1.GCPolicy {
	return &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation, ResourceVersion: rv,
		Labels: map[string]string{"team": "a"}}}
}

// A fleet member's GCPolicy controller follows the member's GCPolicies
// through one watch, step by step: synced once the first list is stored,
// the policy queued at the start and on its creation, changes of its spec,
// labels or annotations and its deletion, and not on its own status
// writes; the reconciler reads the policy from the follower (a copy), or
// NotFound.
func TestMemberPolicyFollower(t *testing.T) {
	fw := watch.NewFake()
	lw := plainListWatch{&toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &ownergcv1alpha1.GCPolicyList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
				Items: []ownergcv1alpha1.GCPolicy{*followed(ownergcv1alpha1.PolicyName, 1, "1")}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}}
	f := newPolicyFollower(lw, logr.Discard())
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()

	f.kick() // before the start: nowhere to queue, and no panic
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := f.Start(ctx, queue); err != nil {
		t.Fatalf("starting the follower: %v", err)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Second)
	defer syncCancel()
	if err := f.WaitForSync(syncCtx); err != nil {
		t.Fatalf("the follower did not sync: %v", err)
	}
	policyKey := types.NamespacedName{Name: ownergcv1alpha1.PolicyName}
	// drain waits until what is queued is named want (the follower queues
	// an event's request before it takes the next event), takes it, and
	// fails if anything else was queued.
	drain := func(step string, want ...string) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(10 * time.Second); len(got) < len(want); {
			if queue.Len() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%s: queued %v within 10s, want %v", step, got, want)
				}
				time.Sleep(5 * time.Millisecond)
				continue
			}
			req, _ := queue.Get()
			got = append(got, req.Name)
			queue.Done(req)
			queue.Forget(req)
		}
		if queue.Len() > 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: queued %v (and %d more), want %v", step, got, queue.Len(), want)
		}
	}
	// read waits until the reader holds what the watch sent (rv).
	read := func(step, rv string) *ownergcv1alpha1.GCPolicy {
		t.Helper()
		var gcp ownergcv1alpha1.GCPolicy
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			err := f.Get(ctx, policyKey, &gcp)
			if rv == "" && apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil && gcp.ResourceVersion == rv {
				return &gcp
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the reader holds %q (error %v), want resource version %q", step, gcp.ResourceVersion, err, rv)
			}
		}
	}

	got := read("the first list", "1")
	if got.GroupVersionKind() != gcPolicyKind {
		t.Errorf("the reader's GCPolicy has kind %v, want %v", got.GroupVersionKind(), gcPolicyKind)
	}
	got.Labels["team"] = "changed"
	if again := read("a copy", "1"); again.Labels["team"] != "a" {
		t.Error("changing what Get returned changed the follower's store")
	}
	drain("the start and the first list", ownergcv1alpha1.PolicyName)

	// A status write queues nothing: the creation of another policy,
	// queued after it, is all there is.
	status := followed(ownergcv1alpha1.PolicyName, 1, "2")
	status.Status.Graph.Nodes = 42
	fw.Modify(status)
	fw.Add(followed("other", 1, "3"))
	read("a status write", "2")
	drain("a status write, then another policy", "other")

	fw.Modify(followed(ownergcv1alpha1.PolicyName, 2, "4"))
	read("a spec change", "4")
	drain("a spec change", ownergcv1alpha1.PolicyName)

	annotated := followed(ownergcv1alpha1.PolicyName, 2, "5")
	annotated.Annotations = map[string]string{"note": "x"}
	fw.Modify(annotated)
	read("an annotation", "5")
	drain("an annotation", ownergcv1alpha1.PolicyName)

	fw.Delete(followed(ownergcv1alpha1.PolicyName, 2, "6"))
	read("the deletion", "")
	drain("the deletion", ownergcv1alpha1.PolicyName)

	fw.Add(followed(ownergcv1alpha1.PolicyName, 1, "7"))
	read("the creation", "7")
	drain("the creation", ownergcv1alpha1.PolicyName)

	f.kick()
	drain("a change of the engine's status", ownergcv1alpha1.PolicyName)

	if err := f.Get(ctx, policyKey, &metav1.PartialObjectMetadata{}); err == nil {
		t.Error("the reader read something other than a GCPolicy")
	}
	if err := f.List(ctx, &ownergcv1alpha1.GCPolicyList{}); err == nil {
		t.Error("the reader listed")
	}
}

// What the member's reflector hands over as a new list is stored whole:
// the policies it no longer holds are queued (a deletion missed while the
// watch was down), those unchanged but for their status are not.
func TestMemberPolicyStoreReplace(t *testing.T) {
	f := newPolicyFollower(plainListWatch{&toolscache.ListWatch{}}, logr.Discard())
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	f.queue = queue
	store := (*policyStore)(f)
	if err := store.Replace([]any{followed("default", 1, "1"), followed("other", 1, "1")}, "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.synced:
	default:
		t.Fatal("the follower is not synced after its first list")
	}
	queued := func() []string {
		var names []string
		for queue.Len() > 0 {
			req, _ := queue.Get()
			names = append(names, req.Name)
			queue.Done(req)
			queue.Forget(req)
		}
		return names
	}
	if got := fmt.Sprint(queued()); got != "[default other]" && got != "[other default]" {
		t.Fatalf("the first list queued %s, want both policies", got)
	}
	status := followed("default", 1, "2")
	status.Status.Graph.Nodes = 7
	if err := store.Replace([]any{status}, "2"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(queued()); got != "[other]" {
		t.Fatalf("a relist without `other` and with a status change of `default` queued %s, want [other]", got)
	}
	var gcp ownergcv1alpha1.GCPolicy
	if err := f.Get(context.Background(), client.ObjectKey{Name: "other"}, &gcp); !apierrors.IsNotFound(err) {
		t.Fatalf("reading the policy the relist dropped: %v, want NotFound", err)
	}
	if err := store.Add(&ownergcv1alpha1.GCPolicyList{}); err == nil {
		t.Error("the store took something other than a GCPolicy")
	}
}
