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
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReadmeInstallBlocksEachWorkAlone reads README.md's "Install into a
// cluster" as a new user pastes it, without a cluster: every shell block is
// commands the tests know how to follow, with nothing to replace
// (<registry>, …); the DryRun block creates the CRD and a GCPolicy in
// DryRun; each installation block is a whole installation — every object of
// dist/install.yaml, or of the chart — alone, and after the DryRun block
// applies the manager's Deployment only after the policy; the Helm block
// creates its own DryRun policy; and the check waits for the policy to exist
// before it waits for it to be Ready, each with a timeout.
// TestDryRunMigrationBesideKubeControllerManager runs these blocks against
// control planes.
func TestReadmeInstallBlocksEachWorkAlone(t *testing.T) {
	const section = "Install into a cluster"
	var dryRun, check *docBlock
	var installs []docBlock
	for _, b := range docBlocks(t, "README.md", section) {
		if b.lang != "sh" {
			continue
		}
		if m := placeholder.FindString(b.text); m != "" {
			t.Errorf("%s: %s must be replaced before the block runs: a pasted block must work as it is", b.where, m)
		}
		r := &docRunner{t: t}
		r.run(b)
		switch {
		case strings.Contains(b.text, "mode: DryRun") && !r.deploymentApplied:
			dryRun = &b
		case r.deploymentApplied:
			installs = append(installs, b)
		case len(r.waits) > 0:
			check = &b
			if !slices.Equal(r.waits, []string{"create gcpolicy/default", "condition=Ready gcpolicy/default"}) {
				t.Errorf("%s: the check waits for %q, want the GCPolicy created, then Ready", b.where, r.waits)
			}
			for _, l := range strings.Split(b.text, "\n") {
				if strings.HasPrefix(l, "kubectl wait") && !strings.Contains(l, "--timeout=") {
					t.Errorf("%s: %q waits 30 seconds (kubectl's default): give a --timeout", b.where, l)
				}
			}
		}
	}
	if dryRun == nil || check == nil || len(installs) != 3 {
		t.Fatalf("README.md, %q: want a block that creates the CRD and a DryRun GCPolicy, three installation blocks and a check; found the DryRun block %v, %d installation blocks, the check %v",
			section, dryRun != nil, len(installs), check != nil)
	}

	whole := map[string]bool{}
	for key := range objectsByKind(t, readRepoFile(t, "dist/install.yaml")) {
		whole[key] = true
	}
	for _, install := range installs {
		alone := &docRunner{t: t}
		alone.run(install)
		helm := alone.applied[0].helm
		applied := map[string]bool{}
		for _, a := range alone.applied {
			applied[a.obj.GetKind()+"/"+a.obj.GetName()] = true
		}
		for key := range whole {
			// helm install --create-namespace makes the Namespace.
			createdByHelm := helm && strings.HasPrefix(key, "Namespace/")
			if !applied[key] && !createdByHelm {
				t.Errorf("%s, pasted alone, does not apply %s: it is not a whole installation", install.where, key)
			}
		}
		if helm {
			if !slices.ContainsFunc(alone.applied, isDryRunPolicy) {
				t.Errorf("%s: the Helm installation creates no GCPolicy in DryRun", install.where)
			}
			continue
		}
		afterDryRun := &docRunner{t: t}
		afterDryRun.run(*dryRun, install)
		policy := slices.IndexFunc(afterDryRun.applied, isDryRunPolicy)
		deployment := slices.IndexFunc(afterDryRun.applied, func(a appliedObject) bool { return a.obj.GetKind() == "Deployment" })
		if policy < 0 || afterDryRun.applied[policy].command >= afterDryRun.applied[deployment].command {
			t.Errorf("%s after %s: the DryRun GCPolicy must be applied by an earlier command than the manager's Deployment", install.where, dryRun.where)
		}
	}
}

func isDryRunPolicy(a appliedObject) bool {
	mode, _, _ := unstructured.NestedString(a.obj.Object, "spec", "mode")
	return a.obj.GetKind() == "GCPolicy" && a.obj.GetName() == "default" && mode == "DryRun"
}
