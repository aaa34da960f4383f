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
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// When another replica's claim on a cluster may be taken: the decision
// alone, over Leases as read (the takeover itself, an update with the
// claim's resourceVersion, is the API server's and is tested against it in
// test/integration/fleet).
func TestAClaimIsTakenOnlyWhenItsHolderCannotBeRunning(t *testing.T) {
	const ns, duration = "fleet", 20 * time.Second
	lease := func(name, holder string, renewed time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](20), RenewTime: &metav1.MicroTime{Time: renewed}}}
		if holder != "" {
			l.Spec.HolderIdentity = &holder
		}
		return l
	}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	type read struct {
		after     time.Duration // on this replica's clock
		heartbeat *coordinationv1.Lease
		claim     *coordinationv1.Lease
		stale     bool
	}
	claim := lease("ownergc-engine-a", "ownergc-1/n1/4", t0)
	for name, reads := range map[string][]read{
		"the holder's heartbeat is renewed": {
			{0, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0), claim, false},
			{15 * time.Second, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0.Add(10*time.Second)), claim, false},
			{40 * time.Second, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0.Add(30*time.Second)), claim, false},
		},
		"the holder's heartbeat stops being renewed": {
			{0, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0), claim, false},
			{19 * time.Second, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0), claim, false},
			{20 * time.Second, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0), claim, true},
		},
		// Read only once: this replica has not watched it for a duration,
		// however old its renewTime (the clocks of two machines differ).
		"an old heartbeat read for the first time": {
			{0, lease("ownergc-replica-ownergc-1", "ownergc-1/n1", t0.Add(-time.Hour)), claim, false},
		},
		"the holder's process ran again (its heartbeat is another run's)": {
			{0, lease("ownergc-replica-ownergc-1", "ownergc-1/n2", t0), claim, true},
		},
		"the holder gave its heartbeat back": {
			{0, lease("ownergc-replica-ownergc-1", "", t0), claim, true},
		},
		"no heartbeat, the claim renewed (an engine of the version before)": {
			{0, nil, lease("ownergc-engine-a", "ownergc-1/n1/4", t0), false},
			{15 * time.Second, nil, lease("ownergc-engine-a", "ownergc-1/n1/4", t0.Add(13*time.Second)), false},
			{30 * time.Second, nil, lease("ownergc-engine-a", "ownergc-1/n1/4", t0.Add(26*time.Second)), false},
		},
		"no heartbeat, the claim not renewed": {
			{0, nil, claim, false},
			{20 * time.Second, nil, claim, true},
		},
		"a holder this fence did not write, renewed": {
			{0, nil, lease("ownergc-engine-a", "someone", t0), false},
			{25 * time.Second, nil, lease("ownergc-engine-a", "someone", t0.Add(20*time.Second)), false},
		},
		"a holder this fence did not write, not renewed": {
			{0, nil, lease("ownergc-engine-a", "someone", t0), false},
			{21 * time.Second, nil, lease("ownergc-engine-a", "someone", t0), true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			clock := t0
			f := newEngineFence(nil, ns, "ownergc-0", duration)
			f.now = func() time.Time { return clock }
			for i, r := range reads {
				clock = t0.Add(r.after)
				cs := fake.NewClientset()
				if r.heartbeat != nil {
					cs = fake.NewClientset(r.heartbeat)
				}
				f.leases = cs.CoordinationV1()
				got, err := f.stale(context.Background(), r.claim)
				if err != nil {
					t.Fatal(err)
				}
				if got != r.stale {
					t.Errorf("read %d, after %s: taken: %v, want %v", i, r.after, got, r.stale)
				}
			}
		})
	}
}

// This replica's own claims: a run that still goes is waited for, one that
// has ended (its release failed) is taken over.
func TestThisReplicasOwnClaimIsTakenOnceItsRunHasEnded(t *testing.T) {
	f := newEngineFence(fake.NewClientset().CoordinationV1(), "fleet", "ownergc-0", 20*time.Second)
	id := f.incarnation() + "/1"
	f.active[id] = true
	claim := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ownergc-engine-a"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &id}}
	if stale, _ := f.stale(context.Background(), claim); stale {
		t.Error("the claim of a run that still goes was taken")
	}
	delete(f.active, id)
	if stale, _ := f.stale(context.Background(), claim); !stale {
		t.Error("the claim of a run that has ended was not taken")
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
