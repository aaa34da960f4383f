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

package explain_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/test/framework"
)

// The caller's own RBAC decides: a caller who may get the object gets the
// explanation, with only the owners and dependents it may also get named;
// one who may not gets 403 whether or not the object exists, by name or by
// UID.
func TestExplainAnswersOnlyWhoMayGetTheObject(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	cmOwner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	secretOwner := cp.Create(t, framework.Secrets, ns, "secret-owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(cmOwner.Ref(false), secretOwner.Ref(false)))
	child := cp.Create(t, framework.ConfigMaps, ns, "child", framework.OwnedBy(dep.Ref(false)))
	secretChild := cp.Create(t, framework.Secrets, ns, "secret-child", framework.OwnedBy(dep.Ref(false)))
	manager.WaitObserved(t, dep)

	all := reader(t, ns)
	ex := mustExplain(t, all, dep)
	if ex.Graph != explain.StateObserved || len(ex.Owners) != 2 || ex.HiddenOwners != 0 || len(ex.Dependents) != 2 || ex.HiddenDependents != 0 {
		t.Fatalf("a caller who may read everything sees: %+v", ex)
	}

	configMapsOnly := configMapReader(t, ns, "configmaps-only")
	ex = mustExplain(t, configMapsOnly, dep)
	if len(ex.Owners) != 1 || ex.Owners[0].Name != cmOwner.Name || ex.HiddenOwners != 1 {
		t.Errorf("owners seen by a caller who may not read Secrets: %+v (hidden %d), want only %s", ex.Owners, ex.HiddenOwners, cmOwner.Name)
	}
	if len(ex.Dependents) != 1 || ex.Dependents[0].Name != child.Name || ex.HiddenDependents != 1 {
		t.Errorf("dependents seen by a caller who may not read Secrets: %+v (hidden %d), want only %s", ex.Dependents, ex.HiddenDependents, child.Name)
	}
	if strings.Contains(ex.Decision, secretOwner.Name) || strings.Contains(ex.Decision, secretChild.Name) {
		t.Errorf("the decision names an object the caller may not read: %q", ex.Decision)
	}

	outsider := cp.NewIdentity(t, ns, "outsider", false)
	missing := framework.Object{Kind: framework.ConfigMaps, Namespace: ns, Name: "no-such-configmap"}
	for _, q := range []string{queryFor(dep), queryFor(missing), "uid=" + string(dep.UID), "uid=" + string(uuid.NewUUID())} {
		if code, _ := manager.Explain(t, outsider, q); code != http.StatusForbidden {
			t.Errorf("explaining %s for a caller who may not get it: %d, want 403", q, code)
		}
	}
	if code, ex := manager.Explain(t, all, "uid="+string(dep.UID)); code != http.StatusOK || ex.Object.Name != dep.Name {
		t.Errorf("explaining by UID: %d %+v", code, ex.Object)
	}
	if code, _, err := manager.Get(explain.Path+"?"+queryFor(dep), ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("an anonymous request answered %d (%v), want 401", code, err)
	}
}

// The explanation says what the collector does with the object, and why,
// in the states users ask about.
func TestExplainSaysWhatTheCollectorDoes(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	who := reader(t, ns)

	t.Run("kept by an owner that exists", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "live-owner")
		dep := cp.Create(t, framework.ConfigMaps, ns, "kept", framework.OwnedBy(owner.Ref(false)))
		manager.WaitObserved(t, owner, dep)
		ex := mustExplain(t, who, dep)
		if len(ex.Owners) != 1 || ex.Owners[0].Status != explain.OwnerSolid || !strings.HasPrefix(ex.Decision, "kept: owner ConfigMap live-owner exists") {
			t.Fatalf("explanation: %+v", ex)
		}
	})
	t.Run("owner that cannot be verified", func(t *testing.T) {
		ghost := metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Ghost", Name: "ghost", UID: uuid.NewUUID()}
		dep := cp.Create(t, framework.ConfigMaps, ns, "unverifiable", framework.OwnedBy(ghost))
		manager.WaitObserved(t, dep)
		ex := mustExplain(t, who, dep)
		if ex.HiddenOwners != 1 || !strings.Contains(ex.Decision, "cannot be verified") {
			// The ghost's kind is not served: its resource is unknown, so the
			// caller's access to it cannot be checked, and it is counted.
			t.Fatalf("explanation: %+v", ex)
		}
	})
	t.Run("foreground deletion waiting for a finalizer", func(t *testing.T) {
		owner := cp.Create(t, framework.ConfigMaps, ns, "fg-owner")
		held := cp.Create(t, framework.ConfigMaps, ns, "held", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer))
		t.Cleanup(func() { cp.RemoveFinalizer(t, held, framework.HoldFinalizer) })
		manager.WaitObserved(t, owner, held)
		cp.DeleteWith(t, owner, metav1.DeletePropagationForeground)
		cp.WaitDeleting(t, held, framework.HoldFinalizer, "ownergc deletes the blocking dependent")
		ex := mustExplain(t, who, owner)
		if ex.Deletion == nil || !ex.Deletion.Foreground || !strings.HasPrefix(ex.Decision, "being deleted in the foreground") {
			t.Fatalf("explanation of the owner: %+v", ex)
		}
		if len(ex.Dependents) != 1 || !ex.Dependents[0].Blocking || !strings.Contains(ex.Dependents[0].Remains, "finalizers "+framework.HoldFinalizer) {
			t.Fatalf("the blocking dependent should say it carries %s: %+v", framework.HoldFinalizer, ex.Dependents)
		}
	})
	t.Run("ignored resource", func(t *testing.T) {
		// Events are ignored by default.
		ev := cp.Create(t, framework.Kind{GVR: framework.Secrets.GVR.GroupVersion().WithResource("events"), Kind: "Event", Namespaced: true}, ns, "an-event",
			withEventFields(ns))
		ex := mustExplain(t, who, ev)
		if ex.Graph != explain.StateIgnored || !strings.HasPrefix(ex.Decision, "left alone") {
			t.Fatalf("explanation: %+v", ex)
		}
	})
}
