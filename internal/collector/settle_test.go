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

package collector

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	"github.com/ownergc/ownergc/internal/graph"
	"github.com/ownergc/ownergc/internal/policy"
)

// The workers do not start on the placeholder policy a pending store holds
// before the GCPolicy is read: a dependent whose owner is gone is not
// deleted while the policy is unknown, and once the GCPolicy says DryRun it
// is decided about and still not deleted.
func TestWorkersWaitForThePolicyToBeRead(t *testing.T) {
	store := policy.NewPendingStore()
	cache, api := newFakeCache(), newFakeAPI()
	g := graph.New(100)
	synced := make(chan struct{})
	var once bool
	c := New(Options{Graph: g, Resources: cache, Objects: cache, Client: api, Recorder: events.NewFakeRecorder(100), Policy: store,
		ExplainClient: api, GraphSynced: func() bool {
			if !once {
				once = true
				close(synced)
			}
			return true
		}})
	h := &harness{t: t, graph: g, cache: cache, api: api, policy: store, c: c}

	owner := configMap("owner")
	dependent := configMap("dependent", ownedBy(owner, false))
	h.observe(owner, dependent)
	h.gone(owner)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	select {
	case <-synced:
		t.Fatal("the workers started before the GCPolicy was read")
	case <-time.After(500 * time.Millisecond):
	}
	if d := api.deleted(); len(d) > 0 {
		t.Fatalf("deleted %v on the placeholder policy", d)
	}

	dryRun := policy.Defaults()
	dryRun.DryRun, dryRun.FromPolicy = true, true
	store.Set(dryRun)
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the workers did not start once the GCPolicy was read")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		toDelete, _ := c.QueueLengths()
		if toDelete == 0 && c.attemptToDelete.NumRequeues(g.Node(dependent.UID)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dependent was not decided about within 10s (queue %d)", toDelete)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := api.deleted(); len(d) > 0 {
		t.Errorf("deleted %v although the GCPolicy says DryRun", d)
	}
}
