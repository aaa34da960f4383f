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
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// coordinator splits the clusters between the replicas that shard: each
// replica announces itself with a Lease of its own (multicluster-runtime's
// peer registry), and a cluster belongs to the replica that the rendezvous
// hash of the cluster's and the replicas' names picks. It engages a cluster
// with the fleet when the cluster becomes this replica's and disengages it
// when it stops being so.
//
// Unlike multicluster-runtime's sharded coordinator, it holds no Lease per
// cluster: the engine fence (engineFence) makes sure that a cluster's engine
// runs on one replica at a time, with a write per cluster only when an
// engine starts and when it stops, and the replicas' own Leases carry the
// renewals. A thousand idle clusters cost the host no more writes than one.
//
// Concurrency: recomputing holds recomputeMu throughout, so that the
// awares are engaged in the order the decisions were made; mu guards awares
// and engaged, and is not held while the awares are engaged.
type coordinator struct {
	peers   peers.Registry
	sharder sharder.Sharder
	// every is how often the ownership of the clusters is computed again
	// (the peers come and go).
	every time.Duration
	log   logr.Logger

	recomputeMu sync.Mutex

	mu      sync.Mutex
	awares  []multicluster.Aware
	engaged map[multicluster.ClusterName]*engagement
}

// engagement is a cluster the provider engaged.
type engagement struct {
	cl     cluster.Cluster
	parent context.Context // ends when the provider disengages it
	// cancel, when the cluster is this replica's, disengages it from the
	// awares.
	cancel context.CancelFunc
}

var _ mcmanager.Coordinator = (*coordinator)(nil)

func newCoordinator(reg peers.Registry, every time.Duration, log logr.Logger) *coordinator {
	return &coordinator{peers: reg, sharder: sharder.NewHRW(), every: every, log: log,
		engaged: make(map[multicluster.ClusterName]*engagement)}
}

// AddAware implements mcmanager.Coordinator.
func (c *coordinator) AddAware(a multicluster.Aware) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.awares = append(c.awares, a)
}

// Engage implements mcmanager.Coordinator: the cluster is engaged with the
// awares if it is this replica's, until ctx ends or it stops being so.
func (c *coordinator) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e := &engagement{cl: cl, parent: ctx}
	c.mu.Lock()
	if prev := c.engaged[name]; prev != nil && prev.cancel != nil {
		prev.cancel() // engaged again: the engine is built anew
	}
	c.engaged[name] = e
	c.mu.Unlock()
	context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.engaged[name] == e {
			delete(c.engaged, name)
		}
		if e.cancel != nil {
			e.cancel()
		}
	})
	c.recompute()
	return nil
}

// Runnable implements mcmanager.Coordinator: it runs the peer registry and
// computes the clusters' ownership again every c.every.
func (c *coordinator) Runnable() manager.Runnable { return coordination{c} }

// coordination is the coordinator's runnable: it runs on every replica
// that shards.
type coordination struct{ c *coordinator }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (coordination) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (r coordination) Start(ctx context.Context) error {
	c := r.c
	errs := make(chan error, 1)
	go func() { errs <- c.peers.Run(ctx) }()
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-t.C:
			c.recompute()
		}
	}
}

// recompute engages the clusters that are this replica's and disengages
// those that are no longer. Until the registry lists this replica among the
// peers (after its first list of the peer Leases), it decides nothing: a
// replica that starts takes no cluster before it knows the others.
func (c *coordinator) recompute() {
	c.recomputeMu.Lock()
	defer c.recomputeMu.Unlock()
	known := c.peers.Snapshot()
	self := c.peers.Self()
	if !hasPeer(known, self.ID) {
		return
	}
	type start struct {
		ctx  context.Context
		name multicluster.ClusterName
		cl   cluster.Cluster
	}
	var starts []start
	c.mu.Lock()
	awares := append([]multicluster.Aware(nil), c.awares...)
	for name, e := range c.engaged {
		mine := c.sharder.ShouldOwn(name.String(), known, self)
		switch {
		case mine && e.cancel == nil && e.parent.Err() == nil:
			ctx, cancel := context.WithCancel(e.parent)
			e.cancel = cancel
			starts = append(starts, start{ctx, name, e.cl})
			c.log.V(1).Info("Cluster is this replica's", "cluster", name)
		case !mine && e.cancel != nil:
			e.cancel()
			e.cancel = nil
			c.log.V(1).Info("Cluster is another replica's", "cluster", name)
		}
	}
	c.mu.Unlock()
	for _, s := range starts {
		for _, a := range awares {
			if err := a.Engage(s.ctx, s.name, s.cl); err != nil {
				c.log.Error(err, "Unable to engage the cluster; trying again on the next round", "cluster", s.name)
				c.mu.Lock()
				if e := c.engaged[s.name]; e != nil && e.cancel != nil && e.cl == s.cl {
					e.cancel()
					e.cancel = nil
				}
				c.mu.Unlock()
				break
			}
		}
	}
}

func hasPeer(known []sharder.PeerInfo, id string) bool {
	for _, p := range known {
		if p.ID == id {
			return true
		}
	}
	return false
}
