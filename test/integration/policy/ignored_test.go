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

package policy_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// waitIgnoredCondition waits for the IgnoredResourcesResolved condition of
// the GCPolicy to have status and reason, at the policy's generation, with a
// message containing every string of mention and none of avoid.
func waitIgnoredCondition(t *testing.T, status metav1.ConditionStatus, reason string, mention, avoid []string, why string) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		p := &ownergcv1alpha1.GCPolicy{}
		if err := k8s.Get(bg(), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(p.Status.Conditions, ownergcv1alpha1.ConditionIgnoredResourcesResolved)
		if c == nil {
			return fmt.Errorf("no %s condition: %+v", ownergcv1alpha1.ConditionIgnoredResourcesResolved, p.Status.Conditions)
		}
		if c.Status != status || c.Reason != reason || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("condition %s=%s (%s) at generation %d, policy generation %d: %s",
				c.Type, c.Status, c.Reason, c.ObservedGeneration, p.Generation, c.Message)
		}
		for _, m := range mention {
			if !strings.Contains(c.Message, m) {
				return fmt.Errorf("message %q does not mention %s", c.Message, m)
			}
		}
		for _, m := range avoid {
			if strings.Contains(c.Message, m) {
				return fmt.Errorf("message %q mentions %s, which matches a served resource", c.Message, m)
			}
		}
		return nil
	}, "%s", why)
}

// waitPolicyEvent waits for an event of type and reason on the GCPolicy
// whose note contains every string of mention.
func waitPolicyEvent(t *testing.T, typ, reason string, mention ...string) {
	t.Helper()
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		list, err := clientset.EventsV1().Events("default").List(bg(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind != "GCPolicy" || e.Type != typ || e.Reason != reason {
				continue
			}
			notes = append(notes, e.Note)
			found := true
			for _, m := range mention {
				found = found && strings.Contains(e.Note, m)
			}
			if found {
				return nil
			}
		}
		return fmt.Errorf("no %s event %s mentioning %v on the GCPolicy; those there: %q", typ, reason, mention, notes)
	}, "a %s event %s should be recorded on the GCPolicy", typ, reason)
}

func entry(group, resource string) ownergcv1alpha1.GroupResource {
	return ownergcv1alpha1.GroupResource{Group: group, Resource: resource}
}

// An entry that names no served resource (a singular, a group that does not
// exist) is reported by the IgnoredResourcesResolved condition and a Warning
// event; entries of served resources are not, whether they can be deleted
// or not, nor a served group with "*". Fixing the entry clears it.
func TestUnmatchedIgnoredEntriesAreReported(t *testing.T) {
	missingGroup := framework.UniqueGroup("nothing")
	served := []ownergcv1alpha1.GroupResource{
		entry("authentication.k8s.io", "tokenreviews"), // served, create only
		entry("", "bindings"),                          // served, create only
		entry("rbac.authorization.k8s.io", "*"),        // a served group
	}
	applyPolicy(t, ownergcv1alpha1.GCPolicySpec{IgnoredResources: append([]ownergcv1alpha1.GroupResource{
		entry("apps", "deployment"), // singular
		entry(missingGroup, "*"),
	}, served...)})
	waitIgnoredCondition(t, metav1.ConditionFalse, ownergcv1alpha1.ReasonUnmatchedEntries,
		[]string{`{group: "apps", resource: "deployment"}`, fmt.Sprintf(`{group: %q, resource: "*"}`, missingGroup), "2 of 5"},
		[]string{"tokenreviews", "bindings", "rbac.authorization.k8s.io"},
		"the singular and the group that does not exist should be reported, and nothing else")
	waitPolicyEvent(t, corev1.EventTypeWarning, "IgnoredResourcesUnmatched", `resource: "deployment"`, missingGroup)

	updatePolicy(t, func(p *ownergcv1alpha1.GCPolicy) {
		p.Spec.IgnoredResources = append([]ownergcv1alpha1.GroupResource{entry("apps", "deployments")}, served...)
	})
	waitIgnoredCondition(t, metav1.ConditionTrue, ownergcv1alpha1.ReasonAllEntriesMatched, []string{"(4)"}, nil,
		"once the entries are fixed, every one matches a served resource")
	waitPolicyEvent(t, corev1.EventTypeNormal, "IgnoredResourcesMatched", "(4)")
}

// The condition follows discovery without a change to the policy: an entry
// naming a CRD's resource matches once the CRD is established and no longer
// once it is deleted. The engine pushes the change to the controller: it
// notifies a status change although nothing else it reports changed (the
// resource is ignored, so the number of monitored resources stays put).
func TestUnmatchedIgnoredEntryFollowsDiscovery(t *testing.T) {
	crd := framework.CRD{Group: framework.UniqueGroup("ignored"), Kind: "Widget", Plural: "widgets"}
	widgets := fmt.Sprintf(`{group: %q, resource: "widgets"}`, crd.Group)
	applyPolicy(t, ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{entry(crd.Group, "widgets")}})
	waitIgnoredCondition(t, metav1.ConditionFalse, ownergcv1alpha1.ReasonUnmatchedEntries, []string{widgets}, nil,
		"the CRD does not exist yet: its resource is not served")
	waitPolicyEvent(t, corev1.EventTypeWarning, "IgnoredResourcesUnmatched", crd.Group)

	monitored := manager.Engine.Status().Monitored
	var notified atomic.Int32
	manager.Engine.OnStatusChange(func() { notified.Add(1) })
	cp.CreateCRD(t, crd)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			cp.DeleteCRD(t, crd)
		}
	})
	waitIgnoredCondition(t, metav1.ConditionTrue, ownergcv1alpha1.ReasonAllEntriesMatched, nil, nil,
		"the entry matches once the CRD is established")
	framework.Eventually(t, framework.CascadeTimeout, func() error {
		if n := notified.Load(); n == 0 {
			return fmt.Errorf("no status change notified")
		}
		return nil
	}, "the engine should push the change of the unmatched entries to the controller")
	if m := manager.Engine.Status().Monitored; m != monitored {
		t.Logf("monitored resources changed from %d to %d meanwhile: the notification may not be the unmatched entries'", monitored, m)
	}

	cp.DeleteCRD(t, crd)
	deleted = true
	waitIgnoredCondition(t, metav1.ConditionFalse, ownergcv1alpha1.ReasonUnmatchedEntries, []string{widgets}, nil,
		"the entry matches nothing once the CRD is deleted")
}
