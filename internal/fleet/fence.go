package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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
	// runs makes each run's holder identity unique, so that a cluster
	// engaged again on this replica waits for its previous engine too.
	runs atomic.Uint64
}

// do runs run while this replica holds the cluster's engine Lease: it waits
// for the Lease (until ctx ends), runs run with a context that also ends
// when the Lease is lost, and releases the Lease once run has returned.
func (f *engineFence) do(ctx context.Context, cluster string, run func(context.Context) error) error {
	id := f.replica + "/" + strconv.FormatUint(f.runs.Add(1), 10)
	acquired := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: f.namespace, Name: engineLeasePrefix + "-" + cluster},
			Client:     f.leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   f.duration,
		RenewDeadline:   f.duration * 2 / 3,
		RetryPeriod:     f.duration / 6,
		ReleaseOnCancel: true,
		Name:            engineLeasePrefix + "-" + cluster,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(held context.Context) { acquired <- held },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("fencing the engine of cluster %s: %w", cluster, err)
	}
	// The elector's context outlives ctx: it is cancelled, releasing the
	// Lease, only after run has returned.
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		le.Run(electCtx)
	}()
	defer func() {
		stopElecting()
		<-elected
	}()
	log := ctrl.LoggerFrom(ctx)
	log.V(2).Info("Waiting for the cluster's engine Lease", "lease", engineLeasePrefix+"-"+cluster, "holder", id)
	var held context.Context
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
