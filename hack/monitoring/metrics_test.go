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
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// repoRoot is the ownergc repository, two levels up.
var repoRoot = filepath.Join("..", "..")

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// metric is a metric as docs/metrics.md documents it.
type metric struct {
	name, typ string
	// labels are the metric's own labels; cluster is among them only in
	// the fleet mode (fleetOnly).
	labels []string
	// fleetOnly: the metric exists only in the fleet mode.
	fleetOnly bool
	// clusterInFleet: in the fleet mode the metric carries `cluster`.
	clusterInFleet bool
}

// targetLabels are the labels Prometheus adds to every series it scrapes
// through the ServiceMonitor of config/prometheus.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// otherMetrics are the client-go and controller-runtime metrics that
// docs/metrics.md names in prose ("Queues", "controller-runtime"), with
// their labels; none has `cluster`.
var otherMetrics = []metric{
	{name: "workqueue_depth", typ: "gauge", labels: []string{"name"}},
	{name: "workqueue_adds_total", typ: "counter", labels: []string{"name"}},
	{name: "workqueue_queue_duration_seconds", typ: "histogram", labels: []string{"name"}},
	{name: "workqueue_work_duration_seconds", typ: "histogram", labels: []string{"name"}},
	{name: "workqueue_retries_total", typ: "counter", labels: []string{"name"}},
	{name: "workqueue_unfinished_work_seconds", typ: "gauge", labels: []string{"name"}},
	{name: "workqueue_longest_running_processor_seconds", typ: "gauge", labels: []string{"name"}},
	{name: "leader_election_master_status", typ: "gauge", labels: []string{"name"}},
}

// tableRow is a row of a metrics table of docs/metrics.md: | `name` | type | labels | meaning |.
var tableRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| (counter|gauge|histogram) \\| ([^|]*) \\|")

// backticked finds the names in a labels cell, each possibly followed by
// " (fleet mode)".
var backticked = regexp.MustCompile("`([a-z_]+)`( \\(fleet mode\\))?")

// documentedMetrics reads the metrics of docs/metrics.md's tables, and adds
// otherMetrics; each name once. A histogram's series are name_bucket (with
// le), name_sum and name_count.
func documentedMetrics(t *testing.T) map[string]metric {
	t.Helper()
	out := map[string]metric{}
	add := func(m metric) {
		if _, dup := out[m.name]; dup {
			t.Fatalf("docs/metrics.md documents %s twice", m.name)
		}
		out[m.name] = m
	}
	sc := bufio.NewScanner(strings.NewReader(string(readRepoFile(t, "docs/metrics.md"))))
	for sc.Scan() {
		row := tableRow.FindStringSubmatch(sc.Text())
		if row == nil {
			continue
		}
		m := metric{name: row[1], typ: row[2]}
		for _, l := range backticked.FindAllStringSubmatch(row[3], -1) {
			m.labels = append(m.labels, l[1])
			if l[1] == "cluster" {
				m.clusterInFleet = true
				// A cluster label not marked "(fleet mode)" is the
				// fleet mode's own metric's (ownergc_workqueue_*).
				m.fleetOnly = l[2] == ""
			}
		}
		add(m)
	}
	for _, m := range otherMetrics {
		add(m)
	}
	if len(out) < 30 {
		t.Fatalf("only %d metrics found in docs/metrics.md: has the tables' layout changed?", len(out))
	}
	return out
}

// series returns the metric a series name belongs to, and the labels of
// the series beyond the metric's own (le of a histogram's buckets).
func series(metrics map[string]metric, name string) (metric, []string, bool) {
	if m, ok := metrics[name]; ok && m.typ != "histogram" {
		return m, nil, true
	}
	for suffix, extra := range map[string][]string{"_bucket": {"le"}, "_sum": nil, "_count": nil} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if m, ok := metrics[base]; ok && m.typ == "histogram" {
				return m, extra, true
			}
		}
	}
	return metric{}, nil, false
}

// mode is single-cluster or fleet.
type mode struct {
	name  string
	fleet bool
}

var modes = []mode{{"single-cluster mode", false}, {"fleet mode", true}}

// labelSet is a set of label names.
type labelSet map[string]bool

func newLabelSet(names ...string) labelSet {
	s := labelSet{}
	for _, n := range names {
		s[n] = true
	}
	return s
}

func (s labelSet) String() string {
	var names []string
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return "{" + strings.Join(names, ", ") + "}"
}

// output is one kind of series an expression returns: the label names
// its series may carry, and whether it comes from series that carry
// `cluster`.
type output struct {
	labels      labelSet
	fromCluster bool
	// selectors are the vector selectors it comes from, for messages.
	selectors []string
}

// analyzer works out, for a mode, the label names of an expression's
// output series from the documented metrics' labels.
type analyzer struct {
	metrics map[string]metric
	mode    mode
}

// outputs returns the kinds of series expr returns (several for `or`;
// none for a scalar), or an error for a metric that is not documented or
// an expression it cannot follow.
func (a analyzer) outputs(expr parser.Expr) ([]output, error) {
	switch e := expr.(type) {
	case *parser.NumberLiteral, *parser.StringLiteral:
		return nil, nil
	case *parser.ParenExpr:
		return a.outputs(e.Expr)
	case *parser.UnaryExpr:
		return a.outputs(e.Expr)
	case *parser.StepInvariantExpr:
		return a.outputs(e.Expr)
	case *parser.MatrixSelector:
		return a.outputs(e.VectorSelector)
	case *parser.SubqueryExpr:
		return a.outputs(e.Expr)
	case *parser.VectorSelector:
		return a.selector(e)
	case *parser.Call:
		return a.call(e)
	case *parser.AggregateExpr:
		return a.aggregate(e)
	case *parser.BinaryExpr:
		return a.binary(e)
	}
	return nil, fmt.Errorf("%s: the test does not know %T", expr, expr)
}

func (a analyzer) selector(e *parser.VectorSelector) ([]output, error) {
	name := e.Name
	if name == "" {
		return nil, fmt.Errorf("%s: a selector without a metric name", e)
	}
	m, extra, ok := series(a.metrics, name)
	if !ok {
		return nil, fmt.Errorf("%s: %s is not documented in docs/metrics.md", e, name)
	}
	if m.fleetOnly && !a.mode.fleet {
		// The series do not exist in this mode: the selector selects
		// nothing.
		return nil, nil
	}
	labels := newLabelSet(slices.Concat(m.labels, extra, targetLabels)...)
	if !a.mode.fleet {
		delete(labels, "cluster")
	}
	return []output{{labels: labels, fromCluster: labels["cluster"], selectors: []string{e.String()}}}, nil
}

func (a analyzer) call(e *parser.Call) ([]output, error) {
	var outs []output
	found := false
	for i, arg := range e.Args {
		if t := e.Func.ArgTypes; i < len(t) && t[i] != parser.ValueTypeVector && t[i] != parser.ValueTypeMatrix {
			continue
		}
		o, err := a.outputs(arg)
		if err != nil {
			return nil, err
		}
		outs, found = o, true
		break
	}
	if !found {
		return nil, fmt.Errorf("%s: the test does not know which argument of %s gives its labels", e, e.Func.Name)
	}
	switch e.Func.Name {
	case "histogram_quantile", "histogram_fraction":
		outs = without(outs, "le")
	case "label_replace":
		dst, ok := e.Args[1].(*parser.StringLiteral)
		if !ok {
			return nil, fmt.Errorf("%s: label_replace's destination is not a string", e)
		}
		outs = with(outs, dst.Val)
	case "absent", "absent_over_time", "label_join", "sort_by_label", "sort_by_label_desc":
		return nil, fmt.Errorf("%s: the test does not follow %s", e, e.Func.Name)
	}
	return outs, nil
}

func (a analyzer) aggregate(e *parser.AggregateExpr) ([]output, error) {
	outs, err := a.outputs(e.Expr)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case parser.TOPK, parser.BOTTOMK, parser.LIMITK, parser.LIMIT_RATIO:
		return outs, nil // they keep their input's series
	}
	var res []output
	for _, o := range outs {
		kept := labelSet{}
		for l := range o.labels {
			if slices.Contains(e.Grouping, l) != e.Without {
				kept[l] = true
			}
		}
		if e.Op == parser.COUNT_VALUES {
			if p, ok := e.Param.(*parser.StringLiteral); ok {
				kept[p.Val] = true
			}
		}
		res = append(res, output{labels: kept, fromCluster: o.fromCluster, selectors: o.selectors})
	}
	return res, nil
}

func (a analyzer) binary(e *parser.BinaryExpr) ([]output, error) {
	lhs, err := a.outputs(e.LHS)
	if err != nil {
		return nil, err
	}
	rhs, err := a.outputs(e.RHS)
	if err != nil {
		return nil, err
	}
	lScalar, rScalar := e.LHS.Type() == parser.ValueTypeScalar, e.RHS.Type() == parser.ValueTypeScalar
	switch {
	case lScalar && rScalar:
		return nil, nil
	case rScalar:
		return lhs, nil
	case lScalar:
		return rhs, nil
	}
	vm := e.VectorMatching
	switch e.Op {
	case parser.LOR:
		return slices.Concat(lhs, rhs), nil
	case parser.LAND, parser.LUNLESS:
		// The left side's series, filtered by the right side.
		return lhs, nil
	}
	side := lhs
	if vm.Card == parser.CardOneToMany {
		side = rhs
	}
	var res []output
	for _, o := range side {
		labels := labelSet{}
		for l := range o.labels {
			keep := true
			if vm.Card == parser.CardOneToOne {
				keep = slices.Contains(vm.MatchingLabels, l) == vm.On
			}
			if keep {
				labels[l] = true
			}
		}
		for _, l := range vm.Include {
			labels[l] = true
		}
		fromCluster := o.fromCluster
		for _, r := range slices.Concat(lhs, rhs) {
			fromCluster = fromCluster || r.fromCluster
		}
		res = append(res, output{labels: labels, fromCluster: fromCluster, selectors: o.selectors})
	}
	return res, nil
}

func without(outs []output, label string) []output {
	res := make([]output, len(outs))
	for i, o := range outs {
		labels := labelSet{}
		for l := range o.labels {
			if l != label {
				labels[l] = true
			}
		}
		res[i] = output{labels: labels, fromCluster: o.fromCluster, selectors: o.selectors}
	}
	return res
}

func with(outs []output, label string) []output {
	res := make([]output, len(outs))
	for i, o := range outs {
		labels := newLabelSet(label)
		for l := range o.labels {
			labels[l] = true
		}
		res[i] = output{labels: labels, fromCluster: o.fromCluster, selectors: o.selectors}
	}
	return res
}

// parse parses a PromQL expression.
func parse(t *testing.T, expr string) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("parsing %q: %v", expr, err)
	}
	return e
}

// selectors returns the vector selectors of expr.
func selectors(expr parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// TestTheAnalysisFollowsPromQL checks the analysis on expressions whose
// output labels are known.
func TestTheAnalysisFollowsPromQL(t *testing.T) {
	metrics := documentedMetrics(t)
	fleet := analyzer{metrics: metrics, mode: mode{"fleet mode", true}}
	for expr, want := range map[string][]string{
		`max by (namespace, job) (ownergc_failed_resources) > 0`:                                                                               {"{job, namespace}"},
		`max by (namespace, job, cluster) (ownergc_failed_resources) > 0`:                                                                      {"{cluster, job, namespace}"},
		`sum without (instance, pod) (rate(ownergc_api_errors_total[5m]))`:                                                                     {"{cluster, container, endpoint, job, namespace, service, verb}"},
		`histogram_quantile(0.9, sum by (cluster, le) (rate(ownergc_owner_absent_to_dependent_deleted_seconds_bucket[5m])))`:                   {"{cluster}"},
		`sum by (job, cluster) (rate(ownergc_api_errors_total[5m])) / on (job) group_left sum by (job) (rate(ownergc_api_requests_total[5m]))`: {"{cluster, job}"},
		`sum by (job, cluster) (ownergc_graph_nodes) / on (job) sum by (job) (ownergc_graph_nodes)`:                                            {"{job}"},
		`workqueue_depth{name="x"} or ownergc_workqueue_depth{name="x"}`:                                                                       {"{container, endpoint, instance, job, name, namespace, pod, service}", "{cluster, container, endpoint, instance, job, name, namespace, pod, service}"},
		`ownergc_graph_nodes unless on (job, instance) leader_election_master_status == 0`:                                                     {"{cluster, container, endpoint, instance, job, namespace, pod, service}"},
	} {
		outs, err := fleet.outputs(parse(t, expr))
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		var got []string
		for _, o := range outs {
			got = append(got, o.labels.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: outputs %v, want %v", expr, got, want)
		}
	}
	if _, err := fleet.outputs(parse(t, `rate(ownergc_undocumented_total[5m])`)); err == nil {
		t.Error("an undocumented metric should be an error")
	}
	m := metrics["ownergc_deleted_objects_total"]
	if !m.clusterInFleet || m.fleetOnly || !slices.Contains(m.labels, "propagation") {
		t.Errorf("ownergc_deleted_objects_total read as %+v", m)
	}
	if m := metrics["ownergc_workqueue_depth"]; !m.fleetOnly {
		t.Errorf("ownergc_workqueue_depth read as %+v: it exists in the fleet mode only", m)
	}
}
