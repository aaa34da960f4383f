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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ownergc/ownergc/internal/graph"
)

// Event reasons of events recorded about objects.
const (
	// ReasonOwnerRefInvalidNamespace: a dependent references an owner that
	// cannot be its owner because of its namespace. For a namespaced
	// dependent the reference is treated as absent; a cluster-scoped
	// dependent of a namespaced owner is left alone.
	ReasonOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"
	// ReasonCollectionFailing: the collector keeps failing to process an
	// object.
	ReasonCollectionFailing = "CollectionFailing"
	// ReasonProtected (Normal): a protected object whose owners are gone was
	// kept, without its references to them.
	ReasonProtected = "Protected"
	eventAction     = "GarbageCollection"
)

func regarding(id graph.Identity) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: id.APIVersion(), Kind: id.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID},
	}
}

// recordInvalidNamespace records that dependent references an owner observed
// in another namespace. owner is the reference as the dependent states it
// (graph.Sink.InvalidOwnerNamespace), so that the event, recorded in the
// dependent's namespace, names nothing of the owner's.
func (c *Collector) recordInvalidNamespace(dependent, owner graph.Identity) {
	if dependent.Namespace == "" {
		c.recordNamespacedOwnerOfClusterScoped(dependent, metav1.OwnerReference{APIVersion: owner.APIVersion(), Kind: owner.Kind, Name: owner.Name, UID: owner.UID})
		return
	}
	if c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Eventf(regarding(dependent), nil, corev1.EventTypeWarning, ReasonOwnerRefInvalidNamespace, eventAction,
		"ownerReference to %s %s %s (uid %s) does not resolve in namespace %q: a namespaced owner must be in its dependent's namespace, so the reference is treated as absent",
		owner.APIVersion(), owner.Kind, owner.Name, owner.UID, dependent.Namespace)
}

// recordNamespacedOwnerOfClusterScoped records that a cluster-scoped object
// names an owner of a namespaced kind, which it leaves alone.
func (c *Collector) recordNamespacedOwnerOfClusterScoped(dependent graph.Identity, ref metav1.OwnerReference) {
	if c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Eventf(regarding(dependent), nil, corev1.EventTypeWarning, ReasonOwnerRefInvalidNamespace, eventAction,
		"cluster-scoped %s %s names owner %s %s %s (uid %s) of a namespaced kind, which cannot own it; the object is left alone and will not be garbage collected",
		dependent.Kind, dependent.Name, ref.APIVersion, ref.Kind, ref.Name, ref.UID)
}

// recordEvent records an event about an object.
func (c *Collector) recordEvent(id graph.Identity, eventType, reason, format string, args ...any) {
	if c.opts.Recorder == nil || id.Name == "" {
		return
	}
	c.opts.Recorder.Eventf(regarding(id), nil, eventType, reason, eventAction, format, args...)
}

// recordCollectionFailing records that processing an object keeps failing,
// with the error as far as the event may name what it names (an error of
// a cluster-scoped owner orphaning its dependents names them, in any
// namespace).
func (c *Collector) recordCollectionFailing(id graph.Identity, failures int, err error) {
	c.recordEvent(id, corev1.EventTypeWarning, ReasonCollectionFailing,
		"garbage collection of this object failed %d times in a row, retrying with backoff: %s", failures, redact(err, eventMayName(id.Namespace)))
}

func (c *Collector) danglingRemoved(n int) { c.opts.Metrics.DanglingReferencesRemoved.Add(float64(n)) }
