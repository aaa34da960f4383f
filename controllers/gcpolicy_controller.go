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

// Package controllers holds the GCPolicy controller, which puts the
// `default` GCPolicy in force in the engine and reports the engine's state in
// the policy's status (gcpolicy_controller.go), and, in the fleet mode, the
// ClusterGCStatus controller, which reports each cluster's engine on the
// host (clustergcstatus_controller.go).
package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/apigc"
	"github.com/ownergc/ownergc/internal/collector"
	"github.com/ownergc/ownergc/internal/engine"
	"github.com/ownergc/ownergc/internal/expiry"
	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/policy"
)

// Engine is what the controller needs from the engine.
type Engine interface {
	// Policy returns the policy in force; SetPolicy puts one in force;
	// SettlePolicy says the defaults in force are the cluster's (it has no
	// GCPolicy). Until one of the two, the collector does not act.
	Policy() *policy.Policy
	SetPolicy(*policy.Policy)
	SettlePolicy()
	// Status returns the state of the engine.
	Status() engine.Status
	// OnStatusChange registers f to be called when what the status
	// reports changes: readiness, the monitored and failed resources, the
	// blocked deletions, the shadow (DryRun's comparison starting or
	// stopping, a disagreement), the unmatched ignored resources or an
	// API-level collector's state (engine.Engine.OnStatusChange). The
	// graph's size, the shadow's agreements and the collectors' counts
	// are refreshed every RefreshInterval instead.
	OnStatusChange(f func())
	// UnmatchedIgnored returns the entries that match no served resource;
	// discovered is false before the first discovery.
	UnmatchedIgnored(entries []schema.GroupResource) (unmatched []schema.GroupResource, discovered bool)
}

// Event reasons recorded on the GCPolicy.
const (
	ReasonPolicyApplied        = "PolicyApplied"
	ReasonBecameReady          = "Ready"
	ReasonResourcesUnavailable = ownergcv1alpha1.ReasonResourcesUnavailable
	ReasonResourcesRecovered   = "ResourcesRecovered"
	// ReasonIgnoredResourcesUnmatched (Warning): some entries of
	// spec.ignoredResources match no served resource, recorded when the
	// IgnoredResourcesResolved condition becomes False or names other
	// entries.
	ReasonIgnoredResourcesUnmatched = "IgnoredResourcesUnmatched"
	// ReasonIgnoredResourcesMatched: every entry matches again.
	ReasonIgnoredResourcesMatched = "IgnoredResourcesMatched"
	// ReasonExpiryRulesUnmatched (Warning): some rules of
	// spec.collectors.expiry.rules match no served resource, recorded when
	// the ExpiryRulesResolved condition becomes False or names other
	// rules; ReasonExpiryRulesMatched: every rule matches again.
	ReasonExpiryRulesUnmatched = "ExpiryRulesUnmatched"
	ReasonExpiryRulesMatched   = "ExpiryRulesMatched"
	// ReasonCreatedWithDefaults: the manager created the GCPolicy with the
	// defaults, since none existed.
	ReasonCreatedWithDefaults = "CreatedWithDefaults"
)

// FieldManager is the field manager of the GCPolicy the manager creates: a
// server-side apply that changes its fields conflicts with "ownergc".
const FieldManager = "ownergc"

const (
	maxFailedResources = 100
	maxMessage         = 1024
)

// GCPolicyReconciler puts the `default` GCPolicy in force and reports status:
// conditions, the monitored and failed resources, the graph's size, the
// blocked deletions (their number and the oldest), the shadow (in DryRun, how
// the collector's decisions compare with another collector's) and the
// API-level collectors.
// It runs on every replica, since every replica's graph follows the policy;
// only the leader writes status and records events, and creates the policy
// with the defaults when none exists (at start and after a deletion), so that
// what is in force is always visible.
type GCPolicyReconciler struct {
	client.Client
	Engine   Engine
	Recorder events.EventRecorder
	// Elected is closed once this replica leads (mgr.Elected()).
	Elected <-chan struct{}
	// RefreshInterval bounds how stale the status gets (default 10s).
	RefreshInterval time.Duration
	// Heartbeat, when set, is how often the status is written when nothing
	// but its lastSyncTime would change; unset, it is written at every
	// refresh. (A fleet's members: a minute.)
	Heartbeat time.Duration
	// NewQueue, when set, builds the controller's workqueue
	// (controller.Options.NewQueue): a fleet member's, whose ticker wakes
	// less often (engine.Engine.QueueClock).
	NewQueue func(controllerName string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]

	// started is done once, when the reconciler first reconciles as the
	// leader, and startedAt is when (see startingOnly).
	started   sync.Once
	startedAt time.Time
}

// +kubebuilder:rbac:groups=ownergc.io,resources=gcpolicies,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=ownergc.io,resources=gcpolicies/status,verbs=patch

// Reconcile puts the policy in force and refreshes its status.
func (r *GCPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if req.Name != ownergcv1alpha1.PolicyName {
		return ctrl.Result{}, nil // the schema refuses other names
	}
	var gcp ownergcv1alpha1.GCPolicy
	if err := r.Get(ctx, req.NamespacedName, &gcp); err != nil {
		if apierrors.IsNotFound(err) {
			if r.Engine.Policy().FromPolicy {
				log.Info("GCPolicy deleted, the built-in defaults are in force")
				r.Engine.SetPolicy(policy.Defaults())
			}
			// The cache has synced (the controller starts after it): the
			// cluster has no GCPolicy, and the defaults are its policy.
			r.Engine.SettlePolicy()
			if !r.leading() {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, r.createDefault(ctx)
		}
		return ctrl.Result{}, err
	}

	p, applyErr := policy.FromSpec(&gcp.Spec, gcp.Generation)
	applied := false
	if applyErr == nil {
		if cur := r.Engine.Policy(); !cur.FromPolicy || cur.Generation != gcp.Generation {
			log.Info("Putting GCPolicy in force", "generation", gcp.Generation, "propagationPolicy", p.DefaultPropagation,
				"attemptToDelete", p.AttemptToDeleteWorkers, "attemptToOrphan", p.AttemptToOrphanWorkers, "ignored", len(p.Ignored))
			r.Engine.SetPolicy(p)
			applied = true
		}
	}
	if !r.leading() {
		return ctrl.Result{RequeueAfter: r.refresh()}, nil
	}

	r.started.Do(func() { r.startedAt = time.Now() })
	before := gcp.DeepCopy()
	r.computeStatus(&gcp, applyErr)
	if applied && before.Status.ObservedGeneration != gcp.Generation {
		// News of the policy, not of this manager: a manager (or a
		// fleet's engine) that starts again puts in force the generation
		// its status already reports, and records nothing for it (a
		// thousand members engaged at once would write a thousand such
		// Events).
		r.Recorder.Eventf(&gcp, nil, corev1.EventTypeNormal, ReasonPolicyApplied, "Apply", "Generation %d is in force", gcp.Generation)
	}
	if later, ok := r.notYet(before.Status, gcp.Status); ok {
		// Nothing written, so no transition either: it is recorded when
		// the status that makes it is written.
		return ctrl.Result{RequeueAfter: later}, nil
	}
	r.recordTransitions(before, &gcp)
	if !equality.Semantic.DeepEqual(before.Status, gcp.Status) {
		if err := r.Status().Patch(ctx, &gcp, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patching status of GCPolicy %s: %w", gcp.Name, err)
		}
	}
	return ctrl.Result{RequeueAfter: r.refresh()}, nil
}

// createDefault creates the GCPolicy `default` with the defaults, labelled and
// annotated as created by the manager. Its creation, seen by the informer,
// reconciles it.
func (r *GCPolicyReconciler) createDefault(ctx context.Context) error {
	gcp := &ownergcv1alpha1.GCPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ownergcv1alpha1.PolicyName,
			Labels:      map[string]string{ownergcv1alpha1.LabelManagedBy: ownergcv1alpha1.ManagedByOwnergc},
			Annotations: map[string]string{ownergcv1alpha1.AnnotationDescription: ownergcv1alpha1.CreatedWithDefaultsDescription},
		},
		Spec: ownergcv1alpha1.DefaultSpec(),
	}
	if err := r.Create(ctx, gcp, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // created meanwhile, by someone else: its own event reconciles it
		}
		return fmt.Errorf("creating GCPolicy %s with the defaults: %w", gcp.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created GCPolicy with the built-in defaults, since none existed", "name", gcp.Name)
	r.Recorder.Eventf(gcp, nil, corev1.EventTypeNormal, ReasonCreatedWithDefaults, "Create",
		"Created by the manager with the built-in defaults, since no GCPolicy existed")
	return nil
}

// notYet reports whether next is not written over the stored status now,
// and when to look again. It is not when it differs in lastSyncTime alone
// and the stored one is younger than the heartbeat; nor when it differs in
// progress alone (policyProgressOnly) and the stored one is younger than the
// refresh interval: then it is written once the stored one is that old, as
// the periodic refresh writes it.
//
// next is compared as the API server would store it: its times to the
// second (the collectors' lastRun, the shadow's), which the stored status
// holds only to the second. A stored lastSyncTime ahead of this replica's
// clock (written by another replica) counts as due.
func (r *GCPolicyReconciler) notYet(stored, next ownergcv1alpha1.GCPolicyStatus) (time.Duration, bool) {
	if young := r.refresh() - time.Since(r.startedAt); young > 0 && startingOnly(next.Conditions) {
		return young, true
	}
	if stored.LastSyncTime == nil {
		return 0, false
	}
	age := time.Since(stored.LastSyncTime.Time)
	if age < 0 {
		return 0, false
	}
	data, err := json.Marshal(next)
	if err != nil {
		return 0, false
	}
	var asStored ownergcv1alpha1.GCPolicyStatus
	if err := json.Unmarshal(data, &asStored); err != nil {
		return 0, false
	}
	if r.Heartbeat > 0 && age < r.Heartbeat {
		a, b := stored, asStored
		a.LastSyncTime, b.LastSyncTime = nil, nil
		if equality.Semantic.DeepEqual(a, b) {
			return r.refresh(), true
		}
	}
	if age < r.refresh() && policyProgressOnly(stored, asStored) {
		return r.refresh() - age, true
	}
	return 0, false
}

// startingOnly reports whether conditions (a GCPolicy's status, or a
// ClusterGCStatus's) say no more than that the engine is starting: Ready is
// False because the engine is starting or the graph (or an enabled
// collector's cache) is still syncing, and nothing is Degraded. For the
// first RefreshInterval after an engine starts, such a status is not
// written over the stored one (the GCPolicy's: notYet, from the
// reconciler's first reconcile as the leader; the ClusterGCStatus's: from
// the member's engagement, and not created either): the first write after
// a start is, for an engine that syncs within it, the synced status, in one
// write rather than three (discovering, resolved, synced; on the host:
// starting, started, synced), and a failure is written at once. Twenty
// members engaged at once (`go run ./test/bench -only storm`) wrote some 65
// such GCPolicy statuses, each a status PATCH of a custom resource that
// cost the member's API server about 6 ms of CPU: some 18 % of what the
// members' API servers did in the storm's first three seconds; and some 57
// ClusterGCStatus updates to the host. Meanwhile the stored status is the
// last one written, with its lastSyncTime (lastUpdate): a restarted
// replica's earlier Ready stays until the new engine has synced or the
// interval has passed.
func startingOnly(conditions []metav1.Condition) bool {
	ready := apimeta.FindStatusCondition(conditions, ownergcv1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionFalse && inProgress(ready.Reason) &&
		!apimeta.IsStatusConditionTrue(conditions, ownergcv1alpha1.ConditionDegraded)
}

// policyProgressOnly reports whether next differs from stored only in what the
// engine's progress moves: lastSyncTime, the number of monitored
// resources, the graph's size, and Ready's message while it is Syncing
// (which resources are still syncing). Every other change is written at
// once: in a storm of twenty members (`go run ./test/bench -only storm`) a
// member's status was still written about three times, each write with
// such a change (the ignored resources and expiry rules resolved once
// discovery ran, the collectors' state, Ready); it is between the engine's
// kicks at rest that the rule writes less.
func policyProgressOnly(stored, next ownergcv1alpha1.GCPolicyStatus) bool {
	a, b := *stored.DeepCopy(), *next.DeepCopy()
	for _, s := range []*ownergcv1alpha1.GCPolicyStatus{&a, &b} {
		s.LastSyncTime, s.MonitoredResources, s.Graph = nil, 0, ownergcv1alpha1.GraphStatus{}
	}
	ra := apimeta.FindStatusCondition(a.Conditions, ownergcv1alpha1.ConditionReady)
	rb := apimeta.FindStatusCondition(b.Conditions, ownergcv1alpha1.ConditionReady)
	if ra != nil && rb != nil && ra.Reason == ownergcv1alpha1.ReasonSyncing && rb.Reason == ownergcv1alpha1.ReasonSyncing {
		ra.Message, rb.Message = "", ""
	}
	return equality.Semantic.DeepEqual(a, b)
}

func (r *GCPolicyReconciler) refresh() time.Duration {
	if r.RefreshInterval > 0 {
		return r.RefreshInterval
	}
	return 10 * time.Second
}

func (r *GCPolicyReconciler) leading() bool {
	if r.Elected == nil {
		return true
	}
	select {
	case <-r.Elected:
		return true
	default:
		return false
	}
}

// computeStatus fills gcp.Status from the engine: the monitored and failed
// resources, the graph's size, the blocked deletions, the shadow, the
// API-level collectors and the conditions.
func (r *GCPolicyReconciler) computeStatus(gcp *ownergcv1alpha1.GCPolicy, applyErr error) {
	st := r.Engine.Status()
	now := metav1.Now()
	s := &gcp.Status
	s.MonitoredResources = int32(st.Monitored)
	s.Graph = ownergcv1alpha1.GraphStatus{Nodes: int64(st.Nodes), VirtualNodes: int64(st.VirtualNodes)}
	s.LastSyncTime = &now
	s.BlockedDeletions = int32(st.Blocked.Count)
	s.OldestBlockedDeletion = nil
	if o := st.Blocked.Oldest; o != nil {
		s.OldestBlockedDeletion = &ownergcv1alpha1.BlockedDeletion{ObjectReference: objectReference(o.Owner, o.Resource), Since: metav1.NewTime(o.Since)}
	}
	s.Shadow = shadowStatus(st.Shadow)
	s.Collectors = collectorsStatus(st.Collectors)
	s.FailedResources = nil
	for i, f := range st.Failed {
		if i == maxFailedResources {
			break
		}
		s.FailedResources = append(s.FailedResources, ownergcv1alpha1.FailedResource{
			Group: f.Group, Version: f.Version, Resource: f.Resource, Message: truncate(f.Message),
		})
	}

	ready := metav1.Condition{Type: ownergcv1alpha1.ConditionReady, ObservedGeneration: gcp.Generation}
	switch {
	case applyErr != nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonApplyFailed
		ready.Message = truncate(fmt.Sprintf("The policy cannot be put in force: %v", applyErr))
	case !st.Synced:
		s.ObservedGeneration = gcp.Generation
		ready.Status, ready.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonSyncing
		if len(st.Syncing) > 0 {
			ready.Message = truncate(fmt.Sprintf("Syncing %d of %d monitored resources into the graph: %s",
				len(st.Syncing), st.Monitored, strings.Join(st.Syncing, ", ")))
		} else {
			ready.Message = "Discovering resources"
		}
	case len(syncingCollectors(st.Collectors)) > 0:
		s.ObservedGeneration = gcp.Generation
		ready.Status, ready.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonSyncing
		ready.Message = truncate("The graph has synced; enabled collectors syncing their caches: " + strings.Join(syncingCollectors(st.Collectors), ", "))
	default:
		s.ObservedGeneration = gcp.Generation
		ready.Status, ready.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonSynced
		ready.Message = fmt.Sprintf("Generation %d is in force and the graph has synced all %d monitored resources", gcp.Generation, st.Monitored)
		if enabled := enabledCollectors(st.Collectors); len(enabled) > 0 {
			ready.Message += "; the enabled collectors have synced their caches: " + strings.Join(enabled, ", ")
		}
	}
	apimeta.SetStatusCondition(&s.Conditions, ready)

	degraded := metav1.Condition{Type: ownergcv1alpha1.ConditionDegraded, ObservedGeneration: gcp.Generation}
	if len(st.Failed) > 0 {
		names := make([]string, 0, len(st.Failed))
		for _, f := range st.Failed {
			names = append(names, failedName(f))
		}
		degraded.Status, degraded.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonResourcesUnavailable
		degraded.Message = truncate(fmt.Sprintf("%d resources cannot be watched; collection of all others continues: %s",
			len(st.Failed), strings.Join(names, ", ")))
	} else {
		degraded.Status, degraded.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonAllResourcesAvailable
		degraded.Message = "Every resource that should be watched is watched"
	}
	apimeta.SetStatusCondition(&s.Conditions, degraded)
	apimeta.SetStatusCondition(&s.Conditions, r.ignoredCondition(gcp))
	apimeta.SetStatusCondition(&s.Conditions, r.expiryRulesCondition(gcp))
}

// expiryRulesCondition reports the rules of spec.collectors.expiry.rules
// that match no served resource, as ignoredCondition reports ignored
// resources.
func (r *GCPolicyReconciler) expiryRulesCondition(gcp *ownergcv1alpha1.GCPolicy) metav1.Condition {
	c := metav1.Condition{Type: ownergcv1alpha1.ConditionExpiryRulesResolved, ObservedGeneration: gcp.Generation}
	rules := gcp.Spec.Collectors.Expiry.Rules
	entries := make([]schema.GroupResource, 0, len(rules))
	for _, rule := range rules {
		entries = append(entries, schema.GroupResource{Group: rule.Group, Resource: rule.Resource})
	}
	unmatched, discovered := r.Engine.UnmatchedIgnored(entries)
	switch {
	case !discovered:
		c.Status, c.Reason = metav1.ConditionUnknown, ownergcv1alpha1.ReasonDiscovering
		c.Message = "Discovering the resources the API server serves"
	case len(unmatched) > 0:
		var names []string
		for i, e := range entries {
			if slices.Contains(unmatched, e) {
				names = append(names, fmt.Sprintf("rule %d %s", i+1, entryName(e)))
			}
		}
		c.Status, c.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonUnmatchedRules
		c.Message = truncate(fmt.Sprintf("%d of %d rules of spec.collectors.expiry.rules match no resource the API server serves and expire nothing "+
			"(resources are named by their plural, as kubectl api-resources lists them): %s", len(names), len(entries), strings.Join(names, ", ")))
	case len(entries) == 0:
		c.Status, c.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonAllRulesMatched
		c.Message = "spec.collectors.expiry.rules is empty"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonAllRulesMatched
		c.Message = fmt.Sprintf("Every rule of spec.collectors.expiry.rules (%d) matches a served resource", len(entries))
	}
	return c
}

// ignoredCondition reports the entries of spec.ignoredResources that match no
// served resource.
func (r *GCPolicyReconciler) ignoredCondition(gcp *ownergcv1alpha1.GCPolicy) metav1.Condition {
	c := metav1.Condition{Type: ownergcv1alpha1.ConditionIgnoredResourcesResolved, ObservedGeneration: gcp.Generation}
	entries := ignoredEntries(&gcp.Spec)
	unmatched, discovered := r.Engine.UnmatchedIgnored(entries)
	switch {
	case !discovered:
		c.Status, c.Reason = metav1.ConditionUnknown, ownergcv1alpha1.ReasonDiscovering
		c.Message = "Discovering the resources the API server serves"
	case len(unmatched) > 0:
		names := make([]string, 0, len(unmatched))
		for _, gr := range unmatched {
			names = append(names, entryName(gr))
		}
		c.Status, c.Reason = metav1.ConditionFalse, ownergcv1alpha1.ReasonUnmatchedEntries
		c.Message = truncate(fmt.Sprintf("%d of %d entries of spec.ignoredResources match no resource the API server serves and ignore nothing "+
			"(resources are named by their plural, as kubectl api-resources lists them): %s", len(unmatched), len(entries), strings.Join(names, ", ")))
	case len(entries) == 0:
		c.Status, c.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonAllEntriesMatched
		c.Message = "spec.ignoredResources is empty: nothing is ignored"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ownergcv1alpha1.ReasonAllEntriesMatched
		c.Message = fmt.Sprintf("Every entry of spec.ignoredResources (%d) matches a served resource", len(entries))
	}
	return c
}

// ignoredEntries returns the ignored resources a spec names: its list, or
// the default one when the field is omitted.
func ignoredEntries(spec *ownergcv1alpha1.GCPolicySpec) []schema.GroupResource {
	list := spec.IgnoredResources
	if list == nil {
		list = ownergcv1alpha1.DefaultIgnoredResources()
	}
	out := make([]schema.GroupResource, 0, len(list))
	for _, gr := range list {
		out = append(out, schema.GroupResource{Group: gr.Group, Resource: gr.Resource})
	}
	return out
}

// entryName names an entry of spec.ignoredResources as it is written.
func entryName(gr schema.GroupResource) string {
	return fmt.Sprintf("{group: %q, resource: %q}", gr.Group, gr.Resource)
}

// objectReference names an object of the graph in the status.
func objectReference(id graph.Identity, resource string) ownergcv1alpha1.ObjectReference {
	ref := ownergcv1alpha1.ObjectReference{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
	if parts := strings.Split(resource, "/"); len(parts) > 1 {
		ref.Resource = parts[len(parts)-1]
	}
	return ref
}

// syncingCollectors names the enabled API-level collectors whose caches have
// not synced, with what they watch.
func syncingCollectors(collectors []apigc.Status) []string {
	var out []string
	for _, c := range collectors {
		if c.Enabled && !c.Synced {
			s := fmt.Sprintf("%s (%s)", c.Name, c.Watches)
			if c.ListError != "" {
				s += " failing: " + c.ListError
			}
			out = append(out, s)
		}
	}
	return out
}

func enabledCollectors(collectors []apigc.Status) []string {
	var out []string
	for _, c := range collectors {
		if c.Enabled {
			out = append(out, c.Name)
		}
	}
	return out
}

// collectorFields are the fields of status.collectors, by the name of the
// API-level collector each reports (its field in spec.collectors,
// apigc.Status.Name). A test checks that every collector the engine builds
// has one.
var collectorFields = map[string]func(*ownergcv1alpha1.CollectorsStatus) *ownergcv1alpha1.CollectorStatus{
	"terminatedPods": func(s *ownergcv1alpha1.CollectorsStatus) *ownergcv1alpha1.CollectorStatus { return &s.TerminatedPods },
	"finishedJobs":   func(s *ownergcv1alpha1.CollectorsStatus) *ownergcv1alpha1.CollectorStatus { return &s.FinishedJobs },
	"certificateSigningRequests": func(s *ownergcv1alpha1.CollectorsStatus) *ownergcv1alpha1.CollectorStatus {
		return &s.CertificateSigningRequests
	},
	expiry.Name: func(s *ownergcv1alpha1.CollectorsStatus) *ownergcv1alpha1.CollectorStatus {
		return &s.Expiry.CollectorStatus
	},
}

// collectorsStatus reports the API-level collectors, each in the field of
// its name; nil when the engine reports none.
func collectorsStatus(collectors []apigc.Status) *ownergcv1alpha1.CollectorsStatus {
	if len(collectors) == 0 {
		return nil
	}
	out := &ownergcv1alpha1.CollectorsStatus{}
	for _, c := range collectors {
		field, ok := collectorFields[c.Name]
		if !ok {
			continue // a collector with no field in the status (a test fails)
		}
		s := ownergcv1alpha1.CollectorStatus{Enabled: c.Enabled, Synced: c.Enabled && c.Synced, Deleted: c.Deleted, DryRunDeletions: c.DryRunDeletions}
		if !c.LastRun.IsZero() {
			s.LastRun = ptr.To(metav1.NewTime(c.LastRun))
		}
		*field(out) = s
		if c.Name == expiry.Name {
			// The expiry collector reports what it has scheduled too.
			out.Expiry.Scheduled, out.Expiry.Invalid = c.Scheduled, c.Invalid
		}
	}
	return out
}

// shadowStatus reports the dry-run comparison, nil when not in dry-run.
func shadowStatus(sh collector.Shadow) *ownergcv1alpha1.ShadowStatus {
	if !sh.Active {
		return nil
	}
	out := &ownergcv1alpha1.ShadowStatus{Since: metav1.NewTime(sh.Since), Agreed: int64(sh.Agreed), Disagreed: int64(sh.Disagreed), Agreement: "-"}
	if total := sh.Agreed + sh.Disagreed; total > 0 {
		out.Agreement = fmt.Sprintf("%d%%", sh.Agreed*100/total)
	}
	if d := sh.LastDisagreement; d != nil {
		out.LastDisagreement = &ownergcv1alpha1.ShadowDisagreement{ObjectReference: objectReference(d.Object, ""),
			Action: d.Action, Message: truncate(d.Message), Time: metav1.NewTime(d.Time)}
	}
	return out
}

func failedName(f engine.Failure) string {
	gv := f.Version
	if f.Group != "" {
		gv = f.Group + "/" + f.Version
	}
	if f.Resource == "" {
		return gv
	}
	return gv + ", Resource=" + f.Resource
}

// recordTransitions records events for the condition changes an operator
// cares about.
func (r *GCPolicyReconciler) recordTransitions(before, after *ownergcv1alpha1.GCPolicy) {
	wasReady := apimeta.IsStatusConditionTrue(before.Status.Conditions, ownergcv1alpha1.ConditionReady)
	isReady := apimeta.IsStatusConditionTrue(after.Status.Conditions, ownergcv1alpha1.ConditionReady)
	if isReady && !wasReady {
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, ReasonBecameReady, "Sync",
			"The graph has synced all %d monitored resources", after.Status.MonitoredResources)
	}
	wasDegraded := apimeta.IsStatusConditionTrue(before.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
	degraded := apimeta.FindStatusCondition(after.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
	isDegraded := degraded != nil && degraded.Status == metav1.ConditionTrue
	switch {
	case isDegraded && !wasDegraded:
		r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, ReasonResourcesUnavailable, "Watch", "%s", degraded.Message)
	case !isDegraded && wasDegraded:
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, ReasonResourcesRecovered, "Watch", "Every resource that should be watched is watched again")
	}
	wasIgnored := apimeta.FindStatusCondition(before.Status.Conditions, ownergcv1alpha1.ConditionIgnoredResourcesResolved)
	ignored := apimeta.FindStatusCondition(after.Status.Conditions, ownergcv1alpha1.ConditionIgnoredResourcesResolved)
	wasUnmatched := wasIgnored != nil && wasIgnored.Status == metav1.ConditionFalse
	switch {
	case ignored == nil:
	case ignored.Status == metav1.ConditionFalse && (!wasUnmatched || wasIgnored.Message != ignored.Message):
		r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, ReasonIgnoredResourcesUnmatched, "Resolve", "%s", ignored.Message)
	case ignored.Status == metav1.ConditionTrue && wasUnmatched:
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, ReasonIgnoredResourcesMatched, "Resolve", "%s", ignored.Message)
	}
	wasRules := apimeta.FindStatusCondition(before.Status.Conditions, ownergcv1alpha1.ConditionExpiryRulesResolved)
	rules := apimeta.FindStatusCondition(after.Status.Conditions, ownergcv1alpha1.ConditionExpiryRulesResolved)
	wasRulesUnmatched := wasRules != nil && wasRules.Status == metav1.ConditionFalse
	switch {
	case rules == nil:
	case rules.Status == metav1.ConditionFalse && (!wasRulesUnmatched || wasRules.Message != rules.Message):
		r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, ReasonExpiryRulesUnmatched, "Resolve", "%s", rules.Message)
	case rules.Status == metav1.ConditionTrue && wasRulesUnmatched:
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, ReasonExpiryRulesMatched, "Resolve", "%s", rules.Message)
	}
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}

// SetupWithManager registers the controller; the engine's status changes
// trigger a reconcile of the policy at once, so that conditions follow them
// rather than the periodic refresh, and so does becoming the leader, so that
// the leader creates the policy if none exists (no informer event would tell
// it).
//
// The controller watches GCPolicies through the shared cache's informer
// directly rather than with For: a source.Kind waits for the whole cache to
// sync, and the cache also holds the monitors' informers, one of which may
// never sync (a kind that cannot be listed): the controller would never
// start, and the manager would stop when its cache sync timeout passed.
func (r *GCPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &ownergcv1alpha1.GCPolicy{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("getting the GCPolicy informer: %w", asNoKindMatch(err))
	}
	changes := make(chan event.TypedGenericEvent[*ownergcv1alpha1.GCPolicy], 1)
	enqueue := func() {
		obj := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
		select {
		case changes <- event.TypedGenericEvent[*ownergcv1alpha1.GCPolicy]{Object: obj}:
		default: // a reconcile of the policy is pending already
		}
	}
	r.Engine.OnStatusChange(enqueue)
	// A runnable without NeedLeaderElection starts once this replica leads,
	// a moment before the manager closes Elected, which leading() reads.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if r.Elected != nil {
			select {
			case <-r.Elected:
			case <-ctx.Done():
				return nil
			}
		}
		enqueue()
		return nil
	})); err != nil {
		return fmt.Errorf("adding the GCPolicy leader trigger: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("gcpolicy").
		WatchesRawSource(&informerSource{Informer: source.Informer{Informer: inf, Handler: &handler.EnqueueRequestForObject{},
			Predicates: []predicate.Predicate{policyChanged()}}}).
		WatchesRawSource(source.Channel(changes, &handler.TypedEnqueueRequestForObject[*ownergcv1alpha1.GCPolicy]{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), NewQueue: r.NewQueue}).
		Complete(r)
}

// policyChanged passes the GCPolicy's creation, deletion and the updates of
// anything but its status. Its own status writes come back as updates: they
// need no reconcile (the status is refreshed on the engine's changes and
// every RefreshInterval), and reconciling them wrote the status again
// whenever the graph's node counts had moved: twice a second during a
// cascade, out of the collector's request budget.
func policyChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, _ := e.ObjectOld.(*ownergcv1alpha1.GCPolicy)
		next, ok := e.ObjectNew.(*ownergcv1alpha1.GCPolicy)
		return ok && old != nil && policyDiffers(old, next)
	}}
}

// informerSource is the events of one informer of the shared cache, synced
// once that informer has synced.
type informerSource struct {
	source.Informer
}

// WaitForSync implements source.SyncingSource.
func (s *informerSource) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.Informer.Informer.HasSynced) {
		return fmt.Errorf("the GCPolicy informer did not sync: %w", ctx.Err())
	}
	return nil
}

var _ reconcile.Reconciler = (*GCPolicyReconciler)(nil)

// asNoKindMatch returns a NoKindMatchError for GCPolicies when err says the
// API server does not serve them (gcPolicyNotServed), whichever way the REST
// mapper found out: one error for "the cluster does not serve GCPolicies".
// Any other error is returned as it is.
func asNoKindMatch(err error) error {
	if !gcPolicyNotServed(err) {
		return err
	}
	return &apimeta.NoKindMatchError{GroupKind: gcPolicyKind.GroupKind(), SearchedVersions: []string{gcPolicyKind.Version}}
}

// gcPolicyNotServed reports whether err says the API server does not serve
// GCPolicies: no match for the kind, or the discovery of ownergc.io's
// version failing with no match or not found (the REST mapper's answer when
// the CRD is not installed).
func gcPolicyNotServed(err error) bool {
	if apimeta.IsNoMatchError(err) {
		return true
	}
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		return false
	}
	for gv, e := range failed.Groups {
		if gv == ownergcv1alpha1.GroupVersion && (apimeta.IsNoMatchError(e) || apierrors.IsNotFound(e)) {
			return true
		}
	}
	return false
}
