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

package main

import (
	"strings"
	"testing"
)

const namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ownergc-system\n---\n"

// renderString renders the objects of in, the same with fleet.enable and
// without.
func renderString(t *testing.T, in string) (map[string]string, error) {
	t.Helper()
	single, fleet, err := readSections(strings.NewReader(in + "\n---\n" + fleetMarker + "\n---\n" + in))
	if err != nil {
		t.Fatal(err)
	}
	return render(single, fleet)
}

func TestTemplatesTheNamespaceAndLabelsAndEscapesBraces(t *testing.T) {
	files, err := renderString(t, namespace+`apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: ownergc-alerts
  namespace: ownergc-system
  labels:
    app.kubernetes.io/name: ownergc
    team: gc
spec:
  description: "{{ $value }} left"
`)
	if err != nil {
		t.Fatal(err)
	}
	got := files["templates/prometheus/prometheusrule-ownergc-alerts.yaml"]
	for _, want := range []string{
		"{{- if .Values.prometheus.rules.enable }}\n",
		"  namespace: {{ .Release.Namespace }}\n",
		"    {{- include \"ownergc.labels\" . | nindent 4 }}\n    {{- with .Values.prometheus.labels }}\n",
		"    team: gc\n",
		`{{ "{{" }} $value {{ "}}" }} left`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "app.kubernetes.io/name") {
		t.Errorf("the name label should come from the chart's labels:\n%s", got)
	}
}

func TestRefusesWhatItCannotPlace(t *testing.T) {
	for name, in := range map[string]string{
		"unknown kind": namespace + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: ownergc-system\n",
		"install namespace in an untemplated field": namespace +
			"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n  namespace: ownergc-system\n  annotations:\n    a: ownergc-system\n",
		"no Namespace": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n",
	} {
		if _, err := renderString(t, in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

const (
	collectorRole = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ownergc-manager-role\n"
	hostRole      = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ownergc-fleet-host-role\n  namespace: ownergc-system\n"
	metricsSvc    = "apiVersion: v1\nkind: Service\nmetadata:\n  name: ownergc-metrics\n  namespace: ownergc-system\n"
	crd           = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: clustergcstatuses.ownergc.io\n"
)

func renderSections(t *testing.T, single, fleet string) (map[string]string, error) {
	t.Helper()
	s, f, err := readSections(strings.NewReader(single + "---\n" + fleetMarker + "\n---\n" + fleet))
	if err != nil {
		t.Fatal(err)
	}
	return render(s, f)
}

func TestObjectsOfOneModeDependOnFleetEnable(t *testing.T) {
	files, err := renderSections(t,
		namespace+collectorRole+"---\n"+metricsSvc,
		namespace+hostRole+"---\n"+metricsSvc)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"templates/rbac/clusterrole-ownergc-manager-role.yaml": "{{- if not .Values.fleet.enable }}\n",
		"templates/rbac/role-ownergc-fleet-host-role.yaml":     "{{- if .Values.fleet.enable }}\n",
		"templates/metrics/service-ownergc-metrics.yaml":       "{{- if .Values.metrics.enable }}\n",
	} {
		got, ok := files[file]
		if !ok {
			t.Errorf("%s not written; files: %v", file, keys(files))
			continue
		}
		if !strings.Contains(got, want) || strings.Count(got, "{{- if") != 1 {
			t.Errorf("%s: want the one condition %q in:\n%s", file, want, got)
		}
	}
	if len(files) != 3 {
		t.Errorf("files %v, want 3", keys(files))
	}

	// A conditional object with a condition of its own: both hold.
	files, err = renderSections(t, namespace, namespace+metricsSvc)
	if err != nil {
		t.Fatal(err)
	}
	if got := files["templates/metrics/service-ownergc-metrics.yaml"]; !strings.Contains(got, "{{- if and (.Values.fleet.enable) (.Values.metrics.enable) }}\n") {
		t.Errorf("want both conditions in:\n%s", got)
	}
}

func TestRefusesWhatDependsOnFleetEnableAndCannot(t *testing.T) {
	for name, sections := range map[string][2]string{
		"an object that differs": {namespace + metricsSvc, namespace + metricsSvc + "spec:\n  type: NodePort\n"},
		"a CRD of one mode":      {namespace + crd, namespace},
		"another namespace":      {namespace, strings.ReplaceAll(namespace, "ownergc-system", "elsewhere")},
	} {
		if _, err := renderSections(t, sections[0], sections[1]); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, _, err := readSections(strings.NewReader(namespace)); err == nil {
		t.Error("an input without the fleet section: no error")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The admission policy and its binding render only where the API server
// serves the policy's kind: helm install of a template whose kind is not
// served fails outright (Kubernetes before 1.30).
func TestAdmissionPolicyDependsOnTheServedKind(t *testing.T) {
	vap := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: ownergc-w\n"
	binding := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: ownergc-w\n"
	files, err := renderSections(t, namespace+vap+"---\n"+binding, namespace+binding)
	if err != nil {
		t.Fatal(err)
	}
	served := `.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"`
	for file, want := range map[string]string{
		"templates/admission/validatingadmissionpolicy-ownergc-w.yaml":        "{{- if and (not .Values.fleet.enable) (" + served + ") }}\n",
		"templates/admission/validatingadmissionpolicybinding-ownergc-w.yaml": "{{- if " + served + " }}\n",
	} {
		if got := files[file]; !strings.HasPrefix(strings.TrimPrefix(got, header), want) {
			t.Errorf("%s: want it to start with %q:\n%s", file, want, got)
		}
	}
}
