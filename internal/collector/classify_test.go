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
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/internal/graph"
)

// What an explanation says of an owner is what the collector concludes of
// it, by every rule of the one classification (findOwner); the explanation
// reads through its own client only, and records nothing: no event, no
// entry in the absent-owner cache.
func TestExplanationClassifiesEachOwnerAsTheCollectorDoes(t *testing.T) {
	ref := func(o *metav1.PartialObjectMetadata) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID}
	}
	clusterRole := func(name string) *metav1.PartialObjectMetadata {
		return object("rbac.authorization.k8s.io/v1", "ClusterRole", "", name)
	}
	for _, c := range []struct {
		name string
		// setUp builds the state and returns the dependent and the
		// reference classified.
		setUp func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference)
		want  decision.OwnerState
		basis ownerBasis
	}{
		{"an invalid apiVersion", func(*harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			return configMap("subject"), metav1.OwnerReference{APIVersion: "a/b/c", Kind: "ConfigMap", Name: "owner", UID: "u"}
		}, decision.OwnerUnverifiable, basisInvalidAPIVersion},
		{"an observed owner", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := configMap("owner")
			h.observe(owner)
			return configMap("subject"), ref(owner)
		}, decision.OwnerSolid, basisObserved},
		{"an observed owner deleting in the foreground", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
			h.observe(owner)
			return configMap("subject"), ref(owner)
		}, decision.OwnerWaiting, basisObserved},
		{"an owner observed deleted", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := configMap("owner")
			subject := configMap("subject", ownedBy(owner, false))
			h.observe(owner, subject)
			h.gone(owner)
			return subject, ref(owner)
		}, decision.OwnerDangling, basisAbsentAtVersion},
		{"a namespaced owner recorded absent, of a cluster-scoped object", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := configMap("owner")
			h.graph.AbsentOwners().Add(graph.Identity{Version: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID})
			return clusterRole("subject"), ref(owner)
		}, decision.OwnerDangling, basisAbsentAtVersion},
		{"an owner of a kind not served", func(*harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			return configMap("subject"), ref(object("nope.example.com/v1", "Ghost", "ns", "ghost"))
		}, decision.OwnerUnverifiable, basisNotServed},
		{"a namespaced owner of a cluster-scoped object", func(*harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			return clusterRole("subject"), ref(configMap("owner"))
		}, decision.OwnerUnverifiable, basisNamespacedOwnerOfClusterScoped},
		{"an owner recorded absent at another version", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := object("example.com/v1", "Widget", "ns", "owner")
			h.graph.AbsentOwners().Add(graph.Identity{Group: "example.com", Version: "v2", Kind: "Widget", Namespace: "ns", Name: owner.Name, UID: owner.UID})
			return configMap("subject"), ref(owner)
		}, decision.OwnerDangling, basisAbsent},
		{"a name that is not one path segment", func(*harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			return configMap("subject"), ref(configMap("../other"))
		}, decision.OwnerDangling, basisInvalidName},
		{"an owner a read does not find", func(*harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			return configMap("subject"), ref(configMap("owner"))
		}, decision.OwnerDangling, basisRead},
		{"an owner whose name another object took", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			h.api.put("configmaps", configMap("owner"))
			owner := configMap("owner")
			owner.UID = "the-former-owner"
			return configMap("subject"), ref(owner)
		}, decision.OwnerDangling, basisRead},
		{"an owner a read finds", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := configMap("owner")
			h.api.put("configmaps", owner)
			return configMap("subject"), ref(owner)
		}, decision.OwnerSolid, basisRead},
		{"an owner a read finds deleting in the foreground", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			owner := configMap("owner", beingDeleted(), withFinalizers(metav1.FinalizerDeleteDependents))
			h.api.put("configmaps", owner)
			return configMap("subject"), ref(owner)
		}, decision.OwnerWaiting, basisRead},
		{"an owner that cannot be read", func(h *harness) (*metav1.PartialObjectMetadata, metav1.OwnerReference) {
			fail := func(call) error { return apierrors.NewInternalError(errors.New("etcd is away")) }
			h.api.fail, h.explainAPI.fail = fail, fail
			return configMap("subject"), ref(configMap("owner"))
		}, decision.OwnerUnverifiable, basisReadFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			subject, r := c.setUp(h)
			gv, _ := schema.ParseGroupVersion(subject.APIVersion)
			dependent := graph.Identity{Group: gv.Group, Version: gv.Version, Kind: subject.Kind, Namespace: subject.Namespace, Name: subject.Name, UID: subject.UID}
			ctx := context.Background()
			absent, calls := h.graph.AbsentOwners().Len(), len(h.api.calls)

			reads := &explainReads{client: h.explainAPI, left: 2}
			o := h.c.explainOwner(ctx, reads.read, dependent, r)
			if o.Status != string(c.want) || o.Reason == "" {
				t.Fatalf("the explanation says %s (%q), want %s", o.Status, o.Reason, c.want)
			}
			if f := h.c.findOwner(ctx, reads.read, dependent, r); f.basis != c.basis {
				t.Fatalf("classified by rule %d, want %d", f.basis, c.basis)
			}
			if n := h.graph.AbsentOwners().Len(); n != absent {
				t.Fatalf("the explanation recorded %d owners absent", n-absent)
			}
			if len(h.api.calls) != calls || len(h.recorder.Events) != 0 {
				t.Fatalf("the explanation read through the collector's client (%v) or recorded an event (%d)", h.api.calls[calls:], len(h.recorder.Events))
			}

			state, _, err := h.c.ownerStatus(ctx, dependent, r)
			if err != nil {
				state = decision.OwnerUnverifiable // as classify takes it
			}
			if state != c.want {
				t.Fatalf("the collector concludes %s (%v), the explanation says %s", state, err, o.Status)
			}
		})
	}
}

// An explanation that has spent its reads says the owners it would have
// read are not checked, and the decision model takes them as not known;
// what the graph and the absent-owner cache answer costs no read.
func TestExplanationOfAnOwnerLeftUnreadIsNotChecked(t *testing.T) {
	h := newHarness(t)
	observed, unread := configMap("observed"), configMap("unread")
	h.observe(observed)
	dependent := graph.Identity{Kind: "ConfigMap", Version: "v1", Namespace: "ns", Name: "subject", UID: "configmap-subject"}
	reads := &explainReads{client: h.explainAPI}
	for _, c := range []struct {
		owner *metav1.PartialObjectMetadata
		want  string
	}{{observed, explain.OwnerSolid}, {unread, explain.OwnerNotChecked}} {
		r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: c.owner.Name, UID: c.owner.UID}
		o := h.c.explainOwner(context.Background(), reads.read, dependent, r)
		if o.Status != c.want || ownerState(o.Status) == "" {
			t.Fatalf("owner %s: %s (%q), want %s", c.owner.Name, o.Status, o.Reason, c.want)
		}
		if c.want == explain.OwnerNotChecked && (ownerState(o.Status) != decision.OwnerUnknown || !strings.Contains(o.Reason, "not checked")) {
			t.Fatalf("owner %s left unread: %s (%q)", c.owner.Name, ownerState(o.Status), o.Reason)
		}
	}
	if reads.refused != 1 || len(h.explainAPI.calls) != 0 {
		t.Fatalf("reads refused %d, sent %v: want one refused and none sent", reads.refused, h.explainAPI.calls)
	}
}
