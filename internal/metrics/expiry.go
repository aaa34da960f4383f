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
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Expiry are the expiry collector's metrics (internal/expiry).
type Expiry struct {
	// Expired counts the objects it deleted, by group, resource and
	// source: ttl, expires (the annotation that gave the time) or rule.
	Expired *prometheus.CounterVec
	// Scheduled is the number of objects whose expiry is scheduled
	// (leader only).
	Scheduled prometheus.Gauge
	// Invalid counts the objects found with an expiry annotation that
	// cannot be read (each once per value).
	Invalid prometheus.Counter
}

// Label values of ownergc_expired_total's source.
const (
	ExpirySourceTTL     = "ttl"
	ExpirySourceExpires = "expires"
	ExpirySourceRule    = "rule"
)

var (
	expiredOpts = prometheus.CounterOpts{
		Name: "ownergc_expired_total",
		Help: "Objects the expiry collector deleted because their time to live had passed, by group, resource and source (ttl, expires: the annotation that gave the time; rule: a rule of the GCPolicy).",
	}
	expiryScheduledOpts = prometheus.GaugeOpts{
		Name: "ownergc_expiry_scheduled",
		Help: "Objects whose expiry the expiry collector has scheduled: they carry an expiry annotation or match a rule, and expire later (leader only).",
	}
	expiryInvalidOpts = prometheus.CounterOpts{
		Name: "ownergc_expiry_invalid_total",
		Help: "Objects found with an expiry annotation that cannot be read (each value once): they do not expire, and each has a Warning event InvalidExpiry.",
	}
)

var expiredLabels = []string{"group", "resource", "source"}

// newExpiry returns the expiry metrics, labelled with labels (the fleet's
// cluster label, or none) first.
func newExpiry(labels ...string) *expiryVecs {
	return &expiryVecs{
		expired:   prometheus.NewCounterVec(expiredOpts, slices.Concat(labels, expiredLabels)),
		scheduled: prometheus.NewGaugeVec(expiryScheduledOpts, labels),
		invalid:   prometheus.NewCounterVec(expiryInvalidOpts, labels),
	}
}

// expiryVecs are the vectors of the expiry metrics: without a label in
// the single-cluster mode, with the cluster label in the fleet's.
type expiryVecs struct {
	expired   *prometheus.CounterVec
	scheduled *prometheus.GaugeVec
	invalid   *prometheus.CounterVec
}

func (v *expiryVecs) collectors() []prometheus.Collector {
	return []prometheus.Collector{v.expired, v.scheduled, v.invalid}
}

// with returns the metrics of the labels l (empty: the single-cluster
// mode's).
func (v *expiryVecs) with(l prometheus.Labels) *Expiry {
	return &Expiry{Expired: v.expired.MustCurryWith(l), Scheduled: v.scheduled.With(l), Invalid: v.invalid.With(l)}
}

// singleExpiry are the single-cluster mode's.
var singleExpiry = newExpiry()

// ExpiryMetrics are the single-cluster mode's expiry metrics.
var ExpiryMetrics = singleExpiry.with(prometheus.Labels{})
