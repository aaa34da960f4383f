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

package install_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

const migrationSection = "Replace kube-controller-manager's collector"

// migrationSteps are the blocks of docs/operating.md's migration beside
// kube-controller-manager's collector.
type migrationSteps struct {
	// policy creates the CRD and the DryRun GCPolicy; file and kustomize
	// install the rest with kubectl, helm everything with Helm.
	policy, file, kustomize, helm docBlock
	// watch is step 2, switch step 3.
	watch, switchOver docBlock
}

// readMigrationSteps finds the blocks of the section, in the order the
// section gives them.
func readMigrationSteps(t *testing.T) migrationSteps {
	t.Helper()
	blocks := docBlocks(t, "docs/operating.md", migrationSection)
	var s migrationSteps
	want := []struct {
		into *docBlock
		what string
		is   func(string) bool
	}{
		{&s.policy, "the CRD and a GCPolicy with mode: DryRun", func(b string) bool {
			return strings.Contains(b, "kubectl apply -f config/crd/") && strings.Contains(b, "mode: DryRun")
		}},
		{&s.file, "kubectl apply -f dist/install.yaml", func(b string) bool { return strings.TrimSpace(b) == "kubectl apply -f dist/install.yaml" }},
		{&s.kustomize, "kubectl apply -k config/default", func(b string) bool { return strings.TrimSpace(b) == "kubectl apply -k config/default" }},
		{&s.helm, "helm install with gcPolicy.spec.mode=DryRun", func(b string) bool {
			return strings.HasPrefix(b, "helm install") && strings.Contains(b, "gcPolicy.spec.mode=DryRun")
		}},
		{&s.watch, "step 2, kubectl get gcpolicy", func(b string) bool { return strings.HasPrefix(b, "kubectl get gcpolicy") }},
		{&s.switchOver, "step 3, kube-controller-manager's collector off, then Enforce", func(b string) bool {
			return strings.HasPrefix(b, "kube-controller-manager --controllers=") && strings.Contains(b, `"mode":"Enforce"`)
		}},
	}
	if len(blocks) != len(want) {
		t.Fatalf("docs/operating.md, %q: %d code blocks, want %d (the tests follow them)", migrationSection, len(blocks), len(want))
	}
	for i, w := range want {
		if !w.is(blocks[i].text) {
			t.Fatalf("%s: want %s, found:\n%s", blocks[i].where, w.what, blocks[i].text)
		}
		*w.into = blocks[i]
	}
	return s
}

// readmeCheck is README's check after the install.
func readmeCheck(t *testing.T) docBlock {
	t.Helper()
	for _, b := range docBlocks(t, "README.md", "Install into a cluster") {
		if strings.Contains(b.text, "kubectl wait --for=create gcpolicy/default") {
			return b
		}
	}
	t.Fatal("README.md, \"Install into a cluster\": no block checks the installation with kubectl wait --for=create gcpolicy/default")
	return docBlock{}
}

// TestDryRunMigrationBesideKubeControllerManager follows docs/operating.md,
// "Replace kube-controller-manager's collector", as written, beside
// kube-controller-manager's garbage collector: step 1 with kubectl (the CRD
// and the DryRun policy, then dist/install.yaml) and with Helm, each on a
// control plane of its own whose audit log records every request, with the
// manager started as the installed ServiceAccount as soon as its Deployment
// is created (where its pod would start), while owners keep being deleted;
// then README's check, step 2 until ownergc has agreed with
// kube-controller-manager's collector, and step 3. Before the switch the
// manager must have written to no object of the cluster — its writes are
// events, its Lease, the GCPolicy's status and the reviews of its metrics
// endpoint — and never created the GCPolicy; after the switch it collects.
func TestDryRunMigrationBesideKubeControllerManager(t *testing.T) {
	steps := readMigrationSteps(t)
	t.Run("kubectl", func(t *testing.T) { followMigration(t, steps, steps.policy, steps.file) })
	t.Run("helm", func(t *testing.T) { followMigration(t, steps, steps.helm) })
}

// TestDryRunMigrationWithKustomizeAppliesWhatTheFileDoes checks the
// kustomize alternative of the migration's step 1 without a cluster: it
// applies, in the same order, exactly what the dist/install.yaml
// alternative applies, which TestDryRunMigrationBesideKubeControllerManager
// runs.
func TestDryRunMigrationWithKustomizeAppliesWhatTheFileDoes(t *testing.T) {
	steps := readMigrationSteps(t)
	file := &docRunner{t: t}
	file.run(steps.policy, steps.file)
	kustomize := &docRunner{t: t}
	kustomize.run(steps.policy, steps.kustomize)
	if len(file.applied) != len(kustomize.applied) {
		t.Fatalf("the file applies %d objects, kustomize %d", len(file.applied), len(kustomize.applied))
	}
	for i := range file.applied {
		f, k := file.applied[i].obj, kustomize.applied[i].obj
		if !reflect.DeepEqual(f.Object, k.Object) {
			t.Errorf("object %d: the file applies %s %s, kustomize %s %s, or they differ", i, f.GetKind(), f.GetName(), k.GetKind(), k.GetName())
		}
	}
}

// followMigration runs the migration on a fresh control plane, with install
// as step 1.
func followMigration(t *testing.T, steps migrationSteps, install ...docBlock) {
	cp, err := framework.StartBareControlPlaneRecordingRequests()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	c := &cluster{ControlPlane: cp, namespace: systemNamespace, serviceAccount: serviceAccount}
	kcm := cp.StartKubeControllerManager(t, "garbagecollector")

	// Owners are deleted all along: kube-controller-manager's collector
	// collects their dependents, and a manager that wrote would race it.
	ns := framework.CreateNamespace(t, c.Client)
	churn := startChurn(c.Client, ns)
	t.Cleanup(func() { _ = churn.stop() })

	var p *process
	r := &docRunner{t: t, c: c,
		deployed: func() {
			p = c.startManager(t, "dryrun", "--leader-elect", "--leader-election-namespace", systemNamespace)
		},
		kcmGarbageCollectorOff: kcm.Stop,
	}
	r.run(install...)
	if p == nil {
		t.Fatal("step 1 created no Deployment ownergc-controller-manager: the manager never started")
	}
	r.run(readmeCheck(t))
	p.waitReady(t)

	// Step 2: ownergc in DryRun agrees with kube-controller-manager's
	// collector.
	policy := &ownergcv1alpha1.GCPolicy{}
	framework.Eventually(t, 2*time.Minute, func() error {
		if err := c.Client.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, policy); err != nil {
			return err
		}
		if policy.Spec.Mode != ownergcv1alpha1.ModeDryRun {
			return fmt.Errorf("mode %q", policy.Spec.Mode)
		}
		if sh := policy.Status.Shadow; sh == nil || sh.Agreed < 20 {
			return fmt.Errorf("status.shadow %+v", sh)
		}
		return nil
	}, "ownergc in DryRun should agree with kube-controller-manager's collector on the dependents it collects")
	r.run(steps.watch)
	if err := churn.stop(); err != nil {
		t.Fatalf("deleting owners: %v", err)
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if n := c.CountDependents(t, framework.ConfigMaps, ns); n > 0 {
			return fmt.Errorf("%d dependents left", n)
		}
		return nil
	}, "kube-controller-manager's collector should collect the dependents of the %d deleted owners", churn.owners)
	if err := c.Client.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, policy); err != nil {
		t.Fatal(err)
	}
	if policy.Labels[ownergcv1alpha1.LabelManagedBy] == ownergcv1alpha1.ManagedByOwnergc {
		t.Errorf("the GCPolicy was created by the manager (labels %v): the documented one came too late", policy.Labels)
	}
	if sh := policy.Status.Shadow; sh == nil {
		t.Errorf("the GCPolicy in DryRun has no status.shadow")
	} else if sh.Disagreed > 0 {
		t.Errorf("ownergc disagreed with kube-controller-manager's collector %d times; the last: %+v", sh.Disagreed, sh.LastDisagreement)
	}
	before := c.requestsOf(t)
	if w := objectWrites(before); len(w) > 0 {
		t.Fatalf("in DryRun beside kube-controller-manager's collector, the manager wrote %d times:%s\nthe manager's start:\n%s",
			len(w), describeRequests(firstOf(w, 20)), startOfLog(p.Log()))
	}
	t.Logf("before the switch: %d requests of the manager, none a write to an object; %d owners deleted; shadow %+v",
		len(before), churn.owners, policy.Status.Shadow)

	// Step 3: kube-controller-manager's collector off, ownergc in Enforce.
	r.run(steps.switchOver)
	if err := kcm.Alive(); err == nil {
		t.Fatal("step 3 left kube-controller-manager's garbage collector running")
	}
	framework.WaitPolicyInForce(t, c.Client, "the switch to Enforce should be in force")
	owner := c.Create(t, framework.ConfigMaps, ns, "after-the-switch")
	deps := c.CreateMany(t, framework.ConfigMaps, ns, "dependent", 10, framework.OwnedBy(owner.Ref(false)))
	c.Delete(t, owner)
	c.WaitGone(t, "ownergc collects once it enforces", deps...)
	after := objectWrites(c.requestsOf(t))
	deletes := 0
	for _, w := range after {
		if w.Verb == "delete" && w.ObjectRef.Resource == "configmaps" && w.ObjectRef.Namespace == ns {
			deletes++
		}
	}
	if deletes < len(deps) {
		t.Fatalf("after the switch the audit log shows %d deletes of the manager in %s, want at least %d: the check above could not see its writes",
			deletes, ns, len(deps))
	}
}

// objectWrites returns the requests that write to an object of the cluster:
// all writes but those the manager makes in DryRun too — events, its
// leader-election Lease, the GCPolicy's status, and the token and access
// reviews of its metrics endpoint. Creating the GCPolicy is a write here:
// the documented policy must come first.
func objectWrites(rs []framework.Request) []framework.Request {
	var out []framework.Request
	for _, r := range rs {
		switch r.Verb {
		case "get", "list", "watch":
			continue
		}
		switch res := resourceOf(r); {
		case res == "events" && (r.Verb == "create" || r.Verb == "patch"):
		case res == "leases" && r.ObjectRef.APIGroup == "coordination.k8s.io" && (r.Verb == "create" || r.Verb == "update"):
		case res == "gcpolicies/status" && r.Verb == "patch":
		case (res == "tokenreviews" || res == "subjectaccessreviews") && r.Verb == "create":
		default:
			out = append(out, r)
		}
	}
	return out
}

// churn deletes owners, one every 200ms, each with five dependents.
type churn struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
	owners int
}

func startChurn(c client.Client, ns string) *churn {
	ctx, cancel := context.WithCancel(context.Background())
	ch := &churn{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ch.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if ch.err = ch.deleteOne(c, ns, i); ch.err != nil {
				return
			}
			ch.owners++
		}
	}()
	return ch
}

// deleteOne creates owner i with five dependents and deletes it. It is not
// cut short by stop: an owner left alive would keep its dependents, which
// the test then waits for the collector to collect.
func (ch *churn) deleteOne(c client.Client, ns string, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("owner-", i)}}
	if err := c.Create(ctx, owner); err != nil {
		return err
	}
	for j := range 5 {
		dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dependent-%d-%d", i, j),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
		if err := c.Create(ctx, dep); err != nil {
			return err
		}
	}
	return c.Delete(ctx, owner)
}

// stop stops deleting owners once the owner being deleted is, and returns
// the first error, if any.
func (ch *churn) stop() error {
	ch.once.Do(func() {
		ch.cancel()
		<-ch.done
	})
	return ch.err
}

// startOfLog returns the manager's log lines about its start, the policy
// and its first decisions.
func startOfLog(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "GCPolicy") || strings.Contains(l, "Collector") || strings.Contains(l, "leader") ||
			strings.Contains(l, "Deleted object") || strings.Contains(l, "Dry run") || strings.Contains(l, "Starting") {
			out = append(out, l)
		}
		if len(out) == 40 {
			break
		}
	}
	return strings.Join(out, "\n")
}
