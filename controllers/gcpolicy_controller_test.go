package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// The policy is reconciled when someone changes it, not when its status is
// written (by the reconciler itself, most of the time).
func TestOnlyChangesToThePolicyReconcileIt(t *testing.T) {
	base := func() *ownergcv1alpha1.GCPolicy {
		return &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName, Generation: 3, ResourceVersion: "10",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}}
	}
	now := metav1.NewTime(time.Now())
	for name, tc := range map[string]struct {
		change func(*ownergcv1alpha1.GCPolicy)
		want   bool
	}{
		"its status":                {func(p *ownergcv1alpha1.GCPolicy) { p.Status.Graph.Nodes, p.Status.LastSyncTime = 42, &now }, false},
		"its spec (the generation)": {func(p *ownergcv1alpha1.GCPolicy) { p.Generation++ }, true},
		"a label":                   {func(p *ownergcv1alpha1.GCPolicy) { p.Labels["a"] = "x" }, true},
		"an annotation":             {func(p *ownergcv1alpha1.GCPolicy) { p.Annotations["e"] = "f" }, true},
	} {
		t.Run(name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			cur.ResourceVersion = "11"
			if got := policyChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("reconciled: %v, want %v", got, tc.want)
			}
		})
	}
	if !policyChanged().Create(event.CreateEvent{Object: base()}) || !policyChanged().Delete(event.DeleteEvent{Object: base()}) {
		t.Error("the policy's creation and deletion must reconcile it")
	}
}
