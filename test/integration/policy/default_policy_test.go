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

package policy_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// checkCreatedWithDefaults fails the test unless p is a GCPolicy the manager
// created: the defaults, its label and its annotation.
func checkCreatedWithDefaults(t *testing.T, p *ownergcv1alpha1.GCPolicy) {
	t.Helper()
	if want := ownergcv1alpha1.DefaultSpec(); !equality.Semantic.DeepEqual(p.Spec, want) {
		t.Errorf("spec of the GCPolicy the manager created:\n got: %+v\nwant the defaults: %+v", p.Spec, want)
	}
	if got := p.Labels[ownergcv1alpha1.LabelManagedBy]; got != ownergcv1alpha1.ManagedByOwnergc {
		t.Errorf("label %s=%q, want %q", ownergcv1alpha1.LabelManagedBy, got, ownergcv1alpha1.ManagedByOwnergc)
	}
	if got := p.Annotations[ownergcv1alpha1.AnnotationDescription]; got != ownergcv1alpha1.CreatedWithDefaultsDescription {
		t.Errorf("annotation %s=%q, want it to say the manager created it with the defaults", ownergcv1alpha1.AnnotationDescription, got)
	}
}

// The defaults in force are visible: the manager creates the GCPolicy
// `default` with them when none exists, and says so.
func TestManagerCreatesTheDefaultPolicy(t *testing.T) {
	p := &ownergcv1alpha1.GCPolicy{}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		return k8s.Get(bg(), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p)
	}, "the manager should create the GCPolicy %s", ownergcv1alpha1.PolicyName)
	checkCreatedWithDefaults(t, p)
	framework.WaitPolicyInForce(t, k8s, "the GCPolicy the manager created should be in force")
	waitPolicyEvent(t, corev1.EventTypeNormal, "CreatedWithDefaults", "defaults")
}

// `kubectl delete gcpolicy default` restores the defaults: the manager
// creates the policy again with them, and puts it in force.
func TestDeletedPolicyIsCreatedAgainWithTheDefaults(t *testing.T) {
	custom := ownergcv1alpha1.GCPolicySpec{
		IgnoredResources:   []ownergcv1alpha1.GroupResource{},
		Workers:            ownergcv1alpha1.Workers{AttemptToDelete: 3, AttemptToOrphan: 4},
		DefaultPropagation: ownergcv1alpha1.PropagationForeground,
	}
	applyPolicy(t, custom)
	old := framework.WaitPolicyInForce(t, k8s, "the custom GCPolicy should be in force")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if w := manager.Engine.Status(); w.AttemptToDeleteWorkers != 3 || w.AttemptToOrphanWorkers != 4 {
			return fmt.Errorf("pools %d/%d", w.AttemptToDeleteWorkers, w.AttemptToOrphanWorkers)
		}
		return nil
	}, "the worker pools of the custom policy should be 3/4")

	cur := deletePolicy(t)
	if cur.UID == old.UID {
		t.Fatal("the GCPolicy was not deleted")
	}
	checkCreatedWithDefaults(t, cur)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		p := manager.Engine.Policy()
		if !p.FromPolicy || p.Generation != cur.Generation {
			return fmt.Errorf("engine runs %+v, want the new GCPolicy's generation %d", p, cur.Generation)
		}
		if p.AttemptToDeleteWorkers != int(ownergcv1alpha1.DefaultAttemptToDeleteWorkers) ||
			p.AttemptToOrphanWorkers != int(ownergcv1alpha1.DefaultAttemptToOrphanWorkers) ||
			p.DefaultPropagation != metav1.DeletionPropagation(ownergcv1alpha1.DefaultPropagationPolicy) ||
			len(p.Ignored) != len(ownergcv1alpha1.DefaultIgnoredResources()) {
			return fmt.Errorf("engine runs %+v, want the defaults", p)
		}
		if st := manager.Engine.Status(); st.AttemptToDeleteWorkers != int(ownergcv1alpha1.DefaultAttemptToDeleteWorkers) {
			return fmt.Errorf("attempt-to-delete pool has %d workers", st.AttemptToDeleteWorkers)
		}
		return nil
	}, "the defaults should be in force again")
}
