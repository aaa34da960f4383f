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
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var (
	// documentedMetric finds the metric names docs/metrics.md lists.
	documentedMetric = regexp.MustCompile("`((?:ownergc|workqueue|leader_election)_[a-z_]+)`")
	queriedMetric    = regexp.MustCompile(`\b(?:ownergc|workqueue|leader_election)_[a-z_]+\b`)
	quoted           = regexp.MustCompile(`"[^"]*"`)
	// queueMatcher finds exact matches on a workqueue name.
	queueMatcher = regexp.MustCompile(`\bname="(ownergc_[a-z_]+)"`)
)

// TestAlertsAndDashboardQueryDocumentedMetrics checks that the alerts of
// config/prometheus/rules.yaml and docs/grafana-dashboard.json query only
// metrics that docs/metrics.md documents, and only the queue names it
// documents: a renamed or missing metric would make an alert that never
// fires, or an empty panel.
func TestAlertsAndDashboardQueryDocumentedMetrics(t *testing.T) {
	docs := string(readRepoFile(t, "docs/metrics.md"))
	documented := map[string]bool{}
	for _, m := range documentedMetric.FindAllStringSubmatch(docs, -1) {
		documented[m[1]] = true
	}
	if !documented["ownergc_graph_nodes"] || !documented["workqueue_depth"] {
		t.Fatalf("found no metric names in docs/metrics.md: %v", documented)
	}

	queries := map[string][]string{}
	for _, rules := range objectsByKind(t, readRepoFile(t, "config/prometheus/rules.yaml")) {
		groups, _, _ := unstructured.NestedSlice(rules.Object, "spec", "groups")
		for _, g := range groups {
			for _, r := range g.(map[string]any)["rules"].([]any) {
				r := r.(map[string]any)
				queries["config/prometheus/rules.yaml "+r["alert"].(string)] = []string{r["expr"].(string)}
			}
		}
	}
	if len(queries) == 0 {
		t.Fatal("no alert found in config/prometheus/rules.yaml")
	}
	var dashboard any
	if err := json.Unmarshal(readRepoFile(t, "docs/grafana-dashboard.json"), &dashboard); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				path += " " + title
			}
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query") {
					queries[path] = append(queries[path], s)
				}
				walk(path, x)
			}
		case []any:
			for _, x := range v {
				walk(path, x)
			}
		}
	}
	walk("docs/grafana-dashboard.json", dashboard)

	queues := map[string]bool{}
	for _, m := range queueMatcher.FindAllStringSubmatch(docs, -1) {
		queues[m[1]] = true
	}
	for where, exprs := range queries {
		for _, expr := range exprs {
			for _, m := range queueMatcher.FindAllStringSubmatch(expr, -1) {
				if !queues[m[1]] {
					t.Errorf("%s: queue %q is not in docs/metrics.md: %s", where, m[1], expr)
				}
			}
			for _, name := range queriedMetric.FindAllString(quoted.ReplaceAllString(expr, `""`), -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && documented[trimmed] {
						base = trimmed
					}
				}
				if !documented[base] {
					t.Errorf("%s queries %s, which docs/metrics.md does not document: %s", where, name, expr)
				}
			}
		}
	}
}
