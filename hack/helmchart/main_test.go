package main

import (
	"strings"
	"testing"
)

const namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ownergc-system\n---\n"

func renderString(t *testing.T, in string) (map[string]string, error) {
	t.Helper()
	objs, err := readObjects(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return render(objs)
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
