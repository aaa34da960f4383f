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
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// WaitPolicyInForce waits until the GCPolicy's current generation is in
// force (status.observedGeneration) and Ready at that generation, as
// `kubectl wait --for=condition=Ready` sees it, and returns the policy.
func WaitPolicyInForce(t testing.TB, c client.Client, why string) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	cur := &ownergcv1alpha1.GCPolicy{}
	Eventually(t, CascadeTimeout, func() error {
		if err := c.Get(Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("status.observedGeneration %d, generation %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, ownergcv1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != cur.Generation {
			return fmt.Errorf("the Ready condition is %+v at generation %d", ready, cur.Generation)
		}
		return nil
	}, "%s", why)
	return cur
}

// SetPolicy changes the spec of the GCPolicy `default` (which the manager
// creates when none exists), reading it again when the manager wrote its
// status in between, and waits until the change is in force.
func SetPolicy(t testing.TB, c client.Client, change func(*ownergcv1alpha1.GCPolicySpec)) *ownergcv1alpha1.GCPolicy {
	t.Helper()
	Eventually(t, CascadeTimeout, func() error {
		p := &ownergcv1alpha1.GCPolicy{}
		if err := c.Get(Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		change(&p.Spec)
		err := c.Update(Context(t), p)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("updating the GCPolicy: %v", err)
		}
		return err
	}, "the GCPolicy should be updated")
	return WaitPolicyInForce(t, c, "the changed GCPolicy should be in force")
}

// PolicyStatus reads the status of the GCPolicy default.
func PolicyStatus(t testing.TB, c client.Client) ownergcv1alpha1.GCPolicyStatus {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{}
	if err := c.Get(Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
		t.Fatal(err)
	}
	return p.Status
}
