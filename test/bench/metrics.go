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
	"bytes"
	"context"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// reqKey identifies a family of API requests in apiserver_request_total.
type reqKey struct {
	verb, resource, subresource string
}

func (k reqKey) String() string {
	s := k.verb + " " + k.resource
	if k.subresource != "" {
		s += "/" + k.subresource
	}
	return s
}

// requests counts API requests by verb and resource.
type requests map[reqKey]float64

// apiserverMetrics fetches and parses the kube-apiserver's /metrics.
func (b *bench) apiserverMetrics() (map[string]*dto.MetricFamily, error) { return metricsOf(b.cs) }

// metricsOf fetches and parses the /metrics of the API server of cs.
func metricsOf(cs kubernetes.Interface) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the kube-apiserver's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing the kube-apiserver's /metrics: %w", err)
	}
	return families, nil
}

// watchListSeconds sums apiserver_watch_list_duration_seconds (the time the
// kube-apiserver took to stream initial lists to informers) for a resource.
func (b *bench) watchListSeconds(resource string) (sum float64, count uint64, err error) {
	families, err := b.apiserverMetrics()
	if err != nil {
		return 0, 0, err
	}
	for _, m := range families["apiserver_watch_list_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "resource" && l.GetValue() == resource {
				sum += m.GetHistogram().GetSampleSum()
				count += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return sum, count, nil
}

// scrape reads apiserver_request_total from the kube-apiserver's /metrics,
// summed over every label but verb, resource and subresource.
func (b *bench) scrape() (requests, error) { return scrapeOf(b.cs) }

// scrapeOf is scrape for the API server of cs.
func scrapeOf(cs kubernetes.Interface) (requests, error) {
	families, err := metricsOf(cs)
	if err != nil {
		return nil, err
	}
	out := requests{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return nil, fmt.Errorf("the kube-apiserver's /metrics has no apiserver_request_total")
	}
	for _, m := range fam.GetMetric() {
		var k reqKey
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				k.verb = l.GetValue()
			case "resource":
				k.resource = l.GetValue()
			case "subresource":
				k.subresource = l.GetValue()
			}
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out, nil
}

// minus returns r - o.
func (r requests) minus(o requests) requests { return countsSince(r, o) }

// countsSince is what counters counted between then and now: each
// non-zero difference.
func countsSince[K comparable, V int | float64](now, then map[K]V) map[K]V {
	out := make(map[K]V, len(now))
	for k, v := range now {
		if d := v - then[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// backgroundResources are touched by the kube-apiserver's own controllers
// (its identity lease, the kubernetes Service's endpoints, system
// namespaces, priority-and-fairness objects ...) whatever runs against it;
// neither collector writes them and no workload creates them.
var backgroundResources = map[string]bool{
	"leases": true, "endpoints": true, "endpointslices": true, "services": true, "namespaces": true,
	"flowschemas": true, "prioritylevelconfigurations": true, "apiservices": true,
	"customresourcedefinitions": true, "clusterroles": true, "clusterrolebindings": true,
	"roles": true, "rolebindings": true, "priorityclasses": true, "validatingadmissionpolicies": true,
	"storageversions": true,
}

// collectorRequests keeps what a collector sent: resource requests other
// than LIST and WATCH (the benchmark's own reads are LISTs and WATCHes, and
// a collector's LIST/WATCH are its informers, not per-object cost), on the
// resources a workload touches, minus the benchmark's own writes (own).
func (r requests) collectorRequests(own requests) requests {
	out := requests{}
	for k, v := range r {
		if k.resource == "" || k.verb == "LIST" || k.verb == "WATCH" || backgroundResources[k.resource] {
			continue
		}
		v -= own[k]
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func (r requests) total() float64 {
	var t float64
	for _, v := range r {
		t += v
	}
	return t
}

// perObject formats the requests divided by n, largest first.
func (r requests) perObject(n int) string {
	return mostFirst(r, reqKey.String, float64(n), "%s %.3f")
}
