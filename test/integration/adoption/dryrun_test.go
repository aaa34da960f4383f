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

package adoption_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/metrics"
	"github.com/ownergc/ownergc/test/framework"
)

// workload is a mix of cascades for a collector to carry out.
type workload struct {
	// collected must end up deleted; orphaned must stay without owners;
	// kept must stay with exactly the owners in keptOwners.
	collected, orphaned, kept []framework.Object
	keptOwners                []types.UID
}

// startWorkload creates a mix of cascades in ns and deletes their owners:
// in the background, in the foreground, with the orphan policy; a dependent
// that keeps one live owner of two; one whose owner never existed.
func startWorkload(t *testing.T, ns string) workload {
	t.Helper()
	var w workload
	bg := cp.Create(t, framework.ConfigMaps, ns, "bg-owner")
	w.collected = append(w.collected, cp.CreateMany(t, framework.ConfigMaps, ns, "bg-dep", 5, framework.OwnedBy(bg.Ref(false)))...)
	fg := cp.Create(t, framework.ConfigMaps, ns, "fg-owner")
	w.collected = append(w.collected, cp.CreateMany(t, framework.ConfigMaps, ns, "fg-dep", 3, framework.OwnedBy(fg.Ref(true)))...)
	w.collected = append(w.collected, fg)
	or := cp.Create(t, framework.ConfigMaps, ns, "orphan-owner")
	w.orphaned = cp.CreateMany(t, framework.ConfigMaps, ns, "orphan-dep", 3, framework.OwnedBy(or.Ref(false)))
	w.collected = append(w.collected, or)
	alive, gone := cp.Create(t, framework.ConfigMaps, ns, "alive-owner"), cp.Create(t, framework.ConfigMaps, ns, "gone-owner")
	w.kept = []framework.Object{cp.Create(t, framework.ConfigMaps, ns, "two-owners", framework.OwnedBy(alive.Ref(false), gone.Ref(false)))}
	w.keptOwners = []types.UID{alive.UID}
	absent := framework.Object{Kind: framework.ConfigMaps, Namespace: ns, Name: "never-existed", UID: uuid.NewUUID()}
	w.collected = append(w.collected, cp.Create(t, framework.ConfigMaps, ns, "dep-of-absent", framework.OwnedBy(absent.Ref(false))))

	cp.DeleteWith(t, bg, metav1.DeletePropagationBackground)
	cp.DeleteWith(t, fg, metav1.DeletePropagationForeground)
	cp.DeleteWith(t, or, metav1.DeletePropagationOrphan)
	cp.DeleteWith(t, gone, metav1.DeletePropagationBackground)
	return w
}

// waitDone waits until the workload's cascades are done, by whoever.
func (w workload) waitDone(t *testing.T, why string) {
	t.Helper()
	cp.WaitGone(t, why, w.collected...)
	for _, o := range w.orphaned {
		cp.WaitOwners(t, o, why)
	}
	for _, o := range w.kept {
		cp.WaitOwners(t, o, why, w.keptOwners...)
	}
}

// shadowOf reads the GCPolicy's shadow status.
func shadowOf(t *testing.T) *ownergcv1alpha1.ShadowStatus {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{}
	if err := cp.Client.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
		t.Fatal(err)
	}
	return p.Status.Shadow
}

// writesBesidesStatusAndEvents returns the writes user made to anything
// but events and the GCPolicy.
func writesBesidesStatusAndEvents(t *testing.T, user string) []framework.AuditEntry {
	t.Helper()
	writes, err := cp.Writes(user)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(writes, func(e framework.AuditEntry) bool {
		return e.ObjectRef.Resource == "events" || e.ObjectRef.Resource == "gcpolicies"
	})
}

func setMode(t *testing.T, mode ownergcv1alpha1.Mode, grace time.Duration) {
	t.Helper()
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		s.Mode = mode
		s.Diagnostics.ShadowGracePeriod = &metav1.Duration{Duration: grace}
	})
}

// ownergc in DryRun beside kube-controller-manager's collector, on a mixed
// workload: kube-controller-manager does the work, ownergc agrees with every
// decision, and writes nothing but its status and events.
func TestDryRunBesideKubeControllerManagerAgreesAndWritesNothing(t *testing.T) {
	const user = "ownergc-dry-run"
	m := cp.StartManager(t, framework.ManagerOptions{User: user})
	const grace = 10 * time.Second
	setMode(t, ownergcv1alpha1.ModeDryRun, grace)
	t.Cleanup(func() { setMode(t, ownergcv1alpha1.ModeEnforce, 2*time.Minute) })
	cp.StartKubeControllerManager(t, "garbagecollector")

	ns := framework.CreateNamespace(t, cp.Client)
	w := startWorkload(t, ns)
	w.waitDone(t, "kube-controller-manager's collector carries the cascades out")
	// No disagreement appears while ownergc's decisions reach their grace
	// period.
	framework.Consistently(t, grace+2*time.Second, func() error {
		if st := m.Engine.Status().Shadow; st.Disagreed != 0 {
			return fmt.Errorf("ownergc disagreed with kube-controller-manager %d times, last: %+v", st.Disagreed, st.LastDisagreement)
		}
		return nil
	}, "ownergc should agree with kube-controller-manager")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		st := m.Engine.Status().Shadow
		if !st.Active || st.Agreed < len(w.collected)-1 {
			return fmt.Errorf("shadow %+v: want at least %d agreements", st, len(w.collected)-1)
		}
		return nil
	}, "ownergc should have compared its decisions")
	st := m.Engine.Status().Shadow
	if st.Disagreed != 0 {
		t.Fatalf("ownergc disagreed with kube-controller-manager %d times, last: %+v", st.Disagreed, st.LastDisagreement)
	}
	t.Logf("shadow: %d agreed, %d disagreed", st.Agreed, st.Disagreed)
	if writes := writesBesidesStatusAndEvents(t, user); len(writes) > 0 {
		t.Fatalf("ownergc wrote in DryRun: %v", writes)
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if s := shadowOf(t); s == nil || s.Agreement != "100%" || s.Disagreed != 0 {
			return fmt.Errorf("status.shadow %+v", s)
		}
		return nil
	}, "the GCPolicy status should report 100%% agreement")
}

// ownergc in DryRun with no other collector: it reports what it would
// delete and deletes nothing; those decisions become disagreements after
// the grace period; switched to Enforce it collects them, and back to
// DryRun it stops writing again.
func TestDryRunAloneReportsThenEnforceCollects(t *testing.T) {
	const user = "ownergc-alone"
	cp.StartManager(t, framework.ManagerOptions{User: user})
	setMode(t, ownergcv1alpha1.ModeDryRun, 2*time.Second)
	t.Cleanup(func() { setMode(t, ownergcv1alpha1.ModeEnforce, 2*time.Minute) })
	before := testutil.ToFloat64(metrics.DryRunDecisions.WithLabelValues("delete"))

	ns := framework.CreateNamespace(t, cp.Client)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	deps := cp.CreateMany(t, framework.ConfigMaps, ns, "dep", 4, framework.OwnedBy(owner.Ref(false)))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if d := testutil.ToFloat64(metrics.DryRunDecisions.WithLabelValues("delete")) - before; d < float64(len(deps)) {
			return fmt.Errorf("%v delete decisions so far", d)
		}
		return nil
	}, "ownergc should decide to delete every dependent")
	cp.Survive(t, "ownergc runs in DryRun and nobody else collects", deps...)
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		s := shadowOf(t)
		if s == nil || s.Disagreed < int64(len(deps)) || s.LastDisagreement == nil || !strings.HasPrefix(s.LastDisagreement.Name, "dep-") {
			return fmt.Errorf("status.shadow %+v", s)
		}
		return nil
	}, "decisions nobody carried out should become disagreements after the grace period")
	cp.WaitEvent(t, ns, deps[0].UID, "", "ShadowDisagreement", framework.CascadeTimeout)
	if writes := writesBesidesStatusAndEvents(t, user); len(writes) > 0 {
		t.Fatalf("ownergc wrote in DryRun: %v", writes)
	}

	setMode(t, ownergcv1alpha1.ModeEnforce, 2*time.Minute)
	cp.WaitGone(t, "switched to Enforce, ownergc collects what it decided", deps...)
	if s := shadowOf(t); s != nil {
		t.Errorf("status.shadow in Enforce: %+v, want none", s)
	}

	setMode(t, ownergcv1alpha1.ModeDryRun, time.Minute)
	owner2 := cp.Create(t, framework.ConfigMaps, ns, "owner-2")
	deps2 := cp.CreateMany(t, framework.ConfigMaps, ns, "dep-2", 3, framework.OwnedBy(owner2.Ref(false)))
	cp.DeleteWith(t, owner2, metav1.DeletePropagationBackground)
	cp.Survive(t, "back in DryRun, ownergc writes nothing", deps2...)
	setMode(t, ownergcv1alpha1.ModeEnforce, 2*time.Minute)
	cp.WaitGone(t, "in Enforce again, ownergc collects", deps2...)
}
