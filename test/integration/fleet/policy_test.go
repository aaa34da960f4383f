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

package fleet_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// A cluster that does not serve GCPolicies is collected with the built-in
// defaults; once the platform installs the CRD there, the cluster's engine
// is built again with the GCPolicy controller, which creates the cluster's
// GCPolicy default and reports on it.
func TestAClusterThatInstallsTheGCPolicyCRDLaterIsConfiguredByIt(t *testing.T) {
	bare, err := framework.StartBareControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bare.Stop)
	ns := framework.CreateNamespace(t, host().Client)
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns})
	bare.WriteKubeconfigSecret(t, host(), ns, "delta")
	m.WaitSynced(t, "delta", engageTimeout)
	background(t, bare)

	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases", "ownergc.io_gcpolicies.yaml")},
	}); err != nil {
		t.Fatalf("installing the GCPolicy CRD: %v", err)
	}
	framework.Eventually(t, 2*time.Minute, func() error {
		var p ownergcv1alpha1.GCPolicy
		if err := bare.Client.Get(framework.Context(t), types.NamespacedName{Name: "default"}, &p); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, ownergcv1alpha1.ConditionReady) {
			return fmt.Errorf("GCPolicy default is not Ready: %+v", p.Status.Conditions)
		}
		return nil
	}, "once the CRD is installed, cluster delta's engine should be built again with the GCPolicy controller, which creates GCPolicy default and reports it Ready")
	m.WaitSynced(t, "delta", engageTimeout)
	background(t, bare)
}
