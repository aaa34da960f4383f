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

package monitoring

import (
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// rule is an alerting rule of config/prometheus/rules.yaml.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Annotations map[string]string `json:"annotations"`
}

func alertingRules(t *testing.T) []rule {
	t.Helper()
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "config/prometheus/rules.yaml"), &pr); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, g := range pr.Spec.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("no rules in config/prometheus/rules.yaml")
	}
	return out
}

// TestAlertsKeepTheClusterLabel evaluates the label sets of each alert's
// expression against the metrics docs/metrics.md documents: in the fleet
// mode, every kind of series an alert fires with that comes from series
// labelled `cluster` keeps the label, so that the alert names the member;
// in both modes the expression uses documented metrics only and fires
// with some series; and a description that can name the cluster does.
func TestAlertsKeepTheClusterLabel(t *testing.T) {
	metrics := documentedMetrics(t)
	for _, r := range alertingRules(t) {
		if r.Alert == "" {
			continue
		}
		t.Run(r.Alert, func(t *testing.T) {
			expr := parse(t, r.Expr)
			keepsCluster := false
			for _, m := range modes {
				outs, err := analyzer{metrics: metrics, mode: m}.outputs(expr)
				if err != nil {
					t.Fatalf("%s: %v", m.name, err)
				}
				if len(outs) == 0 {
					t.Errorf("%s: the expression selects no series", m.name)
				}
				for _, o := range outs {
					if m.fleet && o.fromCluster && !o.labels["cluster"] {
						t.Errorf("%s: the series of %v, labelled cluster, lose it: the alert fires with the labels %v",
							m.name, o.selectors, o.labels)
					}
					if !m.fleet && o.labels["cluster"] {
						t.Errorf("%s: the labels %v have cluster", m.name, o.labels)
					}
					keepsCluster = keepsCluster || o.labels["cluster"]
				}
			}
			if keepsCluster && !strings.Contains(r.Annotations["description"], "$labels.cluster") {
				t.Errorf("its series carry cluster in the fleet mode, but its description does not name it ($labels.cluster)")
			}
		})
	}
}

// TestAlertTemplatesParse parses each annotation as Prometheus does: a Go
// template with $labels and $value defined, and Prometheus' functions.
func TestAlertTemplatesParse(t *testing.T) {
	funcs := template.FuncMap{}
	for _, f := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp",
		"query", "first", "label", "value", "strvalue", "args", "reReplaceAll", "safeHtml", "match", "title", "toUpper",
		"toLower", "graphLink", "tableLink", "sortByLabel", "stripPort", "stripDomain", "pathPrefix", "externalURL", "parseDuration", "toTime", "toDuration", "now"} {
		funcs[f] = func(...any) any { return nil }
	}
	for _, r := range alertingRules(t) {
		for name, text := range r.Annotations {
			defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
			if _, err := template.New(r.Alert + "/" + name).Funcs(funcs).Parse(defs + text); err != nil {
				t.Errorf("%s: annotation %s: %v", r.Alert, name, err)
			}
		}
	}
}

// TestOperatingDocListsTheAlerts checks that docs/operating.md's table of
// alerts has every alert of config/prometheus.
func TestOperatingDocListsTheAlerts(t *testing.T) {
	doc := string(readRepoFile(t, "docs/operating.md"))
	for _, r := range alertingRules(t) {
		if r.Alert != "" && !strings.Contains(doc, "| `"+r.Alert+"` |") {
			t.Errorf("docs/operating.md's table of alerts has no row for %s", r.Alert)
		}
	}
}
