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

package explain_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/test/framework"
)

// At most limits.InFlight requests are served at once: with that many held
// in flight (by the manager's Admitted hook), one more is answered 429;
// once they are let go, they are answered, and so is the next.
func TestExplainServesABoundedNumberOfRequestsAtOnce(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	who := reader(t, ns)
	path := explain.Path + "?" + queryFor(cp.Create(t, framework.ConfigMaps, ns, "object"))

	admitted, release := held.arm(t)
	codes := make(chan string, limits.InFlight)
	for range limits.InFlight {
		go func() {
			code, body, err := manager.Get(path, who.Token)
			codes <- fmt.Sprintf("%d %v %.200s", code, err, body)
		}()
	}
	for i := range limits.InFlight {
		select {
		case <-admitted:
		case <-time.After(framework.CascadeTimeout):
			t.Fatalf("%d of %d requests were admitted within %s", i, limits.InFlight, framework.CascadeTimeout)
		}
	}
	code, body, err := manager.Get(path, who.Token)
	if err != nil || code != http.StatusTooManyRequests {
		t.Errorf("a request beyond the %d in flight: %d %v %s, want 429", limits.InFlight, code, err, body)
	}
	release()
	for range limits.InFlight {
		select {
		case got := <-codes:
			if !strings.HasPrefix(got, "200 <nil>") {
				t.Errorf("a request held in flight, once let go: %s, want 200", got)
			}
		case <-time.After(framework.CascadeTimeout):
			t.Fatalf("the requests let go were not answered within %s", framework.CascadeTimeout)
		}
	}
	if code, body, err := manager.Get(path, who.Token); err != nil || code != http.StatusOK {
		t.Errorf("a request once the places are free: %d %v %s, want 200", code, err, body)
	}
}

// One request reads at most limits.Reads objects live, its own included:
// the owners beyond are reported not checked, and the decision does not
// say that the object will be deleted. The owners are Secrets, ignored for
// the test, so never observed: each is read live.
func TestExplainReadsABoundedNumberOfOwners(t *testing.T) {
	var before []ownergcv1alpha1.GroupResource
	framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) {
		before = s.IgnoredResources
		s.IgnoredResources = append(slices.Clone(before), ownergcv1alpha1.GroupResource{Resource: "secrets"})
	})
	t.Cleanup(func() {
		framework.SetPolicy(t, cp.Client, func(s *ownergcv1alpha1.GCPolicySpec) { s.IgnoredResources = before })
	})
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if manager.Engine.KindState(framework.Secrets.GroupKind()).Watched {
			return errors.New("Secrets are still watched")
		}
		return nil
	}, "ownergc should stop watching the Secrets it ignores")

	ns := framework.CreateNamespace(t, cp.Client)
	who := reader(t, ns)
	owners := limits.Reads + 1 // and the object: within limits.Reviews
	var refs []metav1.OwnerReference
	for i := range owners {
		refs = append(refs, cp.Create(t, framework.Secrets, ns, fmt.Sprint("owner-", i)).Ref(false))
	}
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(refs...))
	manager.WaitObserved(t, dep)

	ex := mustExplain(t, who, dep)
	read, unchecked := 0, 0
	for _, o := range ex.Owners {
		switch o.Status {
		case explain.OwnerSolid:
			read++
		case explain.OwnerNotChecked:
			unchecked++
		}
	}
	wantRead := limits.Reads - 1 // the object's own read comes first
	if read != wantRead || unchecked != owners-wantRead || ex.NotChecked == nil || ex.NotChecked.Owners != unchecked || ex.NotChecked.Message == "" {
		t.Fatalf("owners %+v: %d read, %d not checked (%+v); want %d read and %d reported not checked", ex.Owners, read, unchecked, ex.NotChecked, wantRead, owners-wantRead)
	}
	if !strings.HasPrefix(ex.Decision, "kept: owner Secret owner-0") {
		t.Fatalf("decision %q: want it kept by the owners it read", ex.Decision)
	}
}

// One request reviews the caller's access to at most limits.Reviews
// objects, its own included: the dependents beyond are counted as hidden,
// and reported not reviewed.
func TestExplainReviewsABoundedNumberOfRelatedObjects(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	who := reader(t, ns)
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	deps := cp.CreateMany(t, framework.ConfigMaps, ns, "dependent", limits.Reviews+2, framework.OwnedBy(owner.Ref(false)))
	for _, d := range deps {
		manager.WaitLinked(t, owner, d, false)
	}

	ex := mustExplain(t, who, owner)
	reviewed := limits.Reviews - 1 // the object's own review comes first
	if len(ex.Dependents) != reviewed || ex.HiddenDependents != len(deps)-reviewed || ex.NotChecked == nil || ex.NotChecked.Access != len(deps)-reviewed {
		t.Fatalf("dependents named %d, hidden %d, not checked %+v; want %d named and %d hidden as not reviewed", len(ex.Dependents), ex.HiddenDependents, ex.NotChecked, reviewed, len(deps)-reviewed)
	}
}
