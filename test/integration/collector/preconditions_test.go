package collector_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

func TestRecreatedDependentWithoutOwnersSurvivesItsFormerOwnersDeletion(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	owner := configMap(t, ns, "owner", nil)
	var old []*corev1.ConfigMap
	for i := range 5 {
		old = append(old, configMap(t, ns, fmt.Sprintf("d-%d", i), owned(ref(owner, configMapGVK, true))))
	}
	sibling := configMap(t, ns, "sibling", owned(ref(owner, configMapGVK, false)))
	for _, d := range old {
		waitDependentInGraph(t, owner, d, true)
	}
	waitDependentInGraph(t, owner, sibling, false)

	// Replace each dependent with a new object of the same name and no
	// owners, then delete the owner at once, while ownergc may still know
	// the old objects.
	var fresh []client.Object
	for _, d := range old {
		deleteWith(t, d, metav1.DeletePropagationBackground)
		fresh = append(fresh, configMap(t, ns, d.Name, nil))
	}
	deleteWith(t, owner, metav1.DeletePropagationBackground)

	waitGone(t, sibling, "its only owner was deleted")
	surviveAll(t, "an object without owner references is never collected, even if an earlier object of the same name was a dependent", fresh...)
}

func TestDependentThatGainsALiveOwnerJustBeforeItsOwnerIsDeletedSurvives(t *testing.T) {
	t.Parallel()
	ns := framework.CreateNamespace(t, k8s)
	first := configMap(t, ns, "first", nil)
	second := configMap(t, ns, "second", nil)
	var deps []client.Object
	for i := range 10 {
		deps = append(deps, configMap(t, ns, fmt.Sprintf("dep-%d", i), owned(ref(first, configMapGVK, false))))
	}
	for _, d := range deps {
		waitDependentInGraph(t, first, d, false)
	}

	var wg sync.WaitGroup
	errs := make([]error, len(deps))
	for i, d := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = tryUpdate(t, d.(*corev1.ConfigMap), func(cur *corev1.ConfigMap) {
				cur.OwnerReferences = append(cur.OwnerReferences, ref(second, configMapGVK, false))
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	deleteWith(t, first, metav1.DeletePropagationBackground)

	for _, d := range deps {
		waitOwners(t, d, "it has a live owner; only the reference to the deleted one must go", second)
	}
	surviveAll(t, "they keep a live owner", deps...)
}
