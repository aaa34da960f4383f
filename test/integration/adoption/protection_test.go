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

package adoption_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// Protected objects — by the annotation or by their namespace — are never
// deleted: in a background or foreground cascade they lose their references
// to the owners that go, with a Protected event; orphaning is unchanged.
func TestProtectedObjectsSurviveEveryCascade(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	protectedNS := framework.CreateNamespace(t, cp.Client)
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Protection.Namespaces = []ownergcv1alpha1.NamespaceName{ownergcv1alpha1.NamespaceName(protectedNS)}
	})
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) { s.Protection = ownergcv1alpha1.Protection{} })
	})
	ns := framework.CreateNamespace(t, cp.Client)

	t.Run("background", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "bg-owner")
		annotated := cp.Create(t, framework.ConfigMaps, ns, "bg-annotated", framework.OwnedBy(owner.Ref(false)), framework.Protected)
		plain := cp.Create(t, framework.ConfigMaps, ns, "bg-plain", framework.OwnedBy(owner.Ref(false)))
		nsOwner := cp.Create(t, framework.ConfigMaps, protectedNS, "ns-owner")
		inNS := cp.Create(t, framework.ConfigMaps, protectedNS, "in-protected-ns", framework.OwnedBy(nsOwner.Ref(false)))
		cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
		cp.DeleteWith(t, nsOwner, metav1.DeletePropagationBackground)
		cp.WaitGone(t, "its owner was deleted and it is not protected", plain)
		cp.WaitOwners(t, annotated, "protected by its annotation: it loses its reference to the owner that went")
		cp.WaitOwners(t, inNS, "protected by its namespace: it loses its reference to the owner that went")
		cp.Survive(t, "they are protected", annotated, inNS)
		cp.WaitEvent(t, ns, annotated.UID, "", "Protected", framework.CascadeTimeout)
	})

	t.Run("foreground", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "fg-owner")
		protected := cp.Create(t, framework.ConfigMaps, ns, "fg-protected", framework.OwnedBy(owner.Ref(true)), framework.Protected)
		plain := cp.Create(t, framework.ConfigMaps, ns, "fg-plain", framework.OwnedBy(owner.Ref(true)))
		cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
		cp.WaitGone(t, "the owner's deletion finishes: its protected dependent no longer blocks it", plain, owner)
		cp.WaitOwners(t, protected, "the protected dependent loses its reference to the owner deleted in the foreground")
		cp.Survive(t, "it is protected", protected)
	})

	t.Run("orphan", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "or-owner")
		protected := cp.Create(t, framework.ConfigMaps, ns, "or-protected", framework.OwnedBy(owner.Ref(false)), framework.Protected)
		plain := cp.Create(t, framework.ConfigMaps, ns, "or-plain", framework.OwnedBy(owner.Ref(false)))
		cp.DeleteWith(t, owner, metav1.DeletePropagationOrphan)
		cp.WaitGone(t, "orphaning finishes", owner)
		cp.WaitOwners(t, protected, "orphaned as usual")
		cp.WaitOwners(t, plain, "orphaned as usual")
		cp.Survive(t, "orphaned objects stay", protected, plain)
	})
}

// A propagation override decides how the collector deletes objects of that
// resource: Foreground for ConfigMaps, so a collected ConfigMap waits for
// its own blocking dependents.
func TestPropagationOverrideIsHowTheCollectorDeletes(t *testing.T) {
	cp.StartManager(t, framework.ManagerOptions{})
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.PropagationOverrides = []ownergcv1alpha1.PropagationOverride{{
			GroupResource: ownergcv1alpha1.GroupResource{Resource: "configmaps"}, Propagation: ownergcv1alpha1.PropagationForeground}}
	})
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) { s.PropagationOverrides = nil })
	})
	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.Secrets, ns, "owner")
	middle := cp.Create(t, framework.ConfigMaps, ns, "middle", framework.OwnedBy(owner.Ref(false)))
	leaf := cp.Create(t, framework.ConfigMaps, ns, "leaf", framework.OwnedBy(middle.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitDeleting(t, middle, metav1.FinalizerDeleteDependents, "the collector deletes the ConfigMap in the foreground, as the override says")
	cp.WaitDeleting(t, leaf, framework.HoldFinalizer, "its blocking dependent is deleted first")
	cp.Survive(t, "the ConfigMap waits for its blocking dependent", middle)
	cp.RemoveFinalizer(t, leaf, framework.HoldFinalizer)
	cp.WaitGone(t, "its blocking dependent is gone", leaf, middle)
}
