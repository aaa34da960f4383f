package framework

import (
	"fmt"
	"testing"

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
			return fmt.Errorf("Ready condition %+v at generation %d", ready, cur.Generation)
		}
		return nil
	}, "%s", why)
	return cur
}
