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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/ownergc/ownergc/test/framework"
)

// managerName names the manager's Deployment, or StatefulSet when sharded.
const managerName = "ownergc-controller-manager"

// TestConfigFleetShardedIsConfigFleetWithAStatefulSet checks the sharded
// fleet host: config/fleet/sharded has config/fleet's objects (its RBAC,
// which grants the shard Leases, included: TestShippedRolesGrantWhatTheManagerUsesAndNoMore
// checks it), but for the manager, a StatefulSet of two replicas in place
// of the Deployment, with the same pod but for --shard replacing
// --leader-elect and --replica-id set to the pod's name through the
// downward API; and the API server accepts it (a server-side dry run,
// with strict field validation).
func TestConfigFleetShardedIsConfigFleetWithAStatefulSet(t *testing.T) {
	fleet := objectsByKind(t, kustomizeBuild(t, "config/fleet"))
	sharded := objectsByKind(t, kustomizeBuild(t, "config/fleet/sharded"))
	deploymentKey, statefulSetKey := "Deployment/"+managerName, "StatefulSet/"+managerName
	for key, want := range fleet {
		if key == deploymentKey {
			continue
		}
		got, ok := sharded[key]
		if !ok {
			t.Errorf("config/fleet/sharded has no %s", key)
			continue
		}
		if !equality.Semantic.DeepEqual(want.Object, got.Object) {
			t.Errorf("%s differs between config/fleet and config/fleet/sharded:\n%s", key, diff.Diff(want.Object, got.Object))
		}
	}
	for key := range sharded {
		if _, ok := fleet[key]; !ok && key != statefulSetKey {
			t.Errorf("config/fleet/sharded has %s, which config/fleet does not", key)
		}
	}
	if _, ok := sharded[deploymentKey]; ok {
		t.Errorf("config/fleet/sharded has the Deployment too")
	}
	u, ok := sharded[statefulSetKey]
	if !ok {
		t.Fatalf("config/fleet/sharded has no %s", statefulSetKey)
	}
	var d appsv1.Deployment
	var s appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(fleet[deploymentKey].Object, &d); err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		t.Fatal(err)
	}
	if r := s.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("replicas %v, want 2", r)
	}
	if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q, want Parallel: the replicas need no order", s.Spec.PodManagementPolicy)
	}
	if !equality.Semantic.DeepEqual(s.Spec.Selector, d.Spec.Selector) || !equality.Semantic.DeepEqual(s.ObjectMeta, d.ObjectMeta) {
		t.Errorf("the StatefulSet's metadata and selector should be the Deployment's")
	}
	// The pod: the Deployment's, but for the arguments and the pod's name.
	pod, want := s.Spec.Template.DeepCopy(), d.Spec.Template.DeepCopy()
	c, w := &pod.Spec.Containers[0], &want.Spec.Containers[0]
	wantArgs := slices.Concat(slices.DeleteFunc(slices.Clone(w.Args), func(a string) bool { return a == "--leader-elect" }),
		[]string{"--shard", "--replica-id=$(POD_NAME)"})
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	wantEnv := []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	if !equality.Semantic.DeepEqual(c.Env, wantEnv) {
		t.Errorf("env %+v, want POD_NAME from the downward API's metadata.name", c.Env)
	}
	c.Args, c.Env, w.Args = nil, nil, nil
	if !equality.Semantic.DeepEqual(pod, want) {
		t.Errorf("the StatefulSet's pod differs from the Deployment's:\n%s", diff.Diff(want, pod))
	}

	// The API server accepts it as it is.
	obj := u.DeepCopy()
	if _, err := installed.Dynamic.Resource(appsv1.SchemeGroupVersion.WithResource("statefulsets")).Namespace(obj.GetNamespace()).
		Create(framework.Context(t), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err != nil {
		t.Errorf("the API server refuses the StatefulSet of config/fleet/sharded: %v", err)
	}
}

// TestChartFleetShardValues checks the values of the sharded fleet:
// fleet.shard.replicas, leader election left out, and fleet.shard.enable
// without fleet.enable refused.
func TestChartFleetShardValues(t *testing.T) {
	objs := objectsByKind(t, renderChart(t, chartNamespace, map[string]any{
		"controllerManager": map[string]any{"replicas": 5, "leaderElection": true},
		"fleet":             map[string]any{"enable": true, "shard": map[string]any{"enable": true, "replicas": 3}},
	}))
	s, ok := objs["StatefulSet/"+managerName]
	if !ok {
		t.Fatal("no StatefulSet rendered")
	}
	if _, ok := objs["Deployment/"+managerName]; ok {
		t.Error("the Deployment is rendered with the StatefulSet")
	}
	if r, _, _ := unstructured.NestedInt64(s.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas %d, want fleet.shard.replicas 3", r)
	}
	containers, _, _ := unstructured.NestedSlice(s.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if slices.Contains(args, "--leader-elect") || !slices.Contains(args, "--shard") {
		t.Errorf("args %q: --shard replaces --leader-elect", args)
	}

	_, _, err := renderTemplates(chartNamespace, map[string]any{"fleet": map[string]any{"shard": map[string]any{"enable": true}}}, currentCluster)
	if err == nil || !strings.Contains(err.Error(), "set fleet.enable too") {
		t.Errorf("fleet.shard.enable without fleet.enable: %v, want an error that says to set fleet.enable", err)
	}
}
