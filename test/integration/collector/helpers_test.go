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
	"testing"
	"time"

	"github.com/ownergc/ownergc/test/framework"
)

// parallelNamespace runs the test in parallel with the package's others,
// and returns a namespace of its own.
func parallelNamespace(t *testing.T) string {
	t.Helper()
	t.Parallel()
	return framework.CreateNamespace(t, cp.Client)
}

// dependentOf creates a ConfigMap in owner's namespace owned by owner
// (blocking its deletion when block), and waits until the collector links
// it to owner.
func dependentOf(t *testing.T, owner framework.Object, name string, block bool, opts ...framework.Option) framework.Object {
	t.Helper()
	dep := cp.Create(t, framework.ConfigMaps, owner.Namespace, name, append(opts, framework.OwnedBy(owner.Ref(block)))...)
	manager.WaitLinked(t, owner, dep, block)
	return dep
}

// heldDependentOf is dependentOf for a dependent held by HoldFinalizer,
// released when the test ends if it was not.
func heldDependentOf(t *testing.T, owner framework.Object, name string, block bool) framework.Object {
	t.Helper()
	dep := cp.CreateHeld(t, framework.ConfigMaps, owner.Namespace, name, framework.OwnedBy(owner.Ref(block)))
	manager.WaitLinked(t, owner, dep, block)
	return dep
}

// goneOrder polls objs, given in the order they are expected to disappear,
// until all are gone and returns, for each, the index of the poll at which it
// was first seen gone. Each poll reads the objects in reverse order, so that
// objs[i] seen gone at an earlier poll than objs[j] (i > j) proves objs[i]
// disappeared first.
func goneOrder(t *testing.T, objs ...framework.Object) []int {
	t.Helper()
	seen := make([]int, len(objs))
	for i := range seen {
		seen[i] = -1
	}
	deadline := time.Now().Add(framework.CascadeTimeout)
	for tick := 0; ; tick++ {
		remaining := 0
		for i := len(objs) - 1; i >= 0; i-- {
			if seen[i] >= 0 {
				continue
			}
			if _, ok := cp.Get(t, objs[i]); !ok {
				seen[i] = tick
			} else {
				remaining++
			}
		}
		if remaining == 0 {
			return seen
		}
		if time.Now().After(deadline) {
			var left []string
			for i, o := range objs {
				if seen[i] < 0 {
					left = append(left, o.Name)
				}
			}
			t.Fatalf("objects %v still exist after %s (first seen gone at polls %v)", left, framework.CascadeTimeout, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
