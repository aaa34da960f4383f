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

package faults_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/collector"

	"github.com/ownergc/ownergc/test/framework"
)

// brokenConversion is a CRD whose preferred version (v2) needs a conversion
// webhook that does not exist, while its objects are stored at v1: reading
// them at v2 fails, so its monitor can never list it.
func brokenConversion(t *testing.T) (framework.CRD, framework.Kind) {
	t.Helper()
	path := "/convert"
	crd := framework.CRD{Group: framework.UniqueGroup("conversion"), Kind: "Valve", Plural: "valves",
		Versions: []string{"v1", "v2"}, Storage: "v1",
		Conversion: &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig: &apiextensionsv1.WebhookClientConfig{
					Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "no-such-converter", Path: &path},
				},
			},
		}}
	v1, _ := cp.CreateCRD(t, crd)
	return crd, v1
}

// absentRef is a reference to an object of kind k that does not exist.
func absentRef(k framework.Kind, name string) metav1.OwnerReference {
	return framework.Object{Kind: k, Name: name, UID: uuid.NewUUID()}.Ref(false)
}

// Fault: a kind whose list always fails (its preferred version's conversion
// webhook is down). Its objects cannot be observed, so the owners of that
// kind that others name are virtual: one that does not exist is verified
// with a live read (not waited for forever) and its dependents collected;
// one that exists keeps its dependents. The failing kind is reported and
// does not hold readiness.
func TestKindThatCannotBeListed(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	_, valves := brokenConversion(t) // valves at v1, the stored version: readable
	present := cp.Create(t, valves, ns, "present")
	keptV1 := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-present", framework.OwnedBy(present.Ref(false)))
	keptV2 := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-present-at-v2", framework.OwnedBy(framework.Object{Kind: valves.At("v2"), Name: present.Name, UID: present.UID}.Ref(false)))
	collected := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-absent", framework.OwnedBy(absentRef(valves, "absent")))

	// The failing kind is reported after a grace period of a few seconds
	// and left out of readiness: ready well before the collector's sync
	// timeout would start it anyway.
	start := time.Now()
	m := cp.StartManager(t, framework.ManagerOptions{ReadyTimeout: collector.DefaultSyncTimeout - 5*time.Second})
	t.Logf("ready %s after start with a kind that cannot be listed", time.Since(start).Round(10*time.Millisecond))
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		for _, f := range m.Engine.Status().Failed {
			if f.Group == valves.GVR.Group && f.Resource == "valves" {
				return nil
			}
		}
		return fmt.Errorf("failed resources: %+v", m.Engine.Status().Failed)
	}, "the kind that cannot be listed should be reported failed")

	// The policy's status says so (the GCPolicy controller must not wait
	// for the failing kind either: it creates the policy, since none
	// exists, and reports on it).
	policy := &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownergcv1alpha1.PolicyName}}
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if err := cp.Client.Get(framework.Context(t), client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(policy.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "valves") {
			return fmt.Errorf("Degraded condition: %+v", c)
		}
		if !apimeta.IsStatusConditionTrue(policy.Status.Conditions, ownergcv1alpha1.ConditionReady) {
			return fmt.Errorf("conditions: %+v", policy.Status.Conditions)
		}
		return nil
	}, "the GCPolicy should be Ready and Degraded, naming the kind that cannot be listed")

	cp.WaitGone(t, "its owner does not exist, though its kind cannot be listed", collected)
	cp.Survive(t, "their owner exists, though its kind cannot be listed", keptV1, keptV2)

	// Everything else is collected meanwhile.
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent", framework.OwnedBy(owner.Ref(false)))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its owner was deleted", dep)
}

// Fault: kube-apiserver restarts while a kind cannot be listed. The
// collector is ready and collects everything else within seconds.
func TestAPIServerRestartWithAKindThatCannotBeListed(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	_, valves := brokenConversion(t)
	cp.Create(t, valves, ns, "present")
	m := cp.StartManager(t, framework.ManagerOptions{})

	if err := cp.RestartAPIServer(nil); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	framework.Eventually(t, framework.CascadeTimeout, func() error { return m.Engine.GraphSyncedCheck(nil) },
		"ownergc should be ready again after the restart, whatever the failing kind")
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	deps := cp.CreateMany(t, framework.ConfigMaps, ns, "dependent", 20, framework.OwnedBy(owner.Ref(false)))
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its owner was deleted", deps...)
}
