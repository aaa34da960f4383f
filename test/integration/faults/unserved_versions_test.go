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

package faults_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/ownergc/ownergc/test/framework"
)

// Beyond upstream (kubernetes#102641): an owner referenced at a version the
// API server no longer serves. Where every version of the group is served by
// kube-apiserver itself (a CRD, a built-in group), the versions name the
// same stored objects: the reference is resolved at a served version, so its
// dependents are collected when the owner is gone and kept while it exists.
// For an aggregated group, or one whose discovery fails, the unserved
// version cannot be verified and never leads to a deletion.
func TestOwnersReferencedAtAnUnservedVersion(t *testing.T) {
	t.Run("CRD that stopped serving the version", func(t *testing.T) {
		ns := framework.CreateNamespace(t, cp.Client)
		crd := framework.CRD{Group: framework.UniqueGroup("dropped"), Kind: "Lever", Plural: "levers", Versions: []string{"v1alpha1", "v1"}}
		levers, _ := cp.CreateCRD(t, crd)
		old := levers.At("v1alpha1")
		owner := cp.Create(t, old, ns, "owner")
		keptDep := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-existing", framework.OwnedBy(owner.Ref(false)))
		goneDep := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-absent", framework.OwnedBy(absentRef(old, "absent")))
		crd.Unserved = []string{"v1alpha1"}
		cp.UpdateCRD(t, crd)
		m := cp.StartManager(t, framework.ManagerOptions{})
		m.WaitObserved(t, owner)

		cp.WaitGone(t, "its owner, referenced at an unserved version of a CRD, does not exist", goneDep)
		cp.Survive(t, "its owner, referenced at an unserved version of a CRD, exists", keptDep)
		cp.DeleteWith(t, framework.Object{Kind: levers, Namespace: ns, Name: owner.Name, UID: owner.UID}, metav1.DeletePropagationBackground)
		cp.WaitGone(t, "its owner was deleted", keptDep)
	})

	t.Run("built-in group, version no longer served", func(t *testing.T) {
		ns := framework.CreateNamespace(t, cp.Client)
		m := cp.StartManager(t, framework.ManagerOptions{})
		deployments := framework.Kind{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", Namespaced: true}
		labels := map[string]any{"app": "x"}
		spec := withField("spec", map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}},
		})
		// apps/v1beta1 is not served since Kubernetes 1.16. The reference
		// is resolved whether or not a Deployment was observed before it.
		goneDep := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-absent", framework.OwnedBy(absentRef(deployments.At("v1beta1"), "absent")))
		cp.WaitGone(t, "its owner, referenced at apps/v1beta1 before any Deployment was observed, does not exist", goneDep)

		existing := cp.Create(t, deployments, ns, "existing", spec)
		atOld := func(o framework.Object) framework.Object {
			o.Kind = deployments.At("v1beta1")
			return o
		}
		keptDep := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-existing", framework.OwnedBy(atOld(existing).Ref(false)))
		goneLater := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-absent-later", framework.OwnedBy(absentRef(deployments.At("v1beta1"), "absent-later")))
		m.WaitObserved(t, existing, keptDep)
		cp.WaitGone(t, "its owner, referenced at apps/v1beta1 after a Deployment was observed, does not exist", goneLater)
		cp.Survive(t, "its owner, referenced at apps/v1beta1, exists", keptDep)
	})

	t.Run("aggregated group", func(t *testing.T) {
		ns := framework.CreateNamespace(t, cp.Client)
		gv := schema.GroupVersion{Group: "agg-" + utilrand.String(5) + ".ownergc.test", Version: "v1"}
		agg := cp.ServeAggregatedAPI(t, gv, "Dial", "dials")
		m := cp.StartManager(t, framework.ManagerOptions{})
		// v2 of the group is not served; the server that served it may
		// have had its own storage.
		dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(absentRef(agg.Served().At("v2"), "absent")))
		m.WaitObserved(t, dep)
		cp.Survive(t, "its owner's version of an aggregated group is not served: it cannot be verified", dep)
	})

	t.Run("group whose discovery fails", func(t *testing.T) {
		ns := framework.CreateNamespace(t, cp.Client)
		gv := schema.GroupVersion{Group: "failing-" + utilrand.String(5) + ".ownergc.test", Version: "v1"}
		broken := cp.ServeAggregatedAPI(t, gv, "Knob", "knobs")
		broken.Close() // its backend is gone: discovery of the group-version fails
		m := cp.StartManager(t, framework.ManagerOptions{})
		dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(absentRef(broken.Served(), "absent")))
		m.WaitObserved(t, dep)
		cp.Survive(t, "its owner's group cannot be discovered: it cannot be verified", dep)
	})
}
