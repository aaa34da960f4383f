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

package collector_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

// TestConcurrentMixedPolicyDeletions deletes 30 owners at once, a third with
// each propagation policy, and checks the exact set of objects left once the
// collector is quiescent.
//
// Shared dependents only pair owners whose outcome does not depend on the
// order the collector sees things in:
//   - a Background and a Foreground owner: no owner survives, the dependent
//     is collected;
//   - a deleted owner (any policy) and an owner that is never deleted: the
//     dependent keeps only the live owner;
//   - two Orphan owners: each removes its own reference before it
//     disappears, so the dependent is never dangling and survives ownerless.
//
// (Orphan+Background or Orphan+Foreground pairs are left out: whether the
// dependent survives depends on which deletion is processed first.)
func TestConcurrentMixedPolicyDeletions(t *testing.T) {
	const (
		owners          = 30
		depsPerOwner    = 10
		keepers         = 3
		parallelWriters = 16
		stressTimeout   = 90 * time.Second
	)
	policies := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}
	ns := framework.CreateNamespace(t, cp.Client)
	start := time.Now()

	// expected maps each surviving name to its expected owner names.
	expected := map[string][]string{}
	// links lists, per owner name, the dependents it must have in the graph
	// (and whether blocking) before the deletions start.
	type link struct {
		dep   string
		block bool
	}
	links := map[string][]link{}

	// Owners and keepers.
	created := map[string]*corev1.ConfigMap{}
	var mu sync.Mutex
	createAll := func(specs []cmSpec) {
		t.Helper()
		errs := make(chan error, len(specs))
		sem := make(chan struct{}, parallelWriters)
		var wg sync.WaitGroup
		for _, s := range specs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				var refs []metav1.OwnerReference
				for _, o := range s.owners {
					mu.Lock()
					owner := created[o.name]
					mu.Unlock()
					refs = append(refs, framework.OwnerRef(owner, framework.ConfigMapGVK, o.block))
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.name, OwnerReferences: refs}}
				if err := cp.Client.Create(framework.Context(t), cm); err != nil {
					errs <- fmt.Errorf("creating %s: %w", s.name, err)
					return
				}
				mu.Lock()
				created[s.name] = cm
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		if err := errors.Join(all...); err != nil {
			t.Fatal(err)
		}
	}

	var top []cmSpec
	ownerName := func(i int) string { return fmt.Sprintf("owner-%02d-%s", i, strings.ToLower(string(policies[i%3]))) }
	keeperName := func(k int) string { return fmt.Sprintf("keeper-%d", k) }
	for i := range owners {
		top = append(top, cmSpec{name: ownerName(i)})
	}
	for k := range keepers {
		top = append(top, cmSpec{name: keeperName(k)})
		expected[keeperName(k)] = nil
	}
	createAll(top)

	var deps []cmSpec
	addDep := func(name string, owners []ownerSpec, survivesWith []string, survives bool) {
		deps = append(deps, cmSpec{name: name, owners: owners})
		for _, o := range owners {
			links[o.name] = append(links[o.name], link{dep: name, block: o.block})
		}
		if survives {
			expected[name] = survivesWith
		}
	}
	for i := range owners {
		policy := policies[i%3]
		for j := range depsPerOwner {
			addDep(fmt.Sprintf("%s-dep-%d", ownerName(i), j), []ownerSpec{{ownerName(i), j%2 == 0}},
				nil, policy == metav1.DeletePropagationOrphan)
		}
	}
	var background, foreground, orphan []int
	for i := range owners {
		switch policies[i%3] {
		case metav1.DeletePropagationBackground:
			background = append(background, i)
		case metav1.DeletePropagationForeground:
			foreground = append(foreground, i)
		default:
			orphan = append(orphan, i)
		}
	}
	for k := range 10 {
		b, f := ownerName(background[k]), ownerName(foreground[k])
		addDep(fmt.Sprintf("shared-bf-%d", k), []ownerSpec{{b, k%2 == 0}, {f, true}}, nil, false)
		x, keeper := ownerName(k), keeperName(k%keepers)
		addDep(fmt.Sprintf("shared-keep-%d", k), []ownerSpec{{x, true}, {keeper, k%2 == 1}}, []string{keeper}, true)
		o1, o2 := ownerName(orphan[k]), ownerName(orphan[(k+1)%len(orphan)])
		addDep(fmt.Sprintf("shared-oo-%d", k), []ownerSpec{{o1, k%2 == 0}, {o2, true}}, nil, true)
	}
	createAll(deps)
	t.Logf("created %d objects in %s", len(created), time.Since(start).Round(time.Millisecond))

	// Deletions must start from a graph that knows every dependent: an
	// Orphan owner only orphans the dependents it knows of.
	framework.Eventually(t, stressTimeout, func() error {
		for owner, ls := range links {
			n := manager.Engine.Graph().Node(created[owner].UID)
			if n == nil {
				return fmt.Errorf("owner %s not in the graph", owner)
			}
			got := map[string]bool{}
			for _, d := range manager.Engine.Graph().Dependents(n, false) {
				got[d.Identity.Name] = d.Blocking
			}
			for _, l := range ls {
				if b, ok := got[l.dep]; !ok || b != l.block {
					return fmt.Errorf("owner %s: dependent %s not linked (blocking=%v) yet", owner, l.dep, l.block)
				}
			}
		}
		return nil
	}, "ownergc's graph should link every dependent to its owners")

	start = time.Now()
	var wg sync.WaitGroup
	errs := make([]error, owners)
	for i := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cp.Client.Delete(framework.Context(t), created[ownerName(i)], client.PropagationPolicy(policies[i%3]))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("deleting owners: %v", err)
	}

	uidToName := map[string]string{}
	for name, cm := range created {
		uidToName[string(cm.UID)] = name
	}
	check := func() error {
		var list corev1.ConfigMapList
		if err := cp.Client.List(framework.Context(t), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var problems []string
		seen := map[string]bool{}
		for _, cm := range list.Items {
			if cm.Name == "kube-root-ca.crt" {
				continue
			}
			seen[cm.Name] = true
			want, ok := expected[cm.Name]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s still exists (deleting=%v, owners %v)", cm.Name, cm.DeletionTimestamp != nil, ownerNames(&cm, uidToName)))
				continue
			}
			if cm.UID != created[cm.Name].UID {
				problems = append(problems, fmt.Sprintf("%s was replaced", cm.Name))
			}
			if cm.DeletionTimestamp != nil {
				problems = append(problems, fmt.Sprintf("%s is being deleted", cm.Name))
			}
			if got := ownerNames(&cm, uidToName); !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("%s has owners %v, want %v", cm.Name, got, want))
			}
		}
		for name := range expected {
			if !seen[name] {
				problems = append(problems, fmt.Sprintf("%s was deleted", name))
			}
		}
		if len(problems) == 0 {
			return nil
		}
		sort.Strings(problems)
		n := len(problems)
		if n > 10 {
			problems = append(problems[:10], "...")
		}
		return fmt.Errorf("%d problems: %s", n, strings.Join(problems, "; "))
	}
	framework.Eventually(t, stressTimeout, check, "the namespace should hold exactly the %d expected survivors", len(expected))
	t.Logf("collector quiescent %s after the deletions", time.Since(start).Round(time.Millisecond))
	framework.Consistently(t, framework.Quiet, check, "the expected survivors must stay as they are")
}

type ownerSpec struct {
	name  string
	block bool
}

type cmSpec struct {
	name   string
	owners []ownerSpec
}

// ownerNames returns the names of obj's owners, as known from uidToName.
func ownerNames(obj client.Object, uidToName map[string]string) []string {
	var out []string
	for _, r := range obj.GetOwnerReferences() {
		name, ok := uidToName[string(r.UID)]
		if !ok {
			name = "uid:" + string(r.UID)
		}
		out = append(out, name)
	}
	return out
}
