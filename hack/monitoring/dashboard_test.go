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
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// dashboard is what the tests read of docs/grafana-dashboard.json.
type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
			Multi      bool   `json:"multi"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

// grafanaIntervals are Grafana's global variables that stand for
// durations; the tests put a duration in their place to parse a query.
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")

// TestDashboardFollowsTheClusterVariable checks the Grafana dashboard
// against docs/metrics.md: it has a cluster variable whose All matches the
// series without the label too (a single cluster's); every query parses,
// selects documented metrics only, each by $job and $instance and, for a
// metric labelled cluster in the fleet mode, by $cluster; a query whose
// series carry cluster keeps it through its aggregations and names it in
// its legend, so that every panel is per cluster; and every ownergc_
// metric is shown by some panel.
func TestDashboardFollowsTheClusterVariable(t *testing.T) {
	var d dashboard
	if err := json.Unmarshal(readRepoFile(t, "docs/grafana-dashboard.json"), &d); err != nil {
		t.Fatal(err)
	}
	metrics := documentedMetrics(t)

	found := false
	for _, v := range d.Templating.List {
		if v.Name != "cluster" {
			continue
		}
		found = true
		if v.Type != "query" || !strings.Contains(v.Definition, ", cluster)") || !v.IncludeAll || !v.Multi {
			t.Errorf("the cluster variable should be a multi-value query of the label values of cluster, with All: %+v", v)
		}
		if all, err := regexp.Compile("^(?:" + v.AllValue + ")$"); err != nil || v.AllValue == "" || !all.MatchString("") || !all.MatchString("tenant-a") {
			t.Errorf("the cluster variable's All value %q should be a regular expression that matches any cluster and no cluster (a single cluster's series)", v.AllValue)
		}
	}
	if !found {
		t.Fatal("the dashboard has no cluster variable")
	}

	shown := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		for _, target := range p.Targets {
			expr := parse(t, grafanaIntervals.Replace(target.Expr))
			for _, vs := range selectors(expr) {
				m, _, ok := series(metrics, vs.Name)
				if !ok {
					t.Errorf("panel %q: %s is not documented in docs/metrics.md", p.Title, vs.Name)
					continue
				}
				shown[m.name] = true
				want := map[string]string{"job": "$job", "instance": "$instance"}
				if m.clusterInFleet {
					want["cluster"] = "$cluster"
				}
				for label, variable := range want {
					if !hasMatcher(vs.LabelMatchers, label, variable) {
						t.Errorf("panel %q: %s does not select %s=~%q", p.Title, vs, label, variable)
					}
				}
			}
			for _, m := range modes {
				outs, err := analyzer{metrics: metrics, mode: m}.outputs(expr)
				if err != nil {
					t.Errorf("panel %q, %s: %v", p.Title, m.name, err)
					continue
				}
				for _, o := range outs {
					if !m.fleet || !o.fromCluster {
						continue
					}
					if !o.labels["cluster"] {
						t.Errorf("panel %q: %s aggregates the clusters together (its series have the labels %v)", p.Title, target.Expr, o.labels)
					} else if !strings.Contains(target.LegendFormat, "{{cluster}}") {
						t.Errorf("panel %q: the legend %q of %s does not name the cluster", p.Title, target.LegendFormat, target.Expr)
					}
				}
			}
		}
	}
	for name := range metrics {
		if strings.HasPrefix(name, "ownergc_") && !shown[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// hasMatcher reports whether ms has label=~"variable".
func hasMatcher(ms []*labels.Matcher, label, variable string) bool {
	for _, m := range ms {
		if m.Name == label && m.Type == labels.MatchRegexp && m.Value == variable {
			return true
		}
	}
	return false
}
