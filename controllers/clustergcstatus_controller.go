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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/fleet"
)

// Fleet is what the ClusterGCStatus controller reads of the fleet.
type Fleet interface {
	State(cluster string) (fleet.MemberState, bool)
	// Refusal says why a kubeconfig Secret engages no cluster.
	Refusal(cluster string) error
	Probe(ctx context.Context, cluster string, timeout time.Duration) error
	Subscribe(fn func(name string))
}

// ClusterGCStatusReconciler writes, on the host of a fleet, the
// ClusterGCStatus of every cluster whose engine runs on this replica, named
// after the cluster in the namespace of the kubeconfig Secrets and owned by
// the cluster's Secret; it deletes the status of a cluster whose Secret is
// gone or no longer labelled. A Secret that engages no cluster (its
// kubeconfig is refused or unusable) gets a status that says why, written
// the same by every replica. Clusters are reconciled concurrently, and a cluster's API server is
// probed with a short timeout, so that one that does not answer never delays
// another's status.
//
// Concurrency: several clusters are reconciled at once (one cluster by one
// worker at a time, as controller-runtime does); mu guards superseded.
type ClusterGCStatusReconciler struct {
	client.Client
	Fleet Fleet
	// Namespace holds the kubeconfig Secrets and the statuses.
	Namespace string
	// Replica names this replica in the statuses it writes.
	Replica string
	// SecretLabel is the label of the kubeconfig Secrets (default
	// fleet.KubeconfigSecretLabel).
	SecretLabel string
	// RefreshInterval bounds how stale a status gets (default 10s).
	RefreshInterval time.Duration
	// ProbeTimeout bounds the probe of a cluster's API server (default 3s).
	ProbeTimeout time.Duration

	// superseded holds, by cluster, the resourceVersion of its status
	// that this reconciler's last write replaced: a cache that still
	// holds it has not seen that write yet (a status is created, then
	// written, and the creation's event usually comes first). Reconciled
	// from that copy, the status would be written again over a stale
	// resourceVersion, and refused as a conflict: in a storm of twenty
	// members (`go run ./test/bench -only storm`), twelve of the twenty
	// statuses were, a host request each.
	mu         sync.Mutex
	superseded map[string]string
}

// statusRewriteInterval is how often an unchanged status is written again,
// to show that its replica is alive: every two minutes, a thousand idle
// members write some eight times a second to the host (every minute, one
// write per member and minute was more than half of `make bench`'s
// allowance of 0.02 writes per second per idle member, and a member's
// first minute, when its kinds with no object are first checked, took the
// rest).
const statusRewriteInterval = 2 * time.Minute

// Reconcile writes the status of one cluster.
func (r *ClusterGCStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := req.Name
	st, engaged := r.Fleet.State(name)
	var secret corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		// The cluster left the fleet: so does its status.
		r.forget(name)
		gone := &ownergcv1alpha1.ClusterGCStatus{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
		return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, gone))
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading the Secret of cluster %s: %w", name, err)
	case secret.Labels[r.secretLabel()] != "true":
		// The Secret no longer engages a cluster: the status goes.
		r.forget(name)
		gone := &ownergcv1alpha1.ClusterGCStatus{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
		return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, gone))
	}
	refusal := r.Fleet.Refusal(name)
	if refusal == nil && !engaged {
		r.forget(name)
		return ctrl.Result{}, nil // another replica collects it, or none yet
	}

	var cgs ownergcv1alpha1.ClusterGCStatus
	err = r.Get(ctx, req.NamespacedName, &cgs)
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return ctrl.Result{}, fmt.Errorf("reading the status of cluster %s: %w", name, err)
	}
	if !missing && r.stale(name, cgs.ResourceVersion) {
		// The event of the write that replaced it reconciles again.
		return ctrl.Result{RequeueAfter: r.refresh()}, nil
	}
	var next ownergcv1alpha1.ClusterGCStatusStatus
	if refusal == nil {
		probe := r.Fleet.Probe(ctx, name, r.probeTimeout())
		next = r.status(name, cgs.Status, st, probe)
		if young := r.refresh() - time.Since(st.Engaged); young > 0 && startingOnly(next.Conditions) {
			// Not written, nor created if missing: see startingOnly.
			return ctrl.Result{RequeueAfter: young}, nil
		}
	}
	if missing {
		cgs = ownergcv1alpha1.ClusterGCStatus{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
		if err := controllerutil.SetOwnerReference(&secret, &cgs, r.Scheme()); err != nil {
			return ctrl.Result{}, fmt.Errorf("owning the status of cluster %s by its Secret: %w", name, err)
		}
		if err := r.Create(ctx, &cgs, client.FieldOwner(FieldManager)); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating the status of cluster %s: %w", name, err)
		}
	}

	if refusal != nil {
		// Nothing runs and nothing changes until the Secret does: written
		// once, on change, the same by every replica.
		next = refusedStatus(name, cgs.Status, refusal)
		if apiequality.Semantic.DeepEqual(withoutUpdate(next), withoutUpdate(cgs.Status)) {
			return ctrl.Result{}, nil
		}
		now := metav1.Now()
		next.LastUpdate = &now
		cgs.Status = next
		return r.writeStatus(ctx, &cgs, 0)
	}
	if last := cgs.Status.LastUpdate; last != nil {
		age := time.Since(last.Time)
		switch {
		case apiequality.Semantic.DeepEqual(withoutUpdate(next), withoutUpdate(cgs.Status)) && age < statusRewriteInterval:
			return ctrl.Result{RequeueAfter: r.refresh()}, nil
		case age >= 0 && age < r.refresh() && clusterProgressOnly(cgs.Status, next):
			// Counts and messages alone moved: written once the stored
			// status is RefreshInterval old, as the periodic refresh
			// writes them.
			return ctrl.Result{RequeueAfter: r.refresh() - age}, nil
		}
	}
	now := metav1.Now()
	next.LastUpdate = &now
	cgs.Status = next
	return r.writeStatus(ctx, &cgs, r.refresh())
}

// writeStatus writes a ClusterGCStatus's status and has it reconciled again
// after next (0: not); after a conflict, in a second.
func (r *ClusterGCStatusReconciler) writeStatus(ctx context.Context, cgs *ownergcv1alpha1.ClusterGCStatus, next time.Duration) (ctrl.Result, error) {
	replaced := cgs.ResourceVersion
	if err := r.Status().Update(ctx, cgs, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the status of cluster %s: %w", cgs.Name, err)
	}
	r.mu.Lock()
	if r.superseded == nil {
		r.superseded = make(map[string]string)
	}
	r.superseded[cgs.Name] = replaced
	r.mu.Unlock()
	return ctrl.Result{RequeueAfter: next}, nil
}

// stale reports whether resourceVersion is that of a cluster's status that
// this reconciler's last write replaced; once the cache holds another, the
// record goes.
func (r *ClusterGCStatusReconciler) stale(cluster, resourceVersion string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	replaced, ok := r.superseded[cluster]
	if ok && replaced == resourceVersion {
		return true
	}
	delete(r.superseded, cluster)
	return false
}

// forget drops what stale knows of a cluster that left.
func (r *ClusterGCStatusReconciler) forget(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.superseded, cluster)
}

// refusedStatus is the status of a cluster whose Secret engages no cluster.
func refusedStatus(name string, prev ownergcv1alpha1.ClusterGCStatusStatus, refusal error) ownergcv1alpha1.ClusterGCStatusStatus {
	reason := ownergcv1alpha1.ReasonSecretInvalid
	msg := fmt.Sprintf("No cluster is engaged for this Secret: %v", refusal)
	if ke := fleet.AsKubeconfigError(refusal); ke != nil && ke.Refused {
		reason = ownergcv1alpha1.ReasonKubeconfigRefused
		msg = fmt.Sprintf("No cluster is engaged for this Secret: its kubeconfig's %v. Write the Secret again without it to engage the cluster", refusal)
	}
	s := ownergcv1alpha1.ClusterGCStatusStatus{Cluster: name, Conditions: append([]metav1.Condition(nil), prev.Conditions...)}
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ownergcv1alpha1.ConditionReady,
		Status: metav1.ConditionFalse, Reason: reason, Message: truncate(msg)})
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ownergcv1alpha1.ConditionDegraded,
		Status: metav1.ConditionTrue, Reason: reason, Message: truncate(msg)})
	return s
}

// secretLabel is the label of the kubeconfig Secrets.
func (r *ClusterGCStatusReconciler) secretLabel() string {
	if r.SecretLabel != "" {
		return r.SecretLabel
	}
	return fleet.KubeconfigSecretLabel
}

// status computes the status of a cluster from its engine's state and the
// probe of its API server.
func (r *ClusterGCStatusReconciler) status(name string, prev ownergcv1alpha1.ClusterGCStatusStatus, st fleet.MemberState, probe error) ownergcv1alpha1.ClusterGCStatusStatus {
	// As the API server keeps it: to the second. Kept to the nanosecond,
	// it never equalled the stored status, which was written again on
	// every reconcile instead of on change.
	engaged := metav1.NewTime(st.Engaged.Truncate(time.Second))
	s := ownergcv1alpha1.ClusterGCStatusStatus{Cluster: name, Replica: r.Replica, Engaged: &engaged,
		EngineStarts: int32(st.Starts), Conditions: prev.Conditions}
	ready := metav1.Condition{Type: ownergcv1alpha1.ConditionReady}
	degraded := metav1.Condition{Type: ownergcv1alpha1.ConditionDegraded}
	var es engine.Status
	if st.Engine != nil {
		es = st.Engine.Status()
		s.MonitoredResources, s.FailedResources = int32(es.Monitored), int32(len(es.Failed))
		s.Nodes, s.VirtualNodes = int64(es.Nodes), int64(es.VirtualNodes)
		s.BlockedDeletions = int32(es.Blocked.Count)
	}
	switch {
	case st.Engine == nil && errors.Is(st.LastError, fleet.ErrTooManyObjects):
		ready.Status, ready.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonObjectLimitExceeded
		ready.Message = truncate(fmt.Sprintf("The cluster's engine stopped, and is built again after a while: %v", st.LastError))
	case st.Engine == nil && st.LastError != nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonEngineFailed
		ready.Message = truncate(fmt.Sprintf("The cluster's engine is not running, and is built again with backoff: %v", st.LastError))
	case st.Engine == nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ownergcv1alpha1.ReasonStarting, "The cluster's engine is starting"
	case es.Synced:
		ready.Status, ready.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonSynced
		ready.Message = fmt.Sprintf("The graph has synced all %d monitored resources", es.Monitored)
	default:
		ready.Status, ready.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonSyncing
		ready.Message = fmt.Sprintf("The graph is syncing %d resources", len(es.Syncing))
	}
	switch {
	case probe != nil:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonUnreachable
		degraded.Message = truncate(fmt.Sprintf("The cluster's API server does not answer; its collection waits, the other clusters' does not: %v", probe))
	case st.Engine == nil && st.LastError != nil:
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, ready.Reason, ready.Message
	case len(es.Failed) > 0:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonResourcesUnavailable
		degraded.Message = fmt.Sprintf("%d resources cannot be watched; collection of all others continues (the cluster's GCPolicy lists them)", len(es.Failed))
	default:
		degraded.Status, degraded.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonAllResourcesAvailable
		degraded.Message = "The cluster answers and every resource that should be watched is watched"
	}
	s.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	apimeta.SetStatusCondition(&s.Conditions, ready)
	apimeta.SetStatusCondition(&s.Conditions, degraded)
	return s
}

// clusterProgressOnly reports whether next differs from the stored status only in
// what an engine's progress moves — the counts of monitored resources and
// nodes, the conditions' messages, and Ready going from Starting to
// Syncing — and not in what a reader waits for or acts on: which
// conditions hold and why, the replica, the engine's start, failures and
// blocked deletions (written at once, as on the cluster's GCPolicy).
// Progress alone (the monitors syncing one by one) is written at most
// every RefreshInterval, the rest at once: in a storm of twenty members
// (`go run ./test/bench -only storm`) a status was still written about
// three times after its creation (among what is written at once: the
// engine's first start, engineStarts from 0 to 1).
func clusterProgressOnly(stored, next ownergcv1alpha1.ClusterGCStatusStatus) bool {
	if stored.Cluster != next.Cluster || stored.Replica != next.Replica || stored.EngineStarts != next.EngineStarts ||
		stored.FailedResources != next.FailedResources || stored.BlockedDeletions != next.BlockedDeletions || !apiequality.Semantic.DeepEqual(stored.Engaged, next.Engaged) ||
		len(stored.Conditions) != len(next.Conditions) {
		return false
	}
	for _, n := range next.Conditions {
		c := apimeta.FindStatusCondition(stored.Conditions, n.Type)
		if c == nil || c.Status != n.Status {
			return false
		}
		startingToSyncing := n.Type == ownergcv1alpha1.ConditionReady && inProgress(c.Reason) && inProgress(n.Reason)
		if c.Reason != n.Reason && !startingToSyncing {
			return false
		}
	}
	return true
}

// inProgress: Ready's reason while an engine starts or syncs.
func inProgress(reason string) bool {
	return reason == ownergcv1alpha1.ReasonStarting || reason == ownergcv1alpha1.ReasonSyncing
}

func withoutUpdate(s ownergcv1alpha1.ClusterGCStatusStatus) ownergcv1alpha1.ClusterGCStatusStatus {
	s.LastUpdate = nil
	return s
}

func (r *ClusterGCStatusReconciler) refresh() time.Duration {
	if r.RefreshInterval > 0 {
		return r.RefreshInterval
	}
	return 10 * time.Second
}

func (r *ClusterGCStatusReconciler) probeTimeout() time.Duration {
	if r.ProbeTimeout > 0 {
		return r.ProbeTimeout
	}
	return 3 * time.Second
}

// SetupWithManager registers the controller on the host manager: the
// fleet's changes, and the statuses' own, trigger a reconcile of their
// cluster. It runs on every replica (each writes the statuses of its own
// clusters), concurrently for several clusters.
func (r *ClusterGCStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Namespace == "" {
		return errors.New("the ClusterGCStatus controller needs the namespace of the kubeconfig Secrets")
	}
	changes := make(chan event.TypedGenericEvent[*ownergcv1alpha1.ClusterGCStatus], 1024)
	r.Fleet.Subscribe(func(cluster string) {
		obj := &ownergcv1alpha1.ClusterGCStatus{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: cluster}}
		select {
		case changes <- event.TypedGenericEvent[*ownergcv1alpha1.ClusterGCStatus]{Object: obj}:
		default: // the periodic refresh will catch up
		}
	})
	no := false
	return ctrl.NewControllerManagedBy(mgr).
		Named("clustergcstatus").
		For(&ownergcv1alpha1.ClusterGCStatus{}).
		WatchesRawSource(source.Channel(changes, &handler.TypedEnqueueRequestForObject[*ownergcv1alpha1.ClusterGCStatus]{})).
		WithOptions(controller.Options{NeedLeaderElection: &no, MaxConcurrentReconciles: 8}).
		Complete(r)
}

var _ reconcile.Reconciler = (*ClusterGCStatusReconciler)(nil)
