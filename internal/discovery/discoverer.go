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

package discovery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configure a Discoverer.
type Options struct {
	// Client is the discovery client.
	Client discovery.DiscoveryInterface
	// Resync is the safety-net rediscovery period (default 5 minutes),
	// lengthened by up to a fifth of it at random each time, so that the
	// clusters a fleet engages together (all of a replica's, when it
	// starts) do not rediscover together, ever after.
	Resync time.Duration
	// FailedResync is the rediscovery period while some group fails
	// (default 10 seconds).
	FailedResync time.Duration
	// CRDDeleted reports whether the CustomResourceDefinition of that name
	// was observed deleted (and not re-created since): it tells a resource
	// whose objects are gone from one that is merely no longer served.
	CRDDeleted func(name string) bool
	// APIServices lists the group-versions registered with the API server,
	// each with whether a backend service serves it (an aggregated API);
	// nil, or an error, and no unserved version is ever resolved to
	// another.
	APIServices func(ctx context.Context) (map[schema.GroupVersion]bool, error)
	// APIServicesListed, when set, is closed once APIServices can answer:
	// the first discovery waits for it, for at most APIServicesWait, so
	// that it can tell the API server's own groups and need not run again
	// (TriggerIfLocalUnknown) once they are listed.
	APIServicesListed <-chan struct{}
	// APIServicesWait bounds that wait (default DefaultAPIServicesWait).
	APIServicesWait time.Duration
}

// DefaultAPIServicesWait bounds how long the first discovery waits for the
// APIServices to be listed (Options.APIServicesListed): a cluster where
// they cannot be listed is discovered that much later, and as before.
const DefaultAPIServicesWait = 2 * time.Second

// Change is what one rediscovery changed.
type Change struct {
	Snapshot *Snapshot
	// Removed lists the resources no longer served; Deleted marks those whose
	// CustomResourceDefinition was deleted, which deletes all their objects.
	// A resource that left discovery earlier without being deleted is listed
	// again, deleted, once its CustomResourceDefinition is observed deleted.
	Removed []Removed
}

// Removed is a resource that is no longer served.
type Removed struct {
	Resource Resource
	Deleted  bool
}

// Discoverer runs discovery and tells subscribers about changes.
//
// Concurrency: the snapshot is an atomic pointer, read without locks;
// discovery runs in the single Start goroutine; subscribers are called from
// it, one at a time.
type Discoverer struct {
	opts     Options
	snapshot atomic.Pointer[Snapshot]
	trigger  chan struct{}
	// started is when the latest discovery started (Unix nanoseconds; 0
	// before the first).
	started atomic.Int64

	// unserved holds the resources that left discovery without their CRD
	// being observed deleted, until they are served again or it is. Only
	// the Start goroutine uses it.
	unserved map[schema.GroupResource]Resource

	mu          sync.Mutex
	subscribers []func(Change)
	// followUps is the number of quick rediscoveries still to run after the
	// last trigger; followUpDelay the wait before the next one.
	followUps     int
	followUpDelay time.Duration
}

const (
	firstFollowUp = 250 * time.Millisecond
	maxFollowUp   = 2 * time.Second
)

// New returns a Discoverer.
func New(opts Options) *Discoverer {
	if opts.Resync == 0 {
		opts.Resync = 5 * time.Minute
	}
	if opts.FailedResync == 0 {
		opts.FailedResync = 10 * time.Second
	}
	if opts.APIServicesWait == 0 {
		opts.APIServicesWait = DefaultAPIServicesWait
	}
	return &Discoverer{opts: opts, trigger: make(chan struct{}, 1), unserved: make(map[schema.GroupResource]Resource)}
}

// Subscribe registers f to be called after every rediscovery that changed
// something — the watchable resources, the failures, the resources and groups
// served at all — and after the first one.
func (d *Discoverer) Subscribe(f func(Change)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.subscribers = append(d.subscribers, f)
}

// Snapshot returns the latest snapshot, or nil before the first discovery.
func (d *Discoverer) Snapshot() *Snapshot { return d.snapshot.Load() }

// ResourceFor maps a kind at a version to the resource to read and write it
// through (see Snapshot.Resolve).
func (d *Discoverer) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	s := d.snapshot.Load()
	if s == nil {
		return schema.GroupVersionResource{}, false, &NotServedError{GVK: gvk, reason: "discovery has not run yet"}
	}
	r, ok := s.Resolve(gvk)
	if !ok {
		return schema.GroupVersionResource{}, false, &NotServedError{GVK: gvk}
	}
	return r.GroupVersionResource, r.Namespaced, nil
}

// NotServedError: the API server does not serve a kind at a version, and no
// other version can stand in for it.
type NotServedError struct {
	GVK    schema.GroupVersionKind
	reason string
}

func (e *NotServedError) Error() string {
	if e.reason != "" {
		return fmt.Sprintf("kind %s cannot be mapped to a resource: %s", e.GVK, e.reason)
	}
	return fmt.Sprintf("kind %s is not served by the API server", e.GVK)
}

// Trigger asks for a rediscovery now.
func (d *Discoverer) Trigger() {
	select {
	case d.trigger <- struct{}{}:
	default:
	}
}

// TriggerUnlessStartedSince asks for a rediscovery unless one started at
// or after published, or none started yet: that discovery, the first one
// (which starts when the Discoverer does) or, if it fails, its retry,
// finds what the API server published by then.
func (d *Discoverer) TriggerUnlessStartedSince(published time.Time) {
	if s := d.started.Load(); s != 0 && s < published.UnixNano() {
		d.Trigger()
	}
}

// TriggerIfLocalUnknown asks for a rediscovery if the latest one could not
// tell which groups the API server serves itself (Options.APIServices
// failed: their follower had not listed them yet) and a discovery has
// started: called once they are listed, so that a version no longer
// served resolves (Snapshot.Resolve) from then on, not from the next
// resync.
func (d *Discoverer) TriggerIfLocalUnknown() {
	if d.started.Load() == 0 {
		return // the first discovery, yet to start, lists them
	}
	if s := d.snapshot.Load(); s != nil && s.localKnown {
		return
	}
	d.Trigger()
}

// TriggerWithFollowUps asks for a rediscovery now and a few more over the
// next seconds: the API server publishes a new CRD's resource shortly after
// the CRD is Established, and an APIService's after its backend answers.
func (d *Discoverer) TriggerWithFollowUps() {
	d.mu.Lock()
	d.followUps = 4
	d.followUpDelay = firstFollowUp
	d.mu.Unlock()
	d.Trigger()
}

// Start runs discovery until ctx ends. The first discovery runs once the
// APIServices are listed (Options.APIServicesListed; at once without it),
// before Start returns control to the loop; RunOnce can be used to run it
// synchronously.
func (d *Discoverer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("discovery")
	ctx = ctrl.LoggerInto(ctx, log)
	timer := time.NewTimer(0)
	defer timer.Stop()
	if d.opts.APIServicesListed != nil {
		wait := time.NewTimer(d.opts.APIServicesWait)
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil
		case <-d.opts.APIServicesListed:
		case <-wait.C:
			log.V(1).Info("The APIServices are not listed yet; discovering without them", "waited", d.opts.APIServicesWait)
		}
		wait.Stop()
		// What asked for a rediscovery meanwhile (the followers' first
		// lists) is found by the first discovery, which starts now; the
		// follow-ups it asked for stay scheduled.
		select {
		case <-d.trigger:
		default:
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.trigger:
		case <-timer.C:
		}
		next := d.resyncAfter()
		// A discovery that failed whole, or a group of one that failed,
		// is tried again soon.
		if ok := d.runOnce(ctx); !ok || len(d.snapshot.Load().Failed) > 0 {
			next = d.opts.FailedResync
		}
		if followUp := d.nextFollowUp(); followUp < d.opts.Resync {
			next = min(next, followUp)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// resyncAfter is the wait before the safety-net rediscovery: Resync and up
// to a fifth more, at random.
func (d *Discoverer) resyncAfter() time.Duration {
	return d.opts.Resync + rand.N(d.opts.Resync/5+1)
}

// nextFollowUp returns the wait before the next follow-up rediscovery (a
// long one when none is pending), backing off from 250 ms to 2 s; every
// TriggerWithFollowUps starts over from 250 ms.
func (d *Discoverer) nextFollowUp() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.followUps == 0 {
		return d.opts.Resync
	}
	d.followUps--
	next := d.followUpDelay
	d.followUpDelay = min(2*d.followUpDelay, maxFollowUp)
	return next
}

// NeedLeaderElection: discovery feeds the graph, which runs on every replica.
func (d *Discoverer) NeedLeaderElection() bool { return false }

// RunOnce runs one discovery and notifies subscribers if anything changed.
func (d *Discoverer) RunOnce(ctx context.Context) { d.runOnce(ctx) }

// runOnce is RunOnce; false when the discovery failed.
func (d *Discoverer) runOnce(ctx context.Context) bool {
	log := ctrl.LoggerFrom(ctx)
	d.started.Store(time.Now().UnixNano())
	old := d.snapshot.Load()
	s, err := d.discover(ctx, old)
	if err != nil {
		log.Error(err, "Discovery failed, keeping the previous resources")
		return false
	}
	d.snapshot.Store(s)
	change := Change{Snapshot: s}
	if old != nil {
		for _, r := range old.Watchable {
			if _, ok := s.byGroupRsrc[r.GroupResource()]; ok {
				continue
			}
			deleted := d.crdDeleted(r)
			if !deleted {
				d.unserved[r.GroupResource()] = r
			}
			change.Removed = append(change.Removed, Removed{Resource: r, Deleted: deleted})
		}
	}
	for gr, r := range d.unserved {
		switch {
		case s.byGroupRsrc[gr] != (Resource{}):
			delete(d.unserved, gr) // served again
		case d.crdDeleted(r) && !slices.ContainsFunc(change.Removed, func(x Removed) bool { return x.Resource == r }):
			delete(d.unserved, gr)
			change.Removed = append(change.Removed, Removed{Resource: r, Deleted: true})
		}
	}
	if old != nil && slices.Equal(old.Watchable, s.Watchable) && sameFailures(old.Failed, s.Failed) && len(change.Removed) == 0 &&
		sameServed(old, s) {
		return true
	}
	for _, f := range s.Failed {
		log.Info("Discovery of a group-version failed, will retry", "groupVersion", f.GroupVersion.String(), "error", f.Err.Error())
	}
	log.V(1).Info("Resources discovered", "watchable", len(s.Watchable), "failed", len(s.Failed), "removed", len(change.Removed))
	d.mu.Lock()
	subs := slices.Clone(d.subscribers)
	d.mu.Unlock()
	for _, f := range subs {
		f(change)
	}
	return true
}

// crdDeleted reports whether r's CustomResourceDefinition was observed
// deleted.
func (d *Discoverer) crdDeleted(r Resource) bool {
	return d.opts.CRDDeleted != nil && r.Group != "" && d.opts.CRDDeleted(r.Resource+"."+r.Group)
}

func sameFailures(a, b []Failure) bool {
	return slices.EqualFunc(a, b, func(x, y Failure) bool {
		return x.GroupVersion == y.GroupVersion && x.Err.Error() == y.Err.Error()
	})
}

var deletableVerbs = []string{"list", "watch", "delete"}

// discover queries the API server. Resources of group-versions that fail are
// carried over from old.
func (d *Discoverer) discover(ctx context.Context, old *Snapshot) (*Snapshot, error) {
	groups, lists, err := d.opts.Client.ServerGroupsAndResources()
	var failed map[schema.GroupVersion]error
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, err
		}
		failed = gdf.Groups
	}
	s := &Snapshot{
		Time:         time.Now(),
		byGVK:        make(map[schema.GroupVersionKind]Resource),
		preferred:    make(map[schema.GroupKind]Resource),
		byGroupRsrc:  make(map[schema.GroupResource]Resource),
		groups:       make(map[string]bool),
		local:        make(map[string]bool),
		failedGroups: make(map[string]bool),
	}
	byGV := make(map[schema.GroupVersion][]Resource)
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range resourcesOf(gv, list.APIResources) {
			s.byGVK[r.GVK()] = r
			byGV[gv] = append(byGV[gv], r)
		}
	}
	for gv, ferr := range failed {
		s.Failed = append(s.Failed, Failure{GroupVersion: gv, Err: ferr})
		s.failedGroups[gv.Group] = true
		if old == nil {
			continue
		}
		// Keep what we knew of the failed group-version.
		for gvk, r := range old.byGVK {
			if gvk.GroupVersion() == gv {
				s.byGVK[gvk] = r
				byGV[gv] = append(byGV[gv], r)
			}
		}
	}
	sort.Slice(s.Failed, func(i, j int) bool { return s.Failed[i].GroupVersion.String() < s.Failed[j].GroupVersion.String() })

	// Preferred versions: walk each group's versions in the server's order
	// of preference and take each resource the first time it appears.
	for _, g := range groups {
		s.groups[g.Name] = true
		versions := make([]string, 0, len(g.Versions))
		if g.PreferredVersion.Version != "" {
			versions = append(versions, g.PreferredVersion.Version)
		}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		for _, v := range versions {
			for _, r := range byGV[schema.GroupVersion{Group: g.Name, Version: v}] {
				if _, seen := s.byGroupRsrc[r.GroupResource()]; seen {
					continue
				}
				s.byGroupRsrc[r.GroupResource()] = r
				if _, seen := s.preferred[r.GroupKind()]; !seen {
					s.preferred[r.GroupKind()] = r
				}
			}
		}
	}
	for _, r := range s.byGroupRsrc {
		if r.Deletable {
			s.Watchable = append(s.Watchable, r)
		}
	}
	sort.Slice(s.Watchable, func(i, j int) bool { return lessResource(s.Watchable[i], s.Watchable[j]) })
	d.findLocalGroups(ctx, s)
	return s, nil
}

// findLocalGroups records the groups whose every registered version the API
// server serves itself. When the APIServices cannot be listed no group is
// local, and no version is resolved to another.
func (d *Discoverer) findLocalGroups(ctx context.Context, s *Snapshot) {
	if d.opts.APIServices == nil {
		return
	}
	services, err := d.opts.APIServices(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot list APIServices; versions that are not served will not be resolved to served ones", "error", err.Error())
		return
	}
	s.localKnown = true
	aggregated := make(map[string]bool)
	for gv, hasService := range services {
		if hasService {
			aggregated[gv.Group] = true
		} else if !aggregated[gv.Group] {
			s.local[gv.Group] = true
		}
	}
	for g := range aggregated {
		delete(s.local, g)
	}
}

// resourcesOf are the resources a group-version's discovery lists (its
// subresources left out).
func resourcesOf(gv schema.GroupVersion, listed []metav1.APIResource) []Resource {
	out := make([]Resource, 0, len(listed))
	for _, ar := range listed {
		if strings.Contains(ar.Name, "/") {
			continue // a subresource
		}
		out = append(out, Resource{
			GroupVersionResource: gv.WithResource(ar.Name),
			Kind:                 ar.Kind,
			Namespaced:           ar.Namespaced,
			Deletable:            sets.New(ar.Verbs...).HasAll(deletableVerbs...),
		})
	}
	return out
}
