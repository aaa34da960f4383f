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

// Command helmchart writes the parts of the Helm chart in dist/chart that are
// generated from config/: the CRDs (crds/), the ValidatingAdmissionPolicy
// that warns about GCPolicies that look mistaken (templates/admission), the
// RBAC (templates/rbac), the metrics Service (templates/metrics) and the
// Prometheus Operator objects (templates/prometheus). It reads on its
// standard input two sections, separated by a document holding only the
// comment fleetMarker: the objects of a single cluster's install (the
// kustomize output of config/default and config/prometheus), then those of
// a fleet host's (config/fleet and config/prometheus). It takes the chart
// directory as its argument; `make helm-chart` runs it:
//
//	{ kustomize build config/default; echo ---; kustomize build config/prometheus;
//	  printf -- '---\n# fleet.enable\n---\n';
//	  kustomize build config/fleet; echo ---; kustomize build config/prometheus; } | go run ./hack/helmchart dist/chart
//
// An object of both sections, the same in both, is rendered whatever the
// value fleet.enable; one of a single section only when fleet.enable says
// that section's mode (the collector's ClusterRole and its binding with
// fleet.enable off, the fleet host's Role and its binding with it on). An
// object that differs between the sections, or a CRD of one section only
// (crds/ cannot be conditional), is an error: the chart could not say it.
//
// config/fleet/sharded is not a third section: it is config/fleet with the
// manager's Deployment turned into a StatefulSet, and the manager's workload
// is a hand-written template (fleet.shard.enable picks the StatefulSet), so
// the generated objects of the sharded host are config/fleet's. The install
// tests check both: config/fleet/sharded differs from config/fleet only in
// the workload, and the chart with fleet.shard.enable renders it.
//
// The directories it writes are replaced whole, so a file left over from an
// object that config/ no longer has disappears. Everything else in the chart
// (Chart.yaml, values.yaml, templates/_helpers.tpl, NOTES.txt, the manager's
// Deployment or StatefulSet and the GCPolicy) is written by hand; the install
// test checks that the workload renders as config/ has it.
//
// What changes from the kustomize output: the install namespace becomes the
// release namespace, the app.kubernetes.io/name label becomes the chart's
// labels, the Namespace is left out (helm install --create-namespace makes
// it), `{{`/`}}` in text (alert templates) are escaped from Helm, and the
// ValidatingAdmissionPolicy and its binding are rendered only on a cluster
// that serves the policy's kind (Kubernetes 1.30 or newer; `helm template`
// renders them with --api-versions admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const header = "{{- /* Generated from config/ by hack/helmchart (make helm-chart): do not edit. */ -}}\n"

// fleetMarker, alone in a document, starts the section of the fleet host's
// objects.
const fleetMarker = "# fleet.enable"

// fleetValue is the value that selects the fleet host's objects.
const fleetValue = ".Values.fleet.enable"

// Placeholders that survive YAML marshalling and are then replaced with
// template actions.
const (
	namespacePlaceholder = "__RELEASE_NAMESPACE__"
	labelsPlaceholder    = "__CHART_LABELS__"
)

// output says where the objects of a kind go in the chart.
type output struct {
	dir string
	// condition, when set, wraps the template in {{- if condition }}.
	condition string
	// extraLabels, when set, names a values map merged into the labels.
	extraLabels string
	// verbatim files are not templates (crds/): no escaping, no labels
	// helper, no namespace.
	verbatim bool
	// servedKind, when set, renders the template only on a cluster that
	// serves this kind in the object's apiVersion (Helm's
	// .Capabilities.APIVersions, which holds "group/version/Kind" entries
	// for what the API server serves).
	servedKind string
}

var outputs = map[string]output{
	"CustomResourceDefinition": {dir: "crds", verbatim: true},
	// The policy and its binding come and go together, with the policy's
	// kind: Kubernetes serves admissionregistration.k8s.io/v1
	// ValidatingAdmissionPolicy from 1.30 on, and helm install would fail
	// outright on an older cluster (NOTES.txt says what was left out).
	"ValidatingAdmissionPolicy":        {dir: "templates/admission", servedKind: "ValidatingAdmissionPolicy"},
	"ValidatingAdmissionPolicyBinding": {dir: "templates/admission", servedKind: "ValidatingAdmissionPolicy"},
	"ServiceAccount":                   {dir: "templates/rbac"},
	"ClusterRole":                      {dir: "templates/rbac"},
	"ClusterRoleBinding":               {dir: "templates/rbac"},
	"Role":                             {dir: "templates/rbac"},
	"RoleBinding":                      {dir: "templates/rbac"},
	"Service":                          {dir: "templates/metrics", condition: ".Values.metrics.enable"},
	"ServiceMonitor": {dir: "templates/prometheus", condition: "and .Values.metrics.enable .Values.prometheus.enable",
		extraLabels: ".Values.prometheus.labels"},
	"PrometheusRule": {dir: "templates/prometheus", condition: ".Values.prometheus.rules.enable",
		extraLabels: ".Values.prometheus.labels"},
}

// skipped kinds are in the chart in another form.
var skipped = map[string]string{
	"Namespace":  "the release namespace (helm install --create-namespace)",
	"Deployment": "templates/manager/manager.yaml, written by hand with values",
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: { kustomize build config/default; echo ---; echo \"# fleet.enable\"; echo ---; kustomize build config/fleet; } | helmchart CHART_DIR")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "helmchart:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, chartDir string) error {
	single, fleet, err := readSections(in)
	if err != nil {
		return err
	}
	files, err := render(single, fleet)
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, o := range outputs {
		dirs[o.dir] = true
	}
	for dir := range dirs {
		if err := os.RemoveAll(filepath.Join(chartDir, dir)); err != nil {
			return err
		}
	}
	for name, content := range files {
		path := filepath.Join(chartDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

type object = map[string]any

// readSections reads the objects of a single cluster's install, then, after
// the document fleetMarker, those of a fleet host's.
func readSections(in io.Reader) (single, fleet []object, err error) {
	var sections [2][]object
	section := 0
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if isFleetMarker(doc) {
			if section == 1 {
				return nil, nil, fmt.Errorf("%q appears twice", fleetMarker)
			}
			section = 1
			continue
		}
		obj := object{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, nil, err
		}
		if len(obj) > 0 {
			sections[section] = append(sections[section], obj)
		}
	}
	if section == 0 {
		return nil, nil, fmt.Errorf("no %q document: the input must hold the objects of config/default, then those of config/fleet", fleetMarker)
	}
	return sections[0], sections[1], nil
}

// isFleetMarker reports whether doc holds nothing but fleetMarker (and
// document separators, which the reader keeps after an empty document).
func isFleetMarker(doc []byte) bool {
	var lines []string
	for line := range strings.Lines(string(doc)) {
		if line = strings.TrimSpace(line); line != "" && line != "---" {
			lines = append(lines, line)
		}
	}
	return len(lines) == 1 && lines[0] == fleetMarker
}

// render returns the chart files, by path relative to the chart, from the
// objects of a single cluster's install and of a fleet host's.
func render(single, fleet []object) (map[string]string, error) {
	installNamespace, err := namespaceOf(single)
	if err != nil {
		return nil, fmt.Errorf("the single cluster's objects: %w", err)
	}
	if ns, err := namespaceOf(fleet); err != nil || ns != installNamespace {
		return nil, fmt.Errorf("the fleet host's objects: namespace %q (%v), want the single cluster's %s", ns, err, installNamespace)
	}
	inFleet := map[string]object{}
	for _, obj := range fleet {
		inFleet[key(obj)] = obj
	}
	// Each object with the value of fleet.enable it is rendered for: ""
	// for both.
	type placed struct {
		obj  object
		when string
	}
	var all []placed
	for _, obj := range single {
		f, ok := inFleet[key(obj)]
		delete(inFleet, key(obj))
		switch {
		case !ok:
			all = append(all, placed{obj, "not " + fleetValue})
		case equality.Semantic.DeepEqual(obj, f):
			all = append(all, placed{obj, ""})
		default:
			if _, skip := skipped[kindOf(obj)]; skip {
				continue
			}
			return nil, fmt.Errorf("%s differs between config/default and config/fleet: the chart can render an object with fleet.enable or without it, not two versions of it", key(obj))
		}
	}
	for _, obj := range fleet {
		if _, ok := inFleet[key(obj)]; ok {
			all = append(all, placed{obj, fleetValue})
		}
	}
	files := map[string]string{}
	for _, p := range all {
		obj := p.obj
		kind := kindOf(obj)
		if _, ok := skipped[kind]; ok {
			continue
		}
		out, ok := outputs[kind]
		if !ok {
			return nil, fmt.Errorf("%s %s: no place in the chart for this kind; teach hack/helmchart where it goes", kind, name(obj))
		}
		if out.servedKind != "" {
			apiVersion, _ := obj["apiVersion"].(string)
			out.condition = and(fmt.Sprintf(".Capabilities.APIVersions.Has %q", apiVersion+"/"+out.servedKind), out.condition)
		}
		if p.when != "" {
			if out.verbatim {
				return nil, fmt.Errorf("%s %s: only in one of config/default and config/fleet, but crds/ cannot depend on fleet.enable", kind, name(obj))
			}
			out.condition = and(p.when, out.condition)
		}
		file := filepath.Join(out.dir, strings.ToLower(kind)+"-"+name(obj)+".yaml")
		if out.verbatim {
			file = filepath.Join(out.dir, name(obj)+".yaml")
		}
		if _, dup := files[file]; dup {
			return nil, fmt.Errorf("two objects would be written to %s", file)
		}
		content, err := renderObject(obj, out, installNamespace)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, name(obj), err)
		}
		files[file] = content
	}
	return files, nil
}

// namespaceOf returns the name of the Namespace among objs.
func namespaceOf(objs []object) (string, error) {
	for _, obj := range objs {
		if kindOf(obj) == "Namespace" {
			return name(obj), nil
		}
	}
	return "", errors.New("no Namespace in the input: is it the output of kustomize build config/default (or config/fleet)?")
}

// and is the template condition that holds when both hold; either may be
// empty.
func and(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return fmt.Sprintf("and (%s) (%s)", a, b)
}

// key identifies an object among those of a section.
func key(obj object) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	return kindOf(obj) + " " + ns + "/" + name(obj)
}

func kindOf(obj object) string {
	k, _ := obj["kind"].(string)
	return k
}

var (
	braces    = strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`)
	labelLine = regexp.MustCompile(`(?m)^( *)` + labelsPlaceholder + `: ""$`)
)

func renderObject(obj object, out output, installNamespace string) (string, error) {
	if out.verbatim {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return "", err
		}
		return "# Generated from config/ by hack/helmchart (make helm-chart): do not edit.\n" + string(data), nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return "", errors.New("no metadata")
	}
	if ns, ok := meta["namespace"]; ok {
		if ns != installNamespace {
			return "", fmt.Errorf("namespace %v, not the install namespace %s", ns, installNamespace)
		}
		meta["namespace"] = namespacePlaceholder
	}
	if subjects, ok := obj["subjects"].([]any); ok {
		for _, s := range subjects {
			if s, ok := s.(map[string]any); ok && s["namespace"] == installNamespace {
				s["namespace"] = namespacePlaceholder
			}
		}
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	// The chart's labels include app.kubernetes.io/name.
	delete(labels, "app.kubernetes.io/name")
	labels[labelsPlaceholder] = ""
	meta["labels"] = labels

	data, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	text := braces.Replace(string(data))
	if strings.Contains(text, installNamespace) {
		return "", fmt.Errorf("the install namespace %s is left in a field the generator does not template", installNamespace)
	}
	text = strings.ReplaceAll(text, namespacePlaceholder, "{{ .Release.Namespace }}")
	text = labelLine.ReplaceAllStringFunc(text, func(line string) string {
		indent := len(labelLine.FindStringSubmatch(line)[1])
		pad := strings.Repeat(" ", indent)
		s := fmt.Sprintf(`%s{{- include "ownergc.labels" . | nindent %d }}`, pad, indent)
		if out.extraLabels != "" {
			s += fmt.Sprintf("\n%s{{- with %s }}\n%s{{- toYaml . | nindent %d }}\n%s{{- end }}", pad, out.extraLabels, pad, indent, pad)
		}
		return s
	})
	if out.condition != "" {
		text = fmt.Sprintf("{{- if %s }}\n%s{{- end }}\n", out.condition, text)
	}
	return header + text, nil
}

func name(obj object) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}
