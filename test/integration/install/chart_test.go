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
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"

	"github.com/ownergc/ownergc/test/framework"
)

// chartNamespace is the release namespace of the chart in
// TestChartInstallsAWorkingCollector: not ownergc-system, to show that the
// chart puts everything in the namespace it is installed in.
const chartNamespace = "ownergc-chart"

// admissionPolicyKind is what the chart's admission policy and its binding
// need the API server to serve (Kubernetes 1.30 or newer).
const admissionPolicyKind = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"

// servingCapabilities are Helm's default capabilities plus the
// "group/version/Kind" entries of kinds, as helm install finds them on a
// cluster that serves those kinds.
func servingCapabilities(kinds ...string) *chartutil.Capabilities {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(slices.Clone(caps.APIVersions), kinds...)
	return caps
}

// currentCluster is a cluster of Kubernetes 1.30 or newer.
var currentCluster = servingCapabilities(admissionPolicyKind, admissionPolicyKind+"Binding")

// clusterCapabilities are the capabilities helm install finds on the
// cluster of cp (helm's action.GetVersionSet: every group/version the API
// server serves, and every group/version/Kind).
func clusterCapabilities(t *testing.T, cp *framework.ControlPlane) *chartutil.Capabilities {
	t.Helper()
	groups, resources, err := cp.Clientset.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = nil
	for _, g := range groups {
		for _, v := range g.Versions {
			caps.APIVersions = append(caps.APIVersions, v.GroupVersion)
		}
	}
	for _, list := range resources {
		for _, r := range list.APIResources {
			caps.APIVersions = append(caps.APIVersions, list.GroupVersion+"/"+r.Kind)
		}
	}
	v, err := cp.Clientset.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	caps.KubeVersion = chartutil.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor}
	return caps
}

// renderChart renders dist/chart as `helm template --include-crds` does, for
// a release named ownergc in namespace, with vals over the chart's
// values.yaml, on a cluster of Kubernetes 1.30 or newer: the CRDs of crds/
// first, then the templates in Helm's install order. Rendering is strict: a
// template that refers to a value values.yaml does not have fails.
func renderChart(t *testing.T, namespace string, vals map[string]any) []byte {
	t.Helper()
	manifests, _ := renderChartOn(t, namespace, vals, currentCluster)
	return manifests
}

// renderChartOn renders dist/chart as renderChart does, on a cluster of
// these capabilities, and returns its manifests and NOTES.txt.
func renderChartOn(t *testing.T, namespace string, vals map[string]any, caps *chartutil.Capabilities) (manifests []byte, notes string) {
	t.Helper()
	ch, files, err := renderTemplates(namespace, vals, caps)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			notes = content
			delete(files, name)
		}
	}
	hooks, sorted, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatalf("sorting the rendered manifests: %v", err)
	}
	if len(hooks) > 0 {
		t.Fatalf("the chart has hooks (%s), which the tests do not apply", hooks[0].Path)
	}
	var out bytes.Buffer
	for _, crd := range ch.CRDObjects() {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", crd.Filename, crd.File.Data)
	}
	for _, m := range sorted {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return out.Bytes(), notes
}

// renderTemplates loads dist/chart and renders its templates, as
// renderChartOn does, by file name.
func renderTemplates(namespace string, vals map[string]any, caps *chartutil.Capabilities) (*chart.Chart, map[string]string, error) {
	ch, err := loader.Load(filepath.Join(repoRoot, "dist", "chart"))
	if err != nil {
		return nil, nil, fmt.Errorf("loading dist/chart: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: "ownergc", Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, caps)
	if err != nil {
		return nil, nil, fmt.Errorf("values %v: %w", vals, err)
	}
	files, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering dist/chart with values %v: %w", vals, err)
	}
	return ch, files, nil
}

// objectsByKind returns the objects of a YAML stream by "Kind/name".
func objectsByKind(t *testing.T, manifests []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	list, err := framework.DecodeManifests(manifests)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, obj := range list {
		key := obj.GetKind() + "/" + obj.GetName()
		if _, dup := objs[key]; dup {
			t.Fatalf("%s appears twice", key)
		}
		objs[key] = obj
	}
	return objs
}

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestChartRendersTheObjectsOfDistInstallYAML guards against drift between
// the chart and config/: with its default values and the release namespace
// ownergc-system, the chart renders every object of dist/install.yaml but the
// Namespace (helm install --create-namespace makes it), CRD and RBAC
// included, with the same content and at least the same labels, and nothing
// else.
func TestChartRendersTheObjectsOfDistInstallYAML(t *testing.T) {
	checkChartRenders(t, readRepoFile(t, "dist/install.yaml"), nil)
}

// TestChartWithFleetEnableRendersConfigFleet is the same for the fleet
// mode: with fleet.enable, the chart renders the objects of config/fleet
// (the fleet host's install).
func TestChartWithFleetEnableRendersConfigFleet(t *testing.T) {
	checkChartRenders(t, kustomizeBuild(t, "config/fleet"), map[string]any{"fleet": map[string]any{"enable": true}})
}

// TestChartWithFleetShardRendersConfigFleetSharded is the same for the
// sharded fleet: with fleet.enable and fleet.shard.enable, the chart
// renders the objects of config/fleet/sharded, the StatefulSet included.
func TestChartWithFleetShardRendersConfigFleetSharded(t *testing.T) {
	checkChartRenders(t, kustomizeBuild(t, "config/fleet/sharded"),
		map[string]any{"fleet": map[string]any{"enable": true, "shard": map[string]any{"enable": true}}})
}

// checkChartRenders checks that the chart, rendered with vals in the
// release namespace ownergc-system, renders the objects of manifests but
// the Namespace, with the same content and at least the same labels, and
// nothing else.
func checkChartRenders(t *testing.T, manifests []byte, vals map[string]any) {
	t.Helper()
	want := objectsByKind(t, manifests)
	got := objectsByKind(t, renderChart(t, systemNamespace, vals))
	kinds := map[string]int{}
	for key, w := range want {
		if w.GetKind() == "Namespace" {
			continue
		}
		g, ok := got[key]
		if !ok {
			t.Errorf("the chart does not render %s", key)
			continue
		}
		delete(got, key)
		kinds[w.GetKind()]++
		for k, v := range w.GetLabels() {
			if g.GetLabels()[k] != v {
				t.Errorf("%s: the chart sets label %s=%q, config/ %q", key, k, g.GetLabels()[k], v)
			}
		}
		w, g = w.DeepCopy(), g.DeepCopy()
		unstructured.RemoveNestedField(w.Object, "metadata", "labels")
		unstructured.RemoveNestedField(g.Object, "metadata", "labels")
		if !equality.Semantic.DeepEqual(w.Object, g.Object) {
			t.Errorf("%s differs between config/ and the chart (run make helm-chart, or align templates/manager with config/manager):\n%s",
				key, diff.Diff(w.Object, g.Object))
		}
	}
	for key := range got {
		t.Errorf("with values %v the chart renders %s, which config/ does not have", vals, key)
	}
	// The comparison covered what it should.
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s was compared", kind)
		}
	}
	if kinds["Deployment"]+kinds["StatefulSet"] != 1 {
		t.Errorf("%d Deployments and %d StatefulSets compared, want the manager's", kinds["Deployment"], kinds["StatefulSet"])
	}
}

// TestChartValues checks that each value of values.yaml changes what it
// says.
func TestChartValues(t *testing.T) {
	deployment := func(t *testing.T, objs map[string]*unstructured.Unstructured) (spec map[string]any, container map[string]any) {
		t.Helper()
		d, ok := objs["Deployment/ownergc-controller-manager"]
		if !ok {
			t.Fatal("no Deployment rendered")
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("%d containers", len(containers))
		}
		return d.Object["spec"].(map[string]any), containers[0].(map[string]any)
	}
	args := func(container map[string]any) []string {
		var out []string
		for _, a := range container["args"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}

	t.Run("gcPolicy", func(t *testing.T) {
		spec := map[string]any{
			"ignoredResources":   []any{}, // explicit empty list: watch events too
			"workers":            map[string]any{"attemptToDelete": int64(5)},
			"defaultPropagation": "Foreground",
		}
		objs := objectsByKind(t, renderChart(t, chartNamespace, map[string]any{"gcPolicy": map[string]any{"enable": true, "spec": spec}}))
		p, ok := objs["GCPolicy/default"]
		if !ok {
			t.Fatal("gcPolicy.enable=true renders no GCPolicy default")
		}
		if !equality.Semantic.DeepEqual(p.Object["spec"], spec) {
			t.Errorf("GCPolicy spec:\n%s", diff.Diff(spec, p.Object["spec"]))
		}
		objs = objectsByKind(t, renderChart(t, chartNamespace, map[string]any{"gcPolicy": map[string]any{"enable": true}}))
		if spec, ok := objs["GCPolicy/default"].Object["spec"].(map[string]any); !ok || len(spec) != 0 {
			t.Errorf("gcPolicy.enable=true without a spec should render an empty spec (all defaults), got %v", objs["GCPolicy/default"].Object["spec"])
		}
	})

	t.Run("controllerManager", func(t *testing.T) {
		objs := objectsByKind(t, renderChart(t, chartNamespace, map[string]any{"controllerManager": map[string]any{
			"replicas":       3,
			"leaderElection": false,
			"container": map[string]any{
				"image":     map[string]any{"repository": "registry.example/ownergc", "tag": "v1.2.3"},
				"args":      []any{"--kube-api-qps=80"},
				"resources": map[string]any{"limits": map[string]any{"memory": "4Gi"}},
			},
			"nodeSelector": map[string]any{"kubernetes.io/os": "linux"},
		}}))
		spec, c := deployment(t, objs)
		if spec["replicas"] != int64(3) {
			t.Errorf("replicas %v, want 3", spec["replicas"])
		}
		if c["image"] != "registry.example/ownergc:v1.2.3" {
			t.Errorf("image %v", c["image"])
		}
		if a := args(c); slices.Contains(a, "--leader-elect") || !slices.Contains(a, "--kube-api-qps=80") {
			t.Errorf("args %v: want no --leader-elect and --kube-api-qps=80", a)
		}
		// Helm merges maps: the default requests stay.
		want := map[string]any{"limits": map[string]any{"cpu": "1", "memory": "4Gi"}, "requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}
		if !equality.Semantic.DeepEqual(c["resources"], want) {
			t.Errorf("resources:\n%s", diff.Diff(want, c["resources"]))
		}
		if ns, _, _ := unstructured.NestedString(spec, "template", "spec", "nodeSelector", "kubernetes.io/os"); ns != "linux" {
			t.Errorf("nodeSelector not rendered: %v", spec)
		}

		_, c = deployment(t, objectsByKind(t, renderChart(t, chartNamespace, nil)))
		if c["image"] != "ghcr.io/ownergc/ownergc:latest" {
			t.Errorf("default image %v, want the chart's appVersion as tag", c["image"])
		}
	})

	t.Run("metrics off", func(t *testing.T) {
		objs := objectsByKind(t, renderChart(t, chartNamespace, map[string]any{
			"metrics":    map[string]any{"enable": false},
			"prometheus": map[string]any{"enable": true},
		}))
		_, c := deployment(t, objs)
		if a := args(c); !slices.Contains(a, "--metrics-bind-address=0") {
			t.Errorf("args %v: want --metrics-bind-address=0", a)
		}
		if _, ok := c["ports"]; ok {
			t.Errorf("ports %v with the metrics endpoint off", c["ports"])
		}
		for key := range objs {
			if strings.HasPrefix(key, "Service/") || strings.HasPrefix(key, "ServiceMonitor/") {
				t.Errorf("%s rendered with metrics.enable=false", key)
			}
		}
	})

	t.Run("prometheus", func(t *testing.T) {
		objs := objectsByKind(t, renderChart(t, chartNamespace, map[string]any{"prometheus": map[string]any{
			"enable": true, "rules": map[string]any{"enable": true}, "labels": map[string]any{"release": "prometheus"},
		}}))
		// The chart's objects have the spec of config/prometheus: the alert
		// templates ({{ $value }}) come through Helm unharmed.
		for key, source := range map[string]string{
			"ServiceMonitor/ownergc-controller-manager-metrics-monitor": "config/prometheus/monitor.yaml",
			"PrometheusRule/ownergc-alerts":                             "config/prometheus/rules.yaml",
		} {
			obj, ok := objs[key]
			if !ok {
				t.Errorf("%s not rendered", key)
				continue
			}
			var want map[string]any
			for _, o := range objectsByKind(t, readRepoFile(t, source)) {
				want = o.Object["spec"].(map[string]any)
			}
			if !equality.Semantic.DeepEqual(obj.Object["spec"], want) {
				t.Errorf("%s differs from %s:\n%s", key, source, diff.Diff(want, obj.Object["spec"]))
			}
			if obj.GetNamespace() != chartNamespace || obj.GetLabels()["release"] != "prometheus" {
				t.Errorf("%s: namespace %q, labels %v", key, obj.GetNamespace(), obj.GetLabels())
			}
		}
	})
}

// TestChartInstallsAWorkingCollector installs the chart, rendered with its
// default values, into a fresh control plane in namespace ownergc-chart, and
// runs the manager as the chart's ServiceAccount through the same cascade,
// orphaning and foreground deletion as TestManagerWorksWithTheInstalledRBAC
// (the manager creates the GCPolicy with the defaults). Then it upgrades the
// release with the gcPolicy value set, after the adoption step
// docs/operating.md gives for the manager's GCPolicy, and checks that the
// manager puts the chart's GCPolicy in force.
func TestChartInstallsAWorkingCollector(t *testing.T) {
	cp, err := framework.StartBareControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	c := &cluster{ControlPlane: cp, namespace: chartNamespace, serviceAccount: serviceAccount}
	// As helm install --create-namespace.
	if err := c.Client.Create(framework.Context(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}); err != nil {
		t.Fatal(err)
	}

	t.Run("default values", func(t *testing.T) {
		// As helm install renders it on this cluster: with the admission
		// policy where the API server serves it.
		caps := clusterCapabilities(t, cp)
		manifests, _ := renderChartOn(t, chartNamespace, nil, caps)
		if _, ok := objectsByKind(t, manifests)["ValidatingAdmissionPolicy/ownergc-gcpolicy-warnings"]; ok != caps.APIVersions.Has(admissionPolicyKind) {
			t.Errorf("the chart rendered with the capabilities of a Kubernetes %s cluster: ValidatingAdmissionPolicy rendered %v, served %v",
				caps.KubeVersion.Version, ok, caps.APIVersions.Has(admissionPolicyKind))
		}
		if err := c.apply(manifests); err != nil {
			t.Fatalf("applying the chart rendered with its default values: %v", err)
		}
		checkManagerWorks(t, c)
	})

	t.Run("gcPolicy value", func(t *testing.T) {
		spec := map[string]any{"workers": map[string]any{"attemptToDelete": 7, "attemptToOrphan": 3}}
		adoptPolicyIntoRelease(t, c.Client, "ownergc", chartNamespace)
		if err := c.apply(renderChart(t, chartNamespace, map[string]any{"gcPolicy": map[string]any{"enable": true, "spec": spec}})); err != nil {
			t.Fatalf("applying the chart rendered with gcPolicy.enable=true: %v", err)
		}
		p := c.startManager(t, "chart-policy", "--leader-elect", "--leader-election-namespace", c.namespace)
		p.waitReady(t)
		policy := framework.WaitPolicyInForce(t, c.Client, "the manager should put the GCPolicy of the chart in force")
		if w := policy.Spec.Workers; w.AttemptToDelete != 7 || w.AttemptToOrphan != 3 {
			t.Errorf("workers %+v, want the chart's 7 and 3", w)
		}
		if policy.Spec.DefaultPropagation != "Background" {
			t.Errorf("defaultPropagation %q: fields the chart leaves out should take their defaults", policy.Spec.DefaultPropagation)
		}
	})
}
