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

package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// queueLabel names the queue in the fleet's workqueue metrics, as in
// client-go's.
const queueLabel = "name"

// queueVecs are the fleet's workqueue metrics: the kinds of metric
// controller-runtime registers for client-go's queues (workqueue_*), named
// ownergc_workqueue_* and labelled with the cluster and the queue's name.
type queueVecs struct {
	depth, unfinishedWork, longestRunningProcessor *prometheus.GaugeVec
	adds, retries                                  *prometheus.CounterVec
	queueDuration, workDuration                    *prometheus.HistogramVec
}

func newQueueVecs() *queueVecs {
	labels := []string{ClusterLabel, queueLabel}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ownergc_workqueue_" + name, Help: help}, labels)
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ownergc_workqueue_" + name, Help: help}, labels)
	}
	// From 10 ns to 1000 s by factors of 10, as controller-runtime's.
	seconds := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ownergc_workqueue_" + name, Help: help,
			Buckets:                     prometheus.ExponentialBuckets(1e-8, 10, 12),
			NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour,
		}, labels)
	}
	return &queueVecs{
		depth: gauge("depth", "Items waiting in the queue, by cluster and queue."),
		unfinishedWork: gauge("unfinished_work_seconds",
			"Seconds of work in progress not observed by work_duration yet, by cluster and queue; a steady rise means stuck workers."),
		longestRunningProcessor: gauge("longest_running_processor_seconds",
			"Seconds the longest item in progress has been processed for, by cluster and queue."),
		adds:          counter("adds_total", "Items added to the queue, by cluster and queue."),
		retries:       counter("retries_total", "Items added to the queue again after a delay (rate-limited retries), by cluster and queue."),
		queueDuration: seconds("queue_duration_seconds", "Seconds an item waits in the queue before a worker takes it, by cluster and queue."),
		workDuration:  seconds("work_duration_seconds", "Seconds a worker takes to process an item, by cluster and queue."),
	}
}

func (v *queueVecs) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		v.depth, v.unfinishedWork, v.longestRunningProcessor, v.adds, v.retries, v.queueDuration, v.workDuration,
	}
}

// QueueGaugesPeriod is how often a fleet engine's queue refreshes its
// unfinished-work and longest-running-processor gauges (Set.QueueClock):
// scrapes come every 15 s or more, and an idle member's queues then cost a
// wake-up every few seconds rather than fourteen a second. The delaying
// queues' heartbeat, a 10 s ticker, is unchanged.
const QueueGaugesPeriod = 10 * time.Second

// slowTickers is a clock (the real one, but in tests) whose tickers tick no
// more often than every min.
type slowTickers struct {
	clock.WithTicker
	min time.Duration
}

// NewTicker implements clock.WithTicker.
func (c slowTickers) NewTicker(d time.Duration) clock.Ticker {
	return c.WithTicker.NewTicker(max(d, c.min))
}

// queueMetrics is the workqueue.MetricsProvider of one cluster's engine in
// the fleet mode. client-go asks it for a queue's metrics once, when the
// queue is created, and the queue (and its goroutine that sets the
// unfinished-work gauges) writes to those series only: once Forget has
// deleted them, a late write goes to series no registry reports. After
// forget, it hands out metrics that report nothing, so that no queue
// created later brings the cluster's series back either.
type queueMetrics struct {
	vecs    *queueVecs
	cluster string

	mu        sync.Mutex
	forgotten bool
}

// series calls create, unless the cluster is forgotten.
func (q *queueMetrics) series(create func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.forgotten {
		create()
	}
}

func (q *queueMetrics) forget() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgotten = true
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	var m workqueue.GaugeMetric = discard{}
	q.series(func() { m = q.vecs.depth.WithLabelValues(q.cluster, name) })
	return m
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	var m workqueue.CounterMetric = discard{}
	q.series(func() { m = q.vecs.adds.WithLabelValues(q.cluster, name) })
	return m
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	var m workqueue.HistogramMetric = discard{}
	q.series(func() { m = q.vecs.queueDuration.WithLabelValues(q.cluster, name) })
	return m
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	var m workqueue.HistogramMetric = discard{}
	q.series(func() { m = q.vecs.workDuration.WithLabelValues(q.cluster, name) })
	return m
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	var m workqueue.SettableGaugeMetric = discard{}
	q.series(func() { m = q.vecs.unfinishedWork.WithLabelValues(q.cluster, name) })
	return m
}

// NewLongestRunningProcessorSecondsMetric implements
// workqueue.MetricsProvider.
func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	var m workqueue.SettableGaugeMetric = discard{}
	q.series(func() { m = q.vecs.longestRunningProcessor.WithLabelValues(q.cluster, name) })
	return m
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	var m workqueue.CounterMetric = discard{}
	q.series(func() { m = q.vecs.retries.WithLabelValues(q.cluster, name) })
	return m
}

// discard is a metric that reports nothing.
type discard struct{}

func (discard) Inc()            {}
func (discard) Dec()            {}
func (discard) Set(float64)     {}
func (discard) Observe(float64) {}
