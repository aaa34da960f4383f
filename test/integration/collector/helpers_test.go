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
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/test/framework"
)

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

// waitEvent waits for an event about the object with the given UID, with the
// given type and reason, in namespace ns, and returns it.
func waitEvent(t *testing.T, ns string, uid types.UID, eventType, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		list, err := cp.Clientset.EventsV1().Events(ns).List(framework.Context(t), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var others []string
		for _, e := range list.Items {
			if e.Regarding.UID != uid {
				continue
			}
			if e.Type == eventType && e.Reason == reason {
				found = e
				return nil
			}
			others = append(others, e.Type+"/"+e.Reason)
		}
		return fmt.Errorf("no %s %s event about uid %s in namespace %q (other events about it: %v)", eventType, reason, uid, ns, others)
	}, "a %s event with reason %s should be recorded", eventType, reason)
	return found
}
