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
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// DeletionLog records, in the API server's order, the names of the objects
// of one kind (and namespace) deleted while it watches.
type DeletionLog struct {
	mu      sync.Mutex
	deleted []string
}

// WatchDeletions starts watching a kind in a namespace ("" for a
// cluster-scoped kind, or every namespace) and records every deletion until
// the test ends.
func (cp *ControlPlane) WatchDeletions(t testing.TB, k Kind, ns string) *DeletionLog {
	t.Helper()
	ri := cp.resource(k, ns)
	list, err := ri.List(Context(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing %s: %v", k.GVR, err)
	}
	w, err := ri.Watch(Context(t), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watching %s: %v", k.GVR, err)
	}
	t.Cleanup(w.Stop)
	l := &DeletionLog{}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Deleted {
				continue
			}
			if o, ok := ev.Object.(metav1.Object); ok {
				l.mu.Lock()
				l.deleted = append(l.deleted, o.GetName())
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// Names returns the names deleted so far, in order.
func (l *DeletionLog) Names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.deleted)
}

// AssertDeletedBefore waits until the log holds every name of first and
// last, and checks that every one of first was deleted before last.
func (l *DeletionLog) AssertDeletedBefore(t testing.TB, first []string, last string) {
	t.Helper()
	Eventually(t, 10*time.Second, func() error {
		got := l.Names()
		for _, n := range append(slices.Clone(first), last) {
			if !slices.Contains(got, n) {
				return fmt.Errorf("the watch has not seen %s deleted yet (deletions so far: %v)", n, got)
			}
		}
		return nil
	}, "every deletion should be seen by the watch")
	got := l.Names()
	at := slices.Index(got, last)
	for _, n := range first {
		if i := slices.Index(got, n); i > at {
			t.Errorf("%s was deleted after %s; deletion order: %v", n, last, got)
		}
	}
}
