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

package fleet

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// fakeRegistry is a peer registry whose peers the test sets.
type fakeRegistry struct {
	mu    sync.Mutex
	self  sharder.PeerInfo
	known []sharder.PeerInfo
}

func (r *fakeRegistry) Self() sharder.PeerInfo { return r.self }
func (r *fakeRegistry) Snapshot() []sharder.PeerInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sharder.PeerInfo(nil), r.known...)
}
func (r *fakeRegistry) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (r *fakeRegistry) set(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known = nil
	for _, id := range ids {
		r.known = append(r.known, sharder.PeerInfo{ID: id, Weight: 1})
	}
}

// recordingAware records the clusters engaged with it and the contexts
// they were engaged with.
type recordingAware struct {
	mu      sync.Mutex
	engaged map[string][]context.Context
}

func (a *recordingAware) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.engaged[name.String()] = append(a.engaged[name.String()], ctx)
	return nil
}

// running returns how many engagements of name are still live, and how
// many there were.
func (a *recordingAware) running(name string) (live, all int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ctx := range a.engaged[name] {
		if ctx.Err() == nil {
			live++
		}
	}
	return live, len(a.engaged[name])
}

// Step by step: what the coordinator engages and disengages as the
// provider engages clusters and replicas come and go.
func TestCoordinatorEngagesTheClustersOfThisReplicaOnly(t *testing.T) {
	reg := &fakeRegistry{self: sharder.PeerInfo{ID: "ownergc-0", Weight: 1}}
	c := newCoordinator(reg, time.Hour, logr.Discard())
	a := &recordingAware{engaged: map[string][]context.Context{}}
	c.AddAware(a)
	// Names the rendezvous hash gives to ownergc-0 and to ownergc-1.
	hrw := sharder.NewHRW()
	both := []sharder.PeerInfo{{ID: "ownergc-0", Weight: 1}, {ID: "ownergc-1", Weight: 1}}
	var stays, moves string
	for i := 0; stays == "" || moves == ""; i++ {
		name := fmt.Sprintf("member-%d", i)
		if hrw.ShouldOwn(name, both, reg.self) {
			stays = cmp.Or(stays, name)
		} else {
			moves = cmp.Or(moves, name)
		}
	}
	provider := map[string]context.CancelFunc{}
	engage := func(name string) {
		ctx, cancel := context.WithCancel(context.Background())
		provider[name] = cancel
		if err := c.Engage(ctx, multicluster.ClusterName(name), nil); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, cancel := range provider {
			cancel()
		}
	}()
	expect := func(step, name string, live, all int) {
		t.Helper()
		// Disengagements run on the context's AfterFunc goroutine.
		deadline := time.Now().Add(5 * time.Second)
		for {
			l, n := a.running(name)
			if l == live && n == all {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: cluster %s has %d live engagements of %d, want %d of %d", step, name, l, n, live, all)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	engage(stays)
	engage(moves)
	expect("before the replica knows itself", stays, 0, 0)
	expect("before the replica knows itself", moves, 0, 0)

	reg.set("ownergc-0")
	c.recompute()
	expect("alone", stays, 1, 1)
	expect("alone", moves, 1, 1)

	reg.set("ownergc-0", "ownergc-1")
	c.recompute()
	expect("a second replica joined", stays, 1, 1)
	expect("a second replica joined", moves, 0, 1)

	reg.set("ownergc-0")
	c.recompute()
	expect("the second replica left", moves, 1, 2)

	provider[moves]()
	expect("the provider disengaged it", moves, 0, 2)
	c.recompute()
	expect("the provider disengaged it, computed again", moves, 0, 2)

	engage(stays) // engaged again, say with a new kubeconfig
	expect("engaged again", stays, 1, 2)
}
