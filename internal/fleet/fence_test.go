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
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// When another replica's claim on a cluster may be taken, step by step
// through claim(): the Leases as the steps leave them in a fake clientset,
// this replica's clock advanced between reads (the takeover's precondition
// is the API server's, tested against it in test/integration/fleet).
func TestAClaimIsTakenOnlyWhenItsHolderCannotBeRunning(t *testing.T) {
	const ns, duration = "fleet", 20 * time.Second
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	lease := func(name, holder string, renewed time.Duration, ours bool) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](20), RenewTime: &metav1.MicroTime{Time: t0.Add(renewed)}}}
		if holder != "" {
			l.Spec.HolderIdentity = &holder
		}
		if ours {
			l.Annotations = map[string]string{claimAnnotation: claimAnnotationValue}
		}
		return l
	}
	const claimName, heartbeatName = "ownergc-engine-a", "ownergc-replica-ownergc-1"
	claim := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return lease(claimName, holder, renewed, true)
	}
	oldClaim := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return lease(claimName, holder, renewed, false)
	}
	heartbeat := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return lease(heartbeatName, holder, renewed, false)
	}
	type step struct {
		at     time.Duration // this replica's clock
		leases []*coordinationv1.Lease
		taken  bool
	}
	held := "ownergc-1/n1/4"
	for name, steps := range map[string][]step{
		"a free claim": {
			{0, []*coordinationv1.Lease{claim("", 0)}, true},
		},
		"no claim yet": {
			{0, nil, true},
		},
		"the holder's heartbeat is renewed": {
			{0, []*coordinationv1.Lease{claim(held, 0), heartbeat("ownergc-1/n1", 0)}, false},
			{15 * time.Second, []*coordinationv1.Lease{heartbeat("ownergc-1/n1", 10*time.Second)}, false},
			{40 * time.Second, []*coordinationv1.Lease{heartbeat("ownergc-1/n1", 30*time.Second)}, false},
		},
		"the holder's heartbeat stops being renewed": {
			{0, []*coordinationv1.Lease{claim(held, 0), heartbeat("ownergc-1/n1", 0)}, false},
			{10 * time.Second, nil, false},
			{19 * time.Second, nil, false},
			{20 * time.Second, nil, true},
		},
		// Read once: this replica has not watched it for a duration,
		// however old its renewTime (the clocks of two machines differ).
		"an old heartbeat read for the first time": {
			{0, []*coordinationv1.Lease{claim(held, -time.Hour), heartbeat("ownergc-1/n1", -time.Hour)}, false},
		},
		"the holder's process ran again (its heartbeat is another run's)": {
			{0, []*coordinationv1.Lease{claim(held, 0), heartbeat("ownergc-1/n2", 0)}, true},
		},
		"the holder gave its heartbeat back": {
			{0, []*coordinationv1.Lease{claim(held, 0), heartbeat("", 0)}, true},
		},
		"no heartbeat, the claim not renewed": {
			{0, []*coordinationv1.Lease{claim(held, 0)}, false},
			{10 * time.Second, nil, false},
			{20 * time.Second, nil, true},
		},
		"a claim of the version before, renewed, its replica's name held by a new run": {
			{0, []*coordinationv1.Lease{oldClaim(held, 0), heartbeat("ownergc-1/n2", 0)}, false},
			{15 * time.Second, []*coordinationv1.Lease{oldClaim(held, 13*time.Second)}, false},
			{30 * time.Second, []*coordinationv1.Lease{oldClaim(held, 26*time.Second)}, false},
		},
		"a claim of the version before, no longer renewed": {
			{0, []*coordinationv1.Lease{oldClaim(held, 0)}, false},
			{15 * time.Second, nil, false},
			{21 * time.Second, nil, true},
		},
		"a holder this fence did not write, renewed": {
			{0, []*coordinationv1.Lease{oldClaim("someone", 0)}, false},
			{25 * time.Second, []*coordinationv1.Lease{oldClaim("someone", 20*time.Second)}, false},
		},
		"a holder this fence did not write, not renewed": {
			{0, []*coordinationv1.Lease{oldClaim("someone", 0)}, false},
			{21 * time.Second, nil, true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			clock := t0
			f := newEngineFence(cs.CoordinationV1(), cs.CoordinationV1(), ns, "ownergc-0", duration)
			f.now = func() time.Time { return clock }
			id := f.incarnation() + "/1"
			for i, s := range steps {
				clock = t0.Add(s.at)
				for _, l := range s.leases {
					put(t, cs, l)
				}
				taken, err := f.claim(context.Background(), claimName, id)
				if err != nil {
					t.Fatal(err)
				}
				if taken != s.taken {
					t.Fatalf("step %d, at %s: taken: %v, want %v", i, s.at, taken, s.taken)
				}
				if taken {
					got, _ := cs.CoordinationV1().Leases(ns).Get(context.Background(), claimName, metav1.GetOptions{})
					if h := ptr.Deref(got.Spec.HolderIdentity, ""); h != id || got.Annotations[claimAnnotation] != claimAnnotationValue {
						t.Errorf("the claim is held by %q with annotations %v, want %q and the fence's mark", h, got.Annotations, id)
					}
				}
			}
		})
	}
}

// put creates or replaces a Lease in the fake clientset.
func put(t *testing.T, cs *fake.Clientset, l *coordinationv1.Lease) {
	t.Helper()
	leases := cs.CoordinationV1().Leases(l.Namespace)
	if _, err := leases.Create(context.Background(), l.DeepCopy(), metav1.CreateOptions{}); err == nil {
		return
	}
	if _, err := leases.Update(context.Background(), l.DeepCopy(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// This replica's own claims: a run that still goes is waited for, one that
// has ended (its release failed) is taken over.
func TestThisReplicasOwnClaimIsTakenOnceItsRunHasEnded(t *testing.T) {
	cs := fake.NewClientset()
	f := newEngineFence(cs.CoordinationV1(), cs.CoordinationV1(), "fleet", "ownergc-0", 20*time.Second)
	old := f.incarnation() + "/1"
	f.active[old] = true
	put(t, cs, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "ownergc-engine-a",
		Annotations: map[string]string{claimAnnotation: claimAnnotationValue}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &old}})
	if taken, _ := f.claim(context.Background(), "ownergc-engine-a", f.incarnation()+"/2"); taken {
		t.Error("the claim of a run that still goes was taken")
	}
	delete(f.active, old)
	if taken, _ := f.claim(context.Background(), "ownergc-engine-a", f.incarnation()+"/2"); !taken {
		t.Error("the claim of a run that has ended was not taken")
	}
}

// A claim written as the engagement ends, its answer lost, is given back
// all the same; a release that fails is tried again until it succeeds.
func TestAClaimIsGivenBackHoweverItsRunEnds(t *testing.T) {
	for name, tc := range map[string]struct {
		// createLost: the claim's create is applied but its answer lost,
		// the engagement ending meanwhile; releaseFails: the first release
		// fails.
		createLost, releaseFails bool
	}{
		"the answer to the claim's create lost": {createLost: true},
		"the first release fails":               {releaseFails: true},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			f := newEngineFence(cs.CoordinationV1(), cs.CoordinationV1(), "fleet", "ownergc-0", 20*time.Second)
			defer close(f.stopped)
			tenure, endTenure := context.WithCancel(context.Background())
			defer endTenure()
			f.setTenure(&tenure)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.createLost {
				cs.PrependReactor("create", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
					obj := action.(k8stesting.CreateAction).GetObject()
					if err := cs.Tracker().Create(coordinationv1.SchemeGroupVersion.WithResource("leases"), obj, "fleet"); err != nil {
						return true, nil, err
					}
					cancel()
					return true, nil, context.Canceled
				})
			}
			var failed atomic.Bool
			if tc.releaseFails {
				cs.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
					l := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
					if l.Spec.HolderIdentity == nil && !failed.Swap(true) {
						return true, nil, errors.New("the host does not answer")
					}
					return false, nil, nil
				})
			}
			ran := false
			if err := f.do(ctx, "a", func(context.Context) error { ran = true; return nil }); err != nil {
				t.Fatal(err)
			}
			if tc.createLost && ran {
				t.Error("the engine ran though its engagement had ended")
			}
			var last error
			if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				l, err := cs.CoordinationV1().Leases("fleet").Get(ctx, "ownergc-engine-a", metav1.GetOptions{})
				switch {
				case err != nil:
					last = err
				case l.Spec.HolderIdentity != nil:
					last = fmt.Errorf("the claim is still held by %s", *l.Spec.HolderIdentity)
				default:
					return true, nil
				}
				return false, nil
			}); err != nil {
				t.Fatalf("the claim was not given back within 10 s: %v", last)
			}
			if tc.releaseFails && !failed.Load() {
				t.Error("the release never failed: the test tested nothing")
			}
		})
	}
}

// A replica's heartbeat, like a cluster's claim, has a Lease of its own
// however long its name.
func TestLeaseNamesAreValidAndDistinctWhateverTheLengthOfTheName(t *testing.T) {
	longest := strings.Repeat("a", 253)
	other := longest[:252] + "b"
	for _, prefix := range []string{replicaLeasePrefix, engineLeasePrefix} {
		a, b := leaseName(prefix, longest), leaseName(prefix, other)
		if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
			t.Errorf("%q is not a valid name: %v", a, errs)
		}
		if a == b {
			t.Errorf("two names make the same Lease name %q", a)
		}
		if short := leaseName(prefix, "ownergc-0"); short != prefix+"-ownergc-0" {
			t.Errorf("a short name is not kept whole: %q", short)
		}
	}
}
