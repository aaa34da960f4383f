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
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// WaitEvent waits up to timeout for an event in namespace ns about the
// object with UID uid, with reason and (unless eventType is "") of type
// eventType, and returns it.
func (cp *ControlPlane) WaitEvent(t testing.TB, ns string, uid types.UID, eventType, reason string, timeout time.Duration) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	Eventually(t, timeout, func() error {
		list, err := cp.Clientset.EventsV1().Events(ns).List(Context(t), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var others []string
		for _, e := range list.Items {
			if e.Regarding.UID != uid {
				continue
			}
			if e.Reason == reason && (eventType == "" || e.Type == eventType) {
				found = e
				return nil
			}
			others = append(others, e.Type+"/"+e.Reason)
		}
		return fmt.Errorf("no %s event about uid %s in namespace %q (other events about it: %v)", reason, uid, ns, others)
	}, "a %s event with reason %s should be recorded", eventType, reason)
	return found
}
