// Command helmchart writes the parts of the Helm chart in dist/chart that are
// generated from config/: the CRDs (crds/), the ValidatingAdmissionPolicy
// that warns about GCPolicies that look mistaken (templates/admission), the
// RBAC (templates/rbac), the metrics Service (templates/metrics) and the
// Prometheus Operator objects (templates/prometheus). It reads the kustomize output of config/default and
// config/prometheus on its standard input and takes the chart directory as
// its argument; `make helm-chart` runs it:
//
//	{ kustomize build config/default; echo ---; kustomize build config/prometheus; } | go run ./hack/helmchart dist/chart
//
// The directories it writes are replaced whole, so a file left over from an
// object that config/ no longer has disappears. Everything else in the chart
// (Chart.yaml, values.yaml, templates/_helpers.tpl, NOTES.txt, the manager's
// Deployment and the GCPolicy) is written by hand; the install test checks
// that the Deployment renders as config/ has it.
//
// What changes from the kustomize output: the install namespace becomes the
// release namespace, the app.kubernetes.io/name label becomes the chart's
// labels, the Namespace is left out (helm install --create-namespace makes
// it), and `{{`/`}}` in text (alert templates) are escaped from Helm.
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

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const header = "{{- /* Generated from config/ by hack/helmchart (make helm-chart): do not edit. */ -}}\n"

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
}

var outputs = map[string]output{
	"CustomResourceDefinition":         {dir: "crds", verbatim: true},
	"ValidatingAdmissionPolicy":        {dir: "templates/admission"},
	"ValidatingAdmissionPolicyBinding": {dir: "templates/admission"},
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
		fmt.Fprintln(os.Stderr, "usage: kustomize build config/default | helmchart CHART_DIR")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "helmchart:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, chartDir string) error {
	objs, err := readObjects(in)
	if err != nil {
		return err
	}
	files, err := render(objs)
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

func readObjects(in io.Reader) ([]object, error) {
	var objs []object
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		obj := object{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
}

// render returns the chart files, by path relative to the chart.
func render(objs []object) (map[string]string, error) {
	installNamespace := ""
	for _, obj := range objs {
		if obj["kind"] == "Namespace" {
			installNamespace = name(obj)
		}
	}
	if installNamespace == "" {
		return nil, errors.New("no Namespace in the input: is it the output of kustomize build config/default?")
	}
	files := map[string]string{}
	for _, obj := range objs {
		kind, _ := obj["kind"].(string)
		if _, ok := skipped[kind]; ok {
			continue
		}
		out, ok := outputs[kind]
		if !ok {
			return nil, fmt.Errorf("%s %s: no place in the chart for this kind; teach hack/helmchart where it goes", kind, name(obj))
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
