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
	"errors"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ownergc/ownergc/test/framework"
)

func TestRecreatedDependentWithoutOwnersSurvivesItsFormerOwnersDeletion(t *testing.T) {
	ns := parallelNamespace(t)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	var old []framework.Object
	for i := range 5 {
		old = append(old, cp.Create(t, framework.ConfigMaps, ns, fmt.Sprintf("d-%d", i), framework.OwnedBy(owner.Ref(true))))
	}
	sibling := cp.Create(t, framework.ConfigMaps, ns, "sibling", framework.OwnedBy(owner.Ref(false)))
	for _, d := range old {
		manager.WaitLinked(t, owner, d, true)
	}
	manager.WaitLinked(t, owner, sibling, false)

	// Replace each dependent with a new object of the same name and no
	// owners, then delete the owner at once, while ownergc may still know
	// the old objects.
	var fresh []framework.Object
	for _, d := range old {
		cp.DeleteWith(t, d, metav1.DeletePropagationBackground)
		fresh = append(fresh, cp.Create(t, framework.ConfigMaps, ns, d.Name))
	}
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)

	cp.WaitGone(t, "its only owner was deleted", sibling)
	cp.SurviveIntact(t, "an object without owner references is never collected, even if an earlier object of the same name was a dependent", fresh...)
}

func TestDependentThatGainsALiveOwnerJustBeforeItsOwnerIsDeletedSurvives(t *testing.T) {
	ns := parallelNamespace(t)
	first := cp.Create(t, framework.ConfigMaps, ns, "first")
	second := cp.Create(t, framework.ConfigMaps, ns, "second")
	var deps []framework.Object
	for i := range 10 {
		deps = append(deps, cp.Create(t, framework.ConfigMaps, ns, fmt.Sprintf("dep-%d", i), framework.OwnedBy(first.Ref(false))))
	}
	for _, d := range deps {
		manager.WaitLinked(t, first, d, false)
	}

	var wg sync.WaitGroup
	errs := make([]error, len(deps))
	for i, d := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = cp.TryUpdate(t, d, func(cur *unstructured.Unstructured) {
				cur.SetOwnerReferences(append(cur.GetOwnerReferences(), second.Ref(false)))
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	cp.DeleteWith(t, first, metav1.DeletePropagationBackground)

	for _, d := range deps {
		cp.WaitOwners(t, d, "it has a live owner; only the reference to the deleted one must go", second.UID)
	}
	cp.SurviveIntact(t, "they keep a live owner", deps...)
}
