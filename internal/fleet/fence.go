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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/logging"
)

// engineLeasePrefix names the Leases that fence the engines: a cluster's
// claim, <engineLeasePrefix>-<cluster>, and a replica's heartbeat,
// <replicaLeasePrefix>-<replica>.
const (
	engineLeasePrefix  = "ownergc-engine"
	replicaLeasePrefix = "ownergc-replica"
)

// errFenceLost: the engine stopped because its replica's heartbeat could
// not be renewed in time.
var errFenceLost = errors.New("lost the replica's heartbeat Lease")

// engineFence makes each cluster's engine run on one replica at a time.
// The coordinator hands a cluster to another replica by disengaging it
// here, without waiting for its engine to stop; so the engine also holds a
// claim of its own, the cluster's engine Lease on the host, written when
// the engine is about to be built and given back only once it has stopped.
//
// A claim is not renewed: it is as good as its holder's heartbeat, one
// Lease per replica (and run of the process), held by a leader election
// and renewed every sixth of its duration. Every engine of a replica runs
// within the heartbeat's tenure and is stopped when a renewal fails, before
// the heartbeat can expire for the others, as a leader does. A replica
// takes a claim that is free, its own from a run that has ended, or one
// whose holder's heartbeat has expired (observed unchanged for a whole
// duration, on this replica's clock, from the moment each read began), is
// held by another run of the holder's process, or is gone while the claim
// itself has not been renewed for a duration. A Lease without the fence's
// mark (claimAnnotation: an engine of an earlier version renews it) is taken
// only once it has not been renewed for a duration. The take is an update
// with the claim's resourceVersion: of two replicas, one wins. A run gives
// its claim back however it ends, and tries again until it has, since
// nobody else takes it while the heartbeat lives. Per cluster, the host sees
// a write when an engine starts and one when it stops; per replica, the
// heartbeat, through a client of its own.
//
// Concurrency: tenure is swapped by the heartbeat's goroutine and read by
// the engines'; mu guards tenureChanged, active and seen; stopped is closed
// once, when the heartbeat ends.
type engineFence struct {
	// leases reads and writes the claims; heartbeatLeases the heartbeat,
	// through a rate limiter of its own, so that claims waited for by many
	// clusters never delay a renewal.
	leases, heartbeatLeases coordinationv1client.LeasesGetter
	namespace               string
	replica                 string
	duration                time.Duration
	// nonce and runs make each run's holder identity unique: a cluster
	// engaged again on this replica waits for its previous engine too, and
	// a restarted replica of the same name for its predecessor's.
	nonce string
	runs  atomic.Uint64
	// now is the clock the fence observes Leases by (tests replace it).
	now func() time.Time

	// tenure is the context of the heartbeat's current tenure (ended when
	// a renewal fails), nil while the heartbeat is not held; tenureChanged
	// is closed and replaced whenever it changes.
	tenure atomic.Pointer[context.Context]

	// stopped is closed when the heartbeat ends: the claims whose
	// release failed are no longer retried (the heartbeat's end frees
	// them).
	stopped chan struct{}

	mu            sync.Mutex
	tenureChanged chan struct{}
	// active holds the claims of this process's engines that have not
	// ended.
	active map[string]bool
	// seen is what this replica last read of a Lease (by name), and when
	// it first read it so: a Lease that reads the same for a whole
	// duration has not been renewed.
	seen map[string]observation
}

// observation is a Lease as last read, and when it was first read so.
type observation struct {
	holder string
	renew  time.Time
	since  time.Time
}

// claimAnnotation marks the claims this fence writes (valid by their
// holder's heartbeat) from the Leases an engine of the version before held
// and renewed: those are free only once they expire.
const claimAnnotation = "ownergc.io/fence"

// claimAnnotationValue says a claim is valid by its holder's heartbeat.
const claimAnnotationValue = "heartbeat"

func newEngineFence(leases, heartbeatLeases coordinationv1client.LeasesGetter, namespace, replica string, duration time.Duration) *engineFence {
	return &engineFence{leases: leases, heartbeatLeases: heartbeatLeases, namespace: namespace, replica: replica, duration: duration,
		nonce: strconv.FormatInt(time.Now().UnixNano(), 36), now: time.Now, stopped: make(chan struct{}),
		tenureChanged: make(chan struct{}), active: make(map[string]bool), seen: make(map[string]observation)}
}

// incarnation is this process's identity in the heartbeat: the replica and
// the run of the process.
func (f *engineFence) incarnation() string { return f.replica + "/" + f.nonce }

// heartbeat holds the replica's heartbeat Lease until ctx ends, acquiring
// it again after a lost tenure, and gives it back at the end. The fleet
// runs it from its start until every engine has stopped: an engine never
// runs without it.
func (f *engineFence) heartbeat(ctx context.Context) error {
	defer close(f.stopped)
	name := replicaLeaseName(f.replica)
	log := logging.WithValues(ctrl.LoggerFrom(ctx), "lease", name)
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: f.namespace, Name: name},
				Client:     f.heartbeatLeases,
				LockConfig: resourcelock.ResourceLockConfig{Identity: f.incarnation()},
			},
			LeaseDuration: f.duration,
			RenewDeadline: f.duration * 2 / 3,
			RetryPeriod:   f.duration / 6,
			// Not ReleaseOnCancel: the elector would give the Lease back
			// after a failed renewal too, before the engines it fences
			// have stopped. It is given back below, once ctx has ended
			// (every engine has stopped).
			Name: name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(held context.Context) { f.setTenure(&held) },
				OnStoppedLeading: func() { f.setTenure(nil) },
			},
		})
		if err != nil {
			return fmt.Errorf("holding the replica's heartbeat Lease: %w", err)
		}
		le.Run(ctx)
		f.setTenure(nil)
		if ctx.Err() == nil {
			log.Info("The replica's heartbeat Lease was lost: its engines stop, and start again once it is held again")
		}
	}
	if err := f.release(f.heartbeatLeases, name, f.incarnation()); err != nil {
		log.Info("Unable to give the replica's heartbeat Lease back; it expires on its own", "error", err.Error())
	}
	return nil
}

func (f *engineFence) setTenure(held *context.Context) {
	if held != nil && (*held).Err() != nil {
		// client-go calls OnStartedLeading in a goroutine of its own: a
		// call that comes after its tenure has ended is ignored.
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tenure.Store(held)
	close(f.tenureChanged)
	f.tenureChanged = make(chan struct{})
}

// currentTenure returns the heartbeat's tenure, waiting for one until ctx
// ends (nil then).
func (f *engineFence) currentTenure(ctx context.Context) context.Context {
	for {
		f.mu.Lock()
		held, changed := f.tenure.Load(), f.tenureChanged
		f.mu.Unlock()
		if held != nil && (*held).Err() == nil {
			return *held
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// do runs run while this replica's heartbeat is held and its run holds the
// cluster's claim: it waits for both (until ctx ends), runs run with a
// context that also ends when the heartbeat's tenure does, and gives the
// claim back once run has returned.
func (f *engineFence) do(ctx context.Context, cluster string, run func(context.Context) error) error {
	id := f.incarnation() + "/" + strconv.FormatUint(f.runs.Add(1), 10)
	name := engineLeaseName(cluster)
	log := logging.WithValues(ctrl.LoggerFrom(ctx), "lease", name, "holder", id)
	f.mu.Lock()
	f.active[id] = true
	f.mu.Unlock()
	// The claim is given back however do ends, once it has been tried: a
	// claim written just as ctx ended (its answer lost) is this run's too.
	// release does nothing when id does not hold it.
	tried := false
	defer func() {
		if tried {
			f.releaseOrRetry(ctx, name, id)
		}
		f.mu.Lock()
		delete(f.active, id)
		f.mu.Unlock()
	}()
	var tenure context.Context
	log.V(2).Info("Waiting for the cluster's engine Lease")
	for {
		if tenure = f.currentTenure(ctx); tenure == nil {
			return nil
		}
		tried = true
		taken, err := f.claim(ctx, name, id)
		if err != nil && ctx.Err() == nil {
			log.V(2).Info("Unable to claim the cluster's engine Lease; trying again", "error", err.Error())
		}
		if taken {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait.Jitter(f.duration/6, 0.5)):
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(tenure, cancel)()
	err := run(runCtx)
	if tenure.Err() != nil && ctx.Err() == nil {
		return errors.Join(errFenceLost, err)
	}
	return err
}

// claim takes the cluster's engine Lease for id if it is free or stale:
// true once id holds it.
func (f *engineFence) claim(ctx context.Context, name, id string) (bool, error) {
	leases := f.leases.Leases(f.namespace)
	now := metav1.NowMicro()
	// A Lease read is as old as the moment the read began: a slow answer
	// must not stretch this replica's view of how long it went unrenewed.
	readAt := f.now()
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name}}
		f.fill(lease, id, now)
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" && *h != id {
		stale, err := f.stale(ctx, lease, readAt)
		if err != nil || !stale {
			return false, err
		}
		ctrl.LoggerFrom(ctx).Info("Taking over the cluster's engine Lease from a holder that cannot be running", "lease", name, "previous", *h)
	}
	f.fill(lease, id, now)
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return false, nil // someone else wrote it first: read it again
	}
	if err == nil {
		f.forget(name)
	}
	return err == nil, err
}

// fill makes lease id's claim, taken at now.
func (f *engineFence) fill(lease *coordinationv1.Lease, id string, now metav1.MicroTime) {
	seconds := int32(f.duration / time.Second)
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != id {
		lease.Spec.AcquireTime = &now
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	lease.Spec.HolderIdentity = &id
	lease.Spec.LeaseDurationSeconds = &seconds
	lease.Spec.RenewTime = &now
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[claimAnnotation] = claimAnnotationValue
}

// stale reports whether a claim held by another run may be taken, as read
// at readAt: the run is this process's and has ended; or its process's
// heartbeat is held by another run of the process, or has expired; or the
// heartbeat is gone and the claim itself has not been renewed for a
// duration. A Lease this fence did not write (an engine of the version
// before renewed it) is free only once it has not been renewed for a
// duration.
func (f *engineFence) stale(ctx context.Context, claim *coordinationv1.Lease, readAt time.Time) (bool, error) {
	holder := *claim.Spec.HolderIdentity
	replica, nonce, ok := parseHolder(holder)
	if !ok || claim.Annotations[claimAnnotation] != claimAnnotationValue {
		return f.expired(claim, readAt), nil
	}
	if replica == f.replica && nonce == f.nonce {
		f.mu.Lock()
		defer f.mu.Unlock()
		return !f.active[holder], nil
	}
	heartbeatAt := f.now()
	heartbeat, err := f.leases.Leases(f.namespace).Get(ctx, replicaLeaseName(replica), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return f.expired(claim, readAt), nil
	case err != nil:
		return false, err
	}
	if h := heartbeat.Spec.HolderIdentity; h == nil || *h != replica+"/"+nonce {
		// Another run of the process holds it (which it acquires only
		// once this one's has expired), or it was given back (once every
		// engine of the process had stopped).
		return true, nil
	}
	return f.expired(heartbeat, heartbeatAt), nil
}

// expired reports whether this replica has read lease with the same holder
// and renewal time for a whole duration (its own, or the fence's when it
// says none), the reading being the one begun at readAt.
func (f *engineFence) expired(lease *coordinationv1.Lease, readAt time.Time) bool {
	o := observation{holder: ptr.Deref(lease.Spec.HolderIdentity, "")}
	if r := lease.Spec.RenewTime; r != nil {
		o.renew = r.Time
	}
	d := f.duration
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		d = max(d, time.Duration(*s)*time.Second)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	prev, ok := f.seen[lease.Name]
	if !ok || prev.holder != o.holder || !prev.renew.Equal(o.renew) {
		o.since = readAt
		f.seen[lease.Name] = o
		return false
	}
	return readAt.Sub(prev.since) >= d
}

// forget drops what this replica read of a Lease.
func (f *engineFence) forget(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.seen, name)
}

// parseHolder splits a claim's holder, <replica>/<nonce>/<run>.
func parseHolder(holder string) (replica, nonce string, ok bool) {
	parts := strings.Split(holder, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// releaseOrRetry gives the claim back; if that fails, it tries again in
// the background, with backoff, until it succeeds, id no longer holds the
// claim, or the heartbeat has ended (which frees every claim of the
// process): while this replica's heartbeat lives, nobody else would take a
// claim it failed to give back.
func (f *engineFence) releaseOrRetry(ctx context.Context, name, id string) {
	err := f.release(f.leases, name, id)
	if err == nil {
		return
	}
	log := logging.WithValues(ctrl.LoggerFrom(ctx), "lease", name, "holder", id)
	log.Info("Unable to give the cluster's engine Lease back; trying again", "error", err.Error())
	go func() {
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: math.MaxInt32, Cap: f.duration}
		for {
			select {
			case <-f.stopped:
				return
			case <-time.After(backoff.Step()):
			}
			if err := f.release(f.leases, name, id); err == nil {
				log.Info("Gave the cluster's engine Lease back")
				return
			}
		}
	}()
}

// release gives a claim (or the heartbeat) back if id still holds it, so
// that the next replica need not wait; nil when id does not hold it.
func (f *engineFence) release(leases coordinationv1client.LeasesGetter, name, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), f.duration/2)
	defer cancel()
	lease, err := leases.Leases(f.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != id {
		return nil
	}
	now := metav1.NowMicro()
	lease.Spec.HolderIdentity = nil
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
	lease.Spec.RenewTime = &now
	_, err = leases.Leases(f.namespace).Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// replicaLeaseName is the name of a replica's heartbeat Lease.
func replicaLeaseName(replica string) string {
	return leaseName(replicaLeasePrefix, replica)
}

// engineLeaseName is <engineLeasePrefix>-<cluster>, the name of the Lease
// that fences a cluster's engine.
func engineLeaseName(cluster string) string {
	return leaseName(engineLeasePrefix, cluster)
}

// leaseName is <prefix>-<name>; when that is longer than a name may be, the
// name is cut short and a hash of the whole name appended, so that every
// cluster, whatever the length of its Secret's name, and every replica has
// a Lease of its own.
func leaseName(prefix, name string) string {
	whole := name
	name = prefix + "-" + name
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(whole))
	suffix := hex.EncodeToString(sum[:8])
	keep := validation.DNS1123SubdomainMaxLength - len(prefix) - len(suffix) - 2
	// A label of a subdomain ends with a letter or a digit.
	head := strings.TrimRight(whole[:keep], "-.")
	return prefix + "-" + head + "-" + suffix
}
