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

package collector_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/test/framework"
)

var clusterRoles = framework.Kind{
	GVR:  schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	Kind: "ClusterRole",
}

// clusterRole creates a cluster-scoped ClusterRole with a fresh name,
// deleted when the test ends.
func clusterRole(t *testing.T, opts ...framework.Option) framework.Object {
	t.Helper()
	cr := cp.Create(t, clusterRoles, "", "ownergc-test-"+utilrand.String(5), opts...)
	cp.DeleteOnCleanup(t, cr)
	return cr
}

func TestDependentReferencingAnOwnerInAnotherNamespaceIsCollectedWithAWarning(t *testing.T) {
	t.Parallel()
	nsA := framework.CreateNamespace(t, cp.Client)
	nsB := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, nsA, "owner")
	manager.WaitObserved(t, owner)

	dep := cp.Create(t, framework.ConfigMaps, nsB, "dep", framework.OwnedBy(owner.Ref(false)))
	cp.WaitGone(t, "a namespaced owner must be in its dependent's namespace; no such owner exists in that namespace", dep)
	cp.WaitEvent(t, nsB, dep.UID, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", framework.CascadeTimeout)
	cp.Survive(t, "the owner in the other namespace is not the dependent's owner and has no owners itself", owner)
}

func TestClusterScopedDependentOfANamespacedKindIsNeverCollected(t *testing.T) {
	t.Parallel()
	owner := metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: "no-such-config-map-" + string(uuid.NewUUID())[:8], UID: uuid.NewUUID(),
	}
	dep := clusterRole(t, framework.OwnedBy(owner))
	cp.WaitEvent(t, metav1.NamespaceDefault, dep.UID, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", framework.CascadeTimeout)
	cp.Survive(t, "a cluster-scoped object naming a namespaced owner has an unresolvable reference and cannot be collected", dep)
}

func TestNamespacedDependentOfAClusterScopedOwnerIsCollected(t *testing.T) {
	ns := parallelNamespace(t)
	owner := clusterRole(t)
	dep := cp.Create(t, framework.ConfigMaps, ns, "dep", framework.OwnedBy(owner.Ref(false)))
	kept := cp.Create(t, framework.ConfigMaps, ns, "kept")
	manager.WaitLinked(t, owner, dep, false)

	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its cluster-scoped owner was deleted", dep)
	cp.MustExist(t, "an unrelated object without owners was deleted", kept)
}
