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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/test/framework"
)

// The admission policies' runtime-config entries: a kube-apiserver started
// with them (and without the ValidatingAdmissionPolicy admission plugin,
// which would wait for ever for its informer) serves
// admissionregistration.k8s.io/v1 without the ValidatingAdmissionPolicy
// kinds, as one older than 1.30 does.
const withoutAdmissionPolicies = "admissionregistration.k8s.io/v1/validatingadmissionpolicies=false," +
	"admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false"

// TestChartLeavesOutTheAdmissionPolicyWhereItIsNotServed checks that the
// chart renders the ValidatingAdmissionPolicy and its binding only for a
// cluster that serves them (Kubernetes 1.30 or newer), and says in its
// notes what it left out otherwise: helm install of a kind the API server
// does not serve fails outright.
func TestChartLeavesOutTheAdmissionPolicyWhereItIsNotServed(t *testing.T) {
	policyObjects := []string{"ValidatingAdmissionPolicy/ownergc-gcpolicy-warnings", "ValidatingAdmissionPolicyBinding/ownergc-gcpolicy-warnings"}
	note := "This cluster does not serve admissionregistration.k8s.io/v1\nValidatingAdmissionPolicy"
	for _, fleet := range []bool{false, true} {
		vals := map[string]any{"fleet": map[string]any{"enable": fleet}}
		manifests, notes := renderChartOn(t, chartNamespace, vals, currentCluster)
		objs := objectsByKind(t, manifests)
		for _, key := range policyObjects {
			if _, ok := objs[key]; !ok {
				t.Errorf("fleet.enable=%v, on a cluster that serves %s: %s not rendered", fleet, admissionPolicyKind, key)
			}
		}
		if strings.Contains(notes, note) {
			t.Errorf("fleet.enable=%v: the notes say the policy was left out, on a cluster that serves it:\n%s", fleet, notes)
		}

		// Helm's default capabilities (helm template without
		// --api-versions) have the group/version, not the kind.
		manifests, notes = renderChartOn(t, chartNamespace, vals, servingCapabilities())
		objs = objectsByKind(t, manifests)
		for _, key := range policyObjects {
			if _, ok := objs[key]; ok {
				t.Errorf("fleet.enable=%v, on a cluster that does not serve %s: %s rendered", fleet, admissionPolicyKind, key)
			}
		}
		if _, ok := objs["Deployment/ownergc-controller-manager"]; !ok {
			t.Errorf("fleet.enable=%v: the Deployment should be rendered without the admission policy", fleet)
		}
		if !strings.Contains(notes, note) {
			t.Errorf("fleet.enable=%v: the notes should say that the policy was left out:\n%s", fleet, notes)
		}
	}

	// A kube-apiserver that serves admissionregistration.k8s.io/v1 but not
	// the policies: the chart, rendered with the capabilities helm install
	// finds there, installs; the policy of dist/install.yaml does not.
	cp, err := framework.StartBareControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	caps := clusterCapabilities(t, cp)
	if caps.APIVersions.Has(admissionPolicyKind) {
		if err := cp.RestartAPIServer(map[string]string{
			"runtime-config": withoutAdmissionPolicies, "disable-admission-plugins": "ValidatingAdmissionPolicy"}); err != nil {
			t.Fatal(err)
		}
		caps = clusterCapabilities(t, cp)
	} // else an API server older than 1.30 (make test-compat) already serves none

	if caps.APIVersions.Has(admissionPolicyKind) || !caps.APIVersions.Has("admissionregistration.k8s.io/v1") {
		t.Fatalf("the API server should serve admissionregistration.k8s.io/v1 without %s", admissionPolicyKind)
	}
	c := &cluster{ControlPlane: cp, namespace: chartNamespace, serviceAccount: serviceAccount}
	// The restarted API server answers before its admission plugins are
	// ready.
	framework.Eventually(t, time.Minute, func() error {
		return c.apply([]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + chartNamespace + "\n"))
	}, "the restarted API server should create the release namespace")
	manifests, notes := renderChartOn(t, chartNamespace, nil, caps)
	if err := c.apply(manifests); err != nil {
		t.Fatalf("applying the chart rendered for a cluster without the admission policies: %v", err)
	}
	if !strings.Contains(notes, note) {
		t.Errorf("the notes should say that the policy was left out:\n%s", notes)
	}
	for key, obj := range objectsByKind(t, readRepoFile(t, "dist/install.yaml")) {
		if obj.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}) {
			continue
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.apply(data); err == nil {
			t.Errorf("%s applied on a cluster that does not serve it", key)
		}
	}
}
