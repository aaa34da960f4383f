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

package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after 10 s", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func recorded(t *testing.T, c *fake.Clientset, want int) func() error {
	return func() error {
		l, err := c.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != want {
			return fmt.Errorf("%d Events written, want %d", len(l.Items), want)
		}
		return nil
	}
}

func configMap(name string) runtime.Object {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

// The Events' broadcaster starts with the first Event, shuts down once none
// was recorded for its idle time, and starts again with the next.
func TestTheEventBroadcasterRunsOnlyWhileThereAreEventsToWrite(t *testing.T) {
	c := fake.NewClientset()
	r := newRecorders(c.EventsV1(), clientgoscheme.Scheme, logr.Discard(), 100*time.Millisecond)
	defer r.Stop()
	if r.running() {
		t.Fatal("the broadcaster runs before any Event")
	}
	rec := r.For("ownergc-test")
	rec.Eventf(configMap("a"), nil, corev1.EventTypeNormal, "Tested", "Test", "first")
	eventually(t, "the first Event should be written", recorded(t, c, 1))
	eventually(t, "the broadcaster should shut down once idle", func() error {
		if r.running() {
			return fmt.Errorf("running")
		}
		return nil
	})
	rec.Eventf(configMap("b"), nil, corev1.EventTypeNormal, "Tested", "Test", "second")
	if !r.running() {
		t.Fatal("the broadcaster does not run after an Event")
	}
	eventually(t, "an Event after the shutdown should be written by a new broadcaster", recorded(t, c, 2))
}

// Events recorded while the broadcaster shuts down and starts again, from
// many goroutines, neither race nor panic.
func TestEventsRecordedAcrossShutdowns(t *testing.T) {
	c := fake.NewClientset()
	r := newRecorders(c.EventsV1(), clientgoscheme.Scheme, logr.Discard(), time.Millisecond)
	defer r.Stop()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := r.For(fmt.Sprintf("component-%d", g%2))
			for i := range 50 {
				rec.Eventf(configMap(fmt.Sprintf("o-%d-%d", g, i)), nil, corev1.EventTypeNormal, "Tested", "Test", "event %d", i)
				if i%10 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

// Without an idle time (the single-cluster mode) the broadcaster, once
// started, runs until stopped: no timer shuts it down.
func TestWithoutAnIdleTimeTheEventBroadcasterRunsOn(t *testing.T) {
	c := fake.NewClientset()
	r := newRecorders(c.EventsV1(), clientgoscheme.Scheme, logr.Discard(), 0)
	r.For("ownergc-test").Eventf(configMap("a"), nil, corev1.EventTypeNormal, "Tested", "Test", "first")
	eventually(t, "the Event should be written", recorded(t, c, 1))
	r.mu.RLock()
	timer := r.timer
	r.mu.RUnlock()
	if !r.running() || timer != nil {
		t.Fatalf("running %v, shutdown timer %v: want running, with no timer", r.running(), timer)
	}
	r.Stop()
	if r.running() {
		t.Fatal("the broadcaster runs after Stop")
	}
}
