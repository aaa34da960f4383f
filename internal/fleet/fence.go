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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// engineLeasePrefix names the Leases that fence the engines.
const engineLeasePrefix = "ownergc-engine"

// errFenceLost: the engine stopped because its replica no longer holds the
// cluster's engine Lease.
var errFenceLost = errors.New("lost the cluster's engine Lease")

// engineFence makes each cluster's engine run on one replica at a time.
// multicluster-runtime's sharded coordinator hands a cluster to another
// replica by cancelling the engagement and releasing its per-cluster Lease
// at once, without waiting for the engine to stop: the next replica could
// start its engine while the previous one still finishes its work. So each
// engine also holds a Lease of its own, <engineLeasePrefix>-<cluster> on the
// host, taken before the engine is built and given back only once it has
// stopped; when its replica dies, the Lease expires after its duration.
type engineFence struct {
	leases    coordinationv1client.LeasesGetter
	namespace string
	replica   string
	duration  time.Duration
	// nonce and runs make each run's holder identity unique: a cluster
	// engaged again on this replica waits for its previous engine too, and
	// a restarted replica of the same name for its predecessor's.
	nonce string
	runs  atomic.Uint64
}

func newEngineFence(leases coordinationv1client.LeasesGetter, namespace, replica string, duration time.Duration) *engineFence {
	return &engineFence{leases: leases, namespace: namespace, replica: replica, duration: duration,
		nonce: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// do runs run while this replica holds the cluster's engine Lease: it waits
// for the Lease (until ctx ends), runs run with a context that also ends
// as soon as a renewal fails, and releases the Lease once run has returned.
// (Not the elector's ReleaseOnCancel: after a failed renewal it would give
// the Lease back before the engine has been told to stop.) An engine whose
// renewals fail has what is left of the Lease's duration to stop before
// another replica may take it, as with any leader election.
func (f *engineFence) do(ctx context.Context, cluster string, run func(context.Context) error) error {
	id := f.replica + "/" + f.nonce + "/" + strconv.FormatUint(f.runs.Add(1), 10)
	name := engineLeaseName(cluster)
	acquired := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: f.namespace, Name: name},
			Client:     f.leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration: f.duration,
		RenewDeadline: f.duration * 2 / 3,
		RetryPeriod:   f.duration / 6,
		Name:          name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(held context.Context) { acquired <- held },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("fencing the engine of cluster %s: %w", cluster, err)
	}
	// The elector's context outlives ctx: it is cancelled only after run
	// has returned, and the Lease released after that.
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		le.Run(electCtx)
	}()
	log := ctrl.LoggerFrom(ctx)
	var held context.Context
	defer func() {
		stopElecting()
		<-elected
		if held == nil {
			select {
			case held = <-acquired: // taken just as ctx ended
			default:
				return // never held
			}
		}
		if err := f.release(name, id); err != nil {
			log.Info("Unable to release the cluster's engine Lease; it expires on its own", "lease", name, "error", err.Error())
		}
	}()
	log.V(2).Info("Waiting for the cluster's engine Lease", "lease", name, "holder", id)
	select {
	case <-ctx.Done():
		return nil
	case held = <-acquired:
	case <-elected:
		return fmt.Errorf("fencing the engine of cluster %s: the Lease election ended", cluster)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(held, cancel)()
	err = run(runCtx)
	if held.Err() != nil && ctx.Err() == nil {
		return errors.Join(errFenceLost, err)
	}
	return err
}

// release gives the Lease back if id still holds it, so that the next
// replica need not wait for it to expire.
func (f *engineFence) release(name, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), f.duration/2)
	defer cancel()
	lease, err := f.leases.Leases(f.namespace).Get(ctx, name, metav1.GetOptions{})
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
	_, err = f.leases.Leases(f.namespace).Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// engineLeaseName is <engineLeasePrefix>-<cluster>, the name of the Lease
// that fences a cluster's engine; when that is longer than a name may be, the
// cluster's name is cut short and a hash of the whole name appended, so that
// every cluster, whatever the length of its Secret's name, has a Lease of its
// own.
func engineLeaseName(cluster string) string {
	const prefix = engineLeasePrefix
	name := prefix + "-" + cluster
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(cluster))
	suffix := hex.EncodeToString(sum[:8])
	keep := validation.DNS1123SubdomainMaxLength - len(prefix) - len(suffix) - 2
	// A label of a subdomain ends with a letter or a digit.
	head := strings.TrimRight(cluster[:keep], "-.")
	return prefix + "-" + head + "-" + suffix
}
