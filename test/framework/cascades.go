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

package framework

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cascades are one owner-reference cascade of each kind, for the tests
// that check that a manager collects at all (an installed one, one of a
// fleet's members): a dependent of an owner deleted in the background, a
// dependent of an owner deleted with the orphan policy, the blocking
// dependent, held by HoldFinalizer, of an owner deleted in the foreground,
// and a dependent whose only owner never existed.
type Cascades struct {
	cp                                                   *ControlPlane
	child, orphanOwner, orphan, fgOwner, held, ownerless Object
}

// StartCascades creates the cascades in ns (the owner deleted in the
// foreground of kind foregroundOwner, the other objects ConfigMaps) and
// deletes their owners.
func (cp *ControlPlane) StartCascades(t testing.TB, ns string, foregroundOwner Kind) *Cascades {
	t.Helper()
	c := &Cascades{cp: cp}
	owner := cp.Create(t, ConfigMaps, ns, "owner")
	c.child = cp.Create(t, ConfigMaps, ns, "child", OwnedBy(owner.Ref(false)))
	cp.Delete(t, owner)
	c.orphanOwner = cp.Create(t, ConfigMaps, ns, "orphan-owner")
	c.orphan = cp.Create(t, ConfigMaps, ns, "orphan", OwnedBy(c.orphanOwner.Ref(true)))
	cp.DeleteWith(t, c.orphanOwner, metav1.DeletePropagationOrphan)
	c.fgOwner = cp.Create(t, foregroundOwner, ns, "fg-owner")
	c.held = cp.Create(t, ConfigMaps, ns, "held", OwnedBy(c.fgOwner.Ref(true)), WithFinalizers(HoldFinalizer))
	cp.DeleteWith(t, c.fgOwner, metav1.DeletePropagationForeground)
	never := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: types.UID("00000000-0000-0000-0000-00000000dead")}
	c.ownerless = cp.Create(t, ConfigMaps, ns, "owned-by-nothing", OwnedBy(never))
	return c
}

// WaitCollected waits until each cascade is done: the background
// dependent gone, the orphan owner gone and its dependent without owner
// references, the held dependent being deleted, then (once released) the
// foreground owner gone, and the dependent of no owner gone.
func (c *Cascades) WaitCollected(t testing.TB) {
	t.Helper()
	c.cp.WaitGone(t, "its owner was deleted", c.child)
	c.cp.WaitGone(t, "ownergc removes the orphan finalizer once the dependent is orphaned", c.orphanOwner)
	c.cp.WaitOwners(t, c.orphan, "the orphaned dependent keeps existing without owner references")
	c.cp.WaitDeleting(t, c.held, HoldFinalizer, "ownergc deletes the blocking dependent of a foreground deletion")
	c.cp.RemoveFinalizer(t, c.held, HoldFinalizer)
	c.cp.WaitGone(t, "its blocking dependent is gone", c.fgOwner)
	c.cp.WaitGone(t, "its only owner never existed", c.ownerless)
}
