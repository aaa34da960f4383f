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

package apigc

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/policy"
)

// The terminated-Pod collector, with the semantics of kube-controller-
// manager's pod-garbage-collector-controller (pkg/controller/podgc):
//
//   - terminated: when more Pods are terminated (phase Succeeded or Failed)
//     than the threshold, the excess is deleted, evicted Pods first, then the
//     oldest by creation time (ties broken by name). Protected Pods count but
//     are never deleted: the next oldest go instead;
//   - orphaned: Pods bound to a Node that does not exist, once the Node has
//     been missing from the cache for the quarantine (40 s) and a live read
//     confirms it is gone, are marked Failed with the condition
//     DisruptionTarget (reason DeletionByPodGC) and deleted;
//   - terminating unscheduled: terminating Pods bound to no Node are marked
//     Failed and deleted;
//   - terminating out of service: terminating Pods on a Node that is not
//     Ready and carries the node.kubernetes.io/out-of-service taint are marked
//     Failed and deleted.
//
// Deletions are immediate (grace period 0), as podgc's. A pass over the
// cache (a sweep) decides; it runs when Pods or Nodes change in a way that
// matters, and every 20 seconds as podgc does. Each Pod it selects is then
// handled on its own: a Pod that is not terminated yet is read live, its
// decision checked again against the live object, marked Failed with a
// status patch conditional on its UID and resourceVersion, and deleted with
// preconditions on its UID and the resourceVersion the patch returned; a
// terminated Pod is deleted with preconditions on the UID and
// resourceVersion of the cached Pod.

// Rules of the terminated-Pod collector (label "reason" of its metrics).
const (
	ReasonTerminated              = "terminated"
	ReasonOrphaned                = "orphaned"
	ReasonTerminatingUnscheduled  = "terminating_unscheduled"
	ReasonTerminatingOutOfService = "terminating_out_of_service"
)

const (
	// defaultPodQuarantine is podgc's quarantineTime.
	defaultPodQuarantine = 40 * time.Second
	// podSweepPeriod is podgc's gcCheckPeriod.
	podSweepPeriod = 20 * time.Second
	// podSweepDelay gathers the changes that call for a sweep.
	podSweepDelay = 500 * time.Millisecond
	// podWorkers handle selected Pods concurrently (podgc starts a goroutine
	// per Pod).
	podWorkers = 8
	// disruptionTargetReason and disruptionTargetMessage are podgc's, on the
	// DisruptionTarget condition of an orphaned Pod.
	disruptionTargetReason  = "DeletionByPodGC"
	disruptionTargetMessage = "PodGC: node no longer exists"
	// evictedReason is the status reason of a Pod the kubelet evicted.
	evictedReason = "Evicted"
	// podNodeIndex indexes the cached Pods by the Node they are bound to.
	podNodeIndex = "node"
	// handledSize bounds the memory of terminating Pods already handled.
	handledSize = 8192
)

// NewTerminatedPods returns the terminated-Pod collector.
func NewTerminatedPods(opts Options) Collector {
	quarantine := opts.PodQuarantine
	if quarantine <= 0 {
		quarantine = defaultPodQuarantine
	}
	return newRunner(definition[podItem]{
		name: "terminatedPods", metric: "terminated_pods", watches: "Pods, Nodes",
		workers: podWorkers, resyncEvery: podSweepPeriod, metrics: opts.metricSet().TerminatedPods,
		enabled: func(p *policy.Policy) bool { return p.Collectors.TerminatedPods.Enabled },
		affects: func(old, cur *policy.Policy) bool {
			return old.Collectors.TerminatedPods.Threshold != cur.Collectors.TerminatedPods.Threshold
		},
		transform: trimPodsAndNodes,
		start: func(s *session[podItem]) work[podItem] {
			return startPods(s, quarantine)
		},
	}, opts)
}

// podInfo is what the collector's cache keeps of a Pod.
type podInfo struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	NodeName string
	Phase    corev1.PodPhase
	// Evicted: the kubelet evicted it (phase Failed, reason Evicted).
	Evicted bool
}

func (p *podInfo) DeepCopyObject() runtime.Object {
	c := *p
	p.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// terminated reports whether the Pod is terminated, as podgc has it: its
// phase is neither Pending, Running nor Unknown.
func (p *podInfo) terminated() bool { return podTerminated(p.Phase) }

func podTerminated(phase corev1.PodPhase) bool {
	return phase != corev1.PodPending && phase != corev1.PodRunning && phase != corev1.PodUnknown
}

// nodeInfo is what the collector's cache keeps of a Node.
type nodeInfo struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// Ready: its Ready condition is True.
	Ready bool
	// OutOfService: it carries the node.kubernetes.io/out-of-service taint.
	OutOfService bool
}

func (n *nodeInfo) DeepCopyObject() runtime.Object {
	c := *n
	n.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// trimPodsAndNodes keeps of Pods and Nodes what the collector reads.
func trimPodsAndNodes(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &podInfo{
			ObjectMeta: trimMeta(&o.ObjectMeta),
			NodeName:   o.Spec.NodeName,
			Phase:      o.Status.Phase,
			Evicted:    o.Status.Phase == corev1.PodFailed && o.Status.Reason == evictedReason,
		}, nil
	case *corev1.Node:
		n := &nodeInfo{ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion}}
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.NodeReady {
				n.Ready = c.Status == corev1.ConditionTrue
				break
			}
		}
		for _, t := range o.Spec.Taints {
			if t.Key == corev1.TaintNodeOutOfService {
				n.OutOfService = true
			}
		}
		return n, nil
	}
	return obj, nil
}

type podItemKind int

const (
	// sweepPods: a pass over the cache, which selects Pods to delete and
	// Nodes to quarantine.
	sweepPods podItemKind = iota
	// checkNode: a Node Pods are bound to has been missing for the
	// quarantine; name is the Node.
	checkNode
	// collectPod: a Pod the sweep selected, for reason.
	collectPod
)

// podItem is an item of the collector's queue.
type podItem struct {
	kind            podItemKind
	namespace, name string
	uid             types.UID
	reason          string
}

func (i podItem) String() string {
	switch i.kind {
	case sweepPods:
		return "sweep"
	case checkNode:
		return "Node " + i.name
	}
	return fmt.Sprintf("Pod %s/%s (%s)", i.namespace, i.name, i.reason)
}

// pods is the work of one session of the terminated-Pod collector.
type pods struct {
	*session[podItem]
	pods, nodes toolscache.SharedIndexInformer
	quarantine  time.Duration
	// handled remembers the Pods deleted already (by UID): one that a
	// finalizer keeps is not deleted again at every sweep.
	handled *lru.Cache
	// terminated counts the terminated Pods in the cache, kept by the
	// informer's handler: a Pod selected beyond the threshold is deleted
	// only while the count still exceeds the policy's threshold, which may
	// have been raised, or reached by other deletions, since the sweep.
	terminated atomic.Int64
}

func startPods(s *session[podItem], quarantine time.Duration) work[podItem] {
	w := &pods{
		session:    s,
		pods:       newInformer(s, s.r.opts.Client.CoreV1().Pods(metav1.NamespaceAll), &corev1.Pod{}),
		nodes:      newInformer(s, s.r.opts.Client.CoreV1().Nodes(), &corev1.Node{}),
		quarantine: quarantine,
		handled:    lru.New(handledSize),
	}
	_ = w.pods.AddIndexers(toolscache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*podInfo); ok && p.NodeName != "" {
			return []string{p.NodeName}, nil
		}
		return nil, nil
	}})
	podHandler, _ := w.pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p, ok := obj.(*podInfo)
			if !ok {
				return
			}
			w.count(nil, p)
			if w.needsSweep(nil, p) {
				w.sweepSoon()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, _ := oldObj.(*podInfo)
			p, ok := newObj.(*podInfo)
			if !ok {
				return
			}
			w.count(o, p)
			if w.needsSweep(o, p) {
				w.sweepSoon()
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*podInfo); ok {
				w.count(p, nil)
			}
		},
	})
	nodeHandler, _ := w.nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) {},
		UpdateFunc: func(any, any) { w.sweepSoon() },
		DeleteFunc: func(any) { w.sweepSoon() },
	})
	s.waitFor = append(s.waitFor, podHandler.HasSynced, nodeHandler.HasSynced)
	return w
}

// count keeps the number of terminated Pods as a Pod changes from old to
// p (nil: absent).
func (w *pods) count(old, p *podInfo) {
	was, is := old != nil && old.terminated(), p != nil && p.terminated()
	switch {
	case is && !was:
		w.terminated.Add(1)
	case was && !is:
		w.terminated.Add(-1)
	}
}

// needsSweep reports whether a Pod's change may call for a deletion: it
// became terminated, started terminating, or is bound to a Node the cache
// does not hold.
func (w *pods) needsSweep(old, p *podInfo) bool {
	switch {
	case p.terminated() && (old == nil || !old.terminated()):
		return true
	case p.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil):
		return true
	case p.NodeName != "":
		_, exists, _ := w.nodes.GetStore().GetByKey(p.NodeName)
		return !exists
	}
	return false
}

func (w *pods) sweepSoon() { w.queue.AddAfter(podItem{kind: sweepPods}, podSweepDelay) }

// resync implements work.
func (w *pods) resync() { w.queue.Add(podItem{kind: sweepPods}) }

// process implements work.
func (w *pods) process(ctx context.Context, item podItem) error {
	switch item.kind {
	case sweepPods:
		w.sweep()
		return nil
	case checkNode:
		return w.checkNode(ctx, item.name)
	default:
		return w.collect(ctx, item)
	}
}

// sweep is podgc's pass: it selects the terminated Pods beyond the
// threshold, the terminating Pods on out-of-service Nodes and those bound to
// no Node, and quarantines the Nodes that Pods are bound to and the cache
// does not hold.
func (w *pods) sweep() {
	p := w.r.opts.Policy.Get()
	var all []*podInfo
	for _, obj := range w.pods.GetStore().List() {
		if pod, ok := obj.(*podInfo); ok {
			all = append(all, pod)
		}
	}
	if threshold := p.Collectors.TerminatedPods.Threshold; threshold > 0 {
		selected, protected := selectTerminated(all, threshold, p)
		for _, pod := range selected {
			w.queueCollect(pod, ReasonTerminated)
		}
		// Protected Pods the threshold reached are reported (once) by
		// the same path, which deletes nothing for them.
		for _, pod := range protected {
			w.queueCollect(pod, ReasonTerminated)
		}
	}
	quarantined := map[string]bool{}
	for _, pod := range all {
		switch {
		case pod.DeletionTimestamp != nil && pod.NodeName == "":
			w.queueCollect(pod, ReasonTerminatingUnscheduled)
		case pod.NodeName == "":
		case !w.nodeCached(pod.NodeName):
			if !quarantined[pod.NodeName] {
				quarantined[pod.NodeName] = true
				// A Node already waiting keeps its earlier time.
				w.queue.AddAfter(podItem{kind: checkNode, name: pod.NodeName}, w.quarantine)
			}
		case pod.DeletionTimestamp != nil && w.outOfService(pod.NodeName):
			w.queueCollect(pod, ReasonTerminatingOutOfService)
		}
	}
}

// selectTerminated returns the terminated Pods to delete: as many as there
// are beyond threshold, evicted first, then oldest first, then by name;
// protected Pods count but are passed over, and are returned apart (those
// passed over before the selection was complete).
func selectTerminated(all []*podInfo, threshold int, p *policy.Policy) (selected, protected []*podInfo) {
	var terminated []*podInfo
	for _, pod := range all {
		if pod.terminated() {
			terminated = append(terminated, pod)
		}
	}
	excess := len(terminated) - threshold
	if excess <= 0 {
		return nil, nil
	}
	sort.Slice(terminated, func(i, j int) bool { return podBefore(terminated[i], terminated[j]) })
	selected = make([]*podInfo, 0, excess)
	for _, pod := range terminated {
		if len(selected) == excess {
			break
		}
		if decision.Permit(p, pod.Namespace, pod.Annotations).Protected() {
			protected = append(protected, pod)
			continue
		}
		selected = append(selected, pod)
	}
	return selected, protected
}

// podBefore is podgc's order: evicted Pods first, then by creation time,
// then by name.
func podBefore(a, b *podInfo) bool {
	if a.Evicted != b.Evicted {
		return a.Evicted
	}
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// queueCollect queues a Pod selected for reason, unless the collector
// deleted it already (a finalizer keeps it): podgc would delete it again at
// every pass, to no effect.
func (w *pods) queueCollect(pod *podInfo, reason string) {
	if _, done := w.handled.Get(pod.UID); done {
		return
	}
	w.queue.Add(podItem{kind: collectPod, namespace: pod.Namespace, name: pod.Name, uid: pod.UID, reason: reason})
}

func (w *pods) nodeCached(name string) bool {
	_, exists, _ := w.nodes.GetStore().GetByKey(name)
	return exists
}

// outOfService reports whether the cached Node is not Ready and tainted out
// of service.
func (w *pods) outOfService(name string) bool {
	obj, exists, _ := w.nodes.GetStore().GetByKey(name)
	n, ok := obj.(*nodeInfo)
	return exists && ok && !n.Ready && n.OutOfService
}

// checkNode confirms, with a live read, that a Node missing from the cache
// for the quarantine is gone, and selects the Pods bound to it.
func (w *pods) checkNode(ctx context.Context, name string) error {
	if w.nodeCached(name) {
		return nil
	}
	_, err := w.r.opts.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil // the cache is behind; the Node exists
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Node %s: %w", name, err)
	}
	bound, _ := w.pods.GetIndexer().ByIndex(podNodeIndex, name)
	for _, obj := range bound {
		if pod, ok := obj.(*podInfo); ok {
			w.queueCollect(pod, ReasonOrphaned)
		}
	}
	return nil
}

// collect handles one selected Pod: the decision is checked again against
// the cache, then, for a Pod not terminated yet, against the live Pod.
func (w *pods) collect(ctx context.Context, item podItem) error {
	obj, exists, _ := w.pods.GetStore().GetByKey(item.namespace + "/" + item.name)
	pod, ok := obj.(*podInfo)
	if !exists || !ok || pod.UID != item.uid || !w.stillApplies(pod, item.reason) {
		return nil
	}
	d := deletion{object: &pod.ObjectMeta, kind: "Pod", reason: item.reason, detail: podDetail(pod, item.reason)}
	if !w.r.permitted(ctx, d) {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	pods := w.r.opts.Client.CoreV1().Pods(pod.Namespace)
	if item.reason == ReasonTerminated {
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
			Preconditions: preconditions(pod.UID, pod.ResourceVersion)})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("deleting terminated Pod: %w", err)
		}
		w.handled.Add(pod.UID, struct{}{})
		w.r.recordDeleted(log, d)
		return nil
	}
	return w.markFailedAndDelete(ctx, pod, d)
}

// stillApplies checks a Pod's selection for reason against its cached
// state; for the threshold, that there are still more terminated Pods than
// the policy's threshold.
func (w *pods) stillApplies(pod *podInfo, reason string) bool {
	switch reason {
	case ReasonTerminated:
		threshold := w.r.opts.Policy.Get().Collectors.TerminatedPods.Threshold
		return pod.terminated() && threshold > 0 && w.terminated.Load() > int64(threshold)
	case ReasonOrphaned:
		return pod.NodeName != "" && !w.nodeCached(pod.NodeName)
	case ReasonTerminatingUnscheduled:
		return pod.DeletionTimestamp != nil && pod.NodeName == ""
	case ReasonTerminatingOutOfService:
		return pod.DeletionTimestamp != nil && pod.NodeName != "" && w.outOfService(pod.NodeName)
	}
	return false
}

func podDetail(pod *podInfo, reason string) string {
	switch reason {
	case ReasonTerminated:
		which := "among the oldest"
		if pod.Evicted {
			which = "evicted"
		}
		return fmt.Sprintf("more terminated Pods than the threshold; this one is %s (phase %s, created %s)",
			which, pod.Phase, pod.CreationTimestamp.UTC().Format(time.RFC3339))
	case ReasonOrphaned:
		return fmt.Sprintf("bound to Node %s, which no longer exists", pod.NodeName)
	case ReasonTerminatingUnscheduled:
		return "terminating and bound to no Node"
	default:
		return fmt.Sprintf("terminating on Node %s, which is not Ready and tainted out of service", pod.NodeName)
	}
}

// markFailedAndDelete reads the Pod live, checks the decision against it,
// marks it Failed (with DisruptionTarget when orphaned) unless it is
// terminated, and deletes it, as podgc's markFailedAndDeletePodWithCondition
// does, with preconditions.
func (w *pods) markFailedAndDelete(ctx context.Context, cached *podInfo, d deletion) error {
	pods := w.r.opts.Client.CoreV1().Pods(cached.Namespace)
	live, err := pods.Get(ctx, cached.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Pod: %w", err)
	case live.UID != cached.UID:
		return nil
	case decision.Permit(w.r.opts.Policy.Get(), live.Namespace, live.Annotations).Protected():
		// Protected since the cache's copy was decided on.
		live.Annotations = map[string]string{ownergcv1alpha1.ProtectedAnnotation: live.Annotations[ownergcv1alpha1.ProtectedAnnotation]}
		d.object = &live.ObjectMeta
		w.r.permitted(ctx, d) // reports it
		return nil
	}
	switch d.reason {
	case ReasonOrphaned:
		if live.Spec.NodeName != cached.NodeName {
			return nil
		}
	case ReasonTerminatingUnscheduled:
		if live.DeletionTimestamp == nil || live.Spec.NodeName != "" {
			return nil
		}
	case ReasonTerminatingOutOfService:
		if live.DeletionTimestamp == nil {
			return nil
		}
	}
	log := ctrl.LoggerFrom(ctx)
	resourceVersion := live.ResourceVersion
	if !podTerminated(live.Status.Phase) {
		patch, err := failedStatusPatch(live, d.reason == ReasonOrphaned)
		if err != nil {
			return err
		}
		patched, err := pods.Patch(ctx, live.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("marking Pod Failed: %w", err)
		}
		w.r.opts.metricSet().PodsMarkedFailed.WithLabelValues(d.reason).Inc()
		log.V(1).Info("Marked Pod Failed before deleting it", d.keyvals()...)
		resourceVersion = patched.ResourceVersion
	}
	err = pods.Delete(ctx, live.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: preconditions(live.UID, resourceVersion)})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting Pod: %w", err)
	}
	w.handled.Add(live.UID, struct{}{})
	w.r.recordDeleted(log, d)
	return nil
}

// failedStatusPatch returns the strategic merge patch of the status
// subresource that marks pod Failed — with the condition DisruptionTarget
// when disruption is set — conditional on its UID and resourceVersion.
func failedStatusPatch(pod *corev1.Pod, disruption bool) ([]byte, error) {
	status := pod.Status.DeepCopy()
	status.Phase = corev1.PodFailed
	status.ObservedGeneration = pod.Generation
	if disruption {
		setPodCondition(status, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation,
			Reason: disruptionTargetReason, Message: disruptionTargetMessage,
		})
	}
	oldData, err := json.Marshal(corev1.Pod{Status: pod.Status})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Status:     *status,
	})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
}

// setPodCondition sets a condition of status, keeping its
// lastTransitionTime when its status does not change.
func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	c.LastTransitionTime = metav1.Now()
	for i := range status.Conditions {
		if status.Conditions[i].Type != c.Type {
			continue
		}
		if status.Conditions[i].Status == c.Status {
			c.LastTransitionTime = status.Conditions[i].LastTransitionTime
		}
		status.Conditions[i] = c
		return
	}
	status.Conditions = append(status.Conditions, c)
}
