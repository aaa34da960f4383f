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
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// The expiry workload's sizes and spread.
const (
	expiryObjects = 10000
	expirySpread  = 60 * time.Second
	// expiryLead is how long after the creations begin the first object
	// expires: the objects are created in the order of their times, ahead
	// of them.
	expiryLead = 45 * time.Second
	// expiryMemoryObjects are the objects of the memory half.
	expiryMemoryObjects = 50000
)

// expiryRate is ownergc's client rate in the expiry workload: above the
// deletion rate (N over the spread, on average; more where times bunch).
var expiryRate = rate{qps: 500, burst: 500}

// expiryResult is the expiry workload's figures.
type expiryResult struct {
	// lateness is, for each expired object, its deletion event (the
	// benchmark's informer) minus its expiry time, sorted.
	lateness []time.Duration
	// early counts the objects deleted before their time; createdLate
	// those created after it (their lateness counts from the creation).
	early, createdLate int
	// reqs are ownergc's requests on ConfigMaps (LIST and WATCH excluded)
	// from before the first expiry time until the last deletion; others
	// its requests on other resources meanwhile.
	reqs, others requests
	// lists are the LIST requests, of any resource but what the
	// kube-apiserver lists itself (apiserverLists), in that window;
	// listsByResource all of them, by resource.
	lists           float64
	listsByResource string
	// rssOff and rssOn are ownergc's resident memory with M objects
	// without annotation, expiry disabled and enabled with one rule for
	// another resource (medians of the rounds); the samples each round's.
	rssOff, rssOn         int64
	samplesOff, samplesOn []int64
	// listsLive are the LIST requests after expiry was enabled live,
	// counted as lists are.
	listsLive           float64
	listsLiveByResource string
}

// apiserverLists are the resources the kube-apiserver lists through its own
// API on a period, whatever its clients do: its repair loops of Service IPs
// and node ports LIST services every 3 minutes (seen on an idle control
// plane of this repository's version: one LIST of services every 3 minutes,
// no other). A window of a minute or two catches one or not.
var apiserverLists = map[string]bool{"services": true}

// countLists counts the LIST requests of a scrape difference, but those of
// apiserverLists, and names every LIST by resource.
func countLists(delta requests) (n float64, byResource string) {
	all := map[string]float64{}
	for k, v := range delta {
		if k.verb != "LIST" {
			continue
		}
		all[k.resource] += v
		if !apiserverLists[k.resource] {
			n += v
		}
	}
	keys := slices.Sorted(maps.Keys(all))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, all[k]))
	}
	if len(parts) == 0 {
		return n, "none"
	}
	return n, strings.Join(parts, ", ")
}

func (e *expiryResult) quantile(q float64) time.Duration {
	if len(e.lateness) == 0 {
		return 0
	}
	return e.lateness[min(len(e.lateness)-1, int(q*float64(len(e.lateness))))]
}

// expiry runs the expiry workload: N objects whose times spread over a
// minute, each to be deleted within a second of its time with one request;
// and M objects without annotation, with expiry off and on (one rule for
// another resource), for the memory it costs and the lists it makes.
func (b *bench) expiry() {
	b.logf("Workload expiry: %d objects expiring over %s (ownergc at %s), then %d objects without annotation, expiry off and on", expiryObjects, expirySpread, expiryRate, expiryMemoryObjects)
	res := &expiryResult{}
	b.res.expiry = res
	if err := b.expiryTimes(res); err != nil {
		b.res.fail("expiry", ownergc, err)
		return
	}
	b.logf("  lateness: median %s, p99 %s, max %s; %d deleted before their time, %d created after it; requests per expired object: %s; LIST requests meanwhile: %.0f (all LISTs, the kube-apiserver's own included: %s)",
		res.quantile(0.5), res.quantile(0.99), res.quantile(1), res.early, res.createdLate, res.reqs.perObject(len(res.lateness)), res.lists, res.listsByResource)
	if err := b.expiryMemory(res); err != nil {
		b.res.fail("expiry-memory", ownergc, err)
		return
	}
	b.logf("  resident memory with %d objects: %.1f MiB expiry off, %.1f MiB on: %.1f bytes/object; LIST requests after expiry was enabled live: %.0f (all LISTs: %s)",
		expiryMemoryObjects, mib(res.rssOff), mib(res.rssOn), float64(res.rssOn-res.rssOff)/expiryMemoryObjects, res.listsLive, res.listsLiveByResource)
}

// setExpiry merges spec.collectors.expiry into the GCPolicy default (in
// Enforce), creating it when missing.
func (b *bench) setExpiry(expiry map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := map[string]any{"mode": "Enforce", "collectors": map[string]any{"expiry": expiry}}
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = b.dyn.Resource(gcPolicies).Patch(ctx, "default", types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ownergc.io/v1alpha1", "kind": "GCPolicy", "metadata": map[string]any{"name": "default"}, "spec": spec,
		}}
		_, err = b.dyn.Resource(gcPolicies).Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("setting spec.collectors.expiry of GCPolicy default: %w", err)
	}
	return nil
}

// expiryStatus reads status.collectors.expiry of the GCPolicy default.
func (b *bench) expiryStatus() (enabled, synced bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := b.dyn.Resource(gcPolicies).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		return false, false, err
	}
	enabled, _, _ = unstructured.NestedBool(p.Object, "status", "collectors", "expiry", "enabled")
	synced, _, _ = unstructured.NestedBool(p.Object, "status", "collectors", "expiry", "synced")
	return enabled, synced, nil
}

// expiryTimes measures the schedule: N ConfigMaps annotated
// ownergc.io/expires at times spread at random over the spread, created in
// the order of their times while ownergc runs, each deletion observed by an
// informer of the benchmark.
func (b *bench) expiryTimes(res *expiryResult) error {
	if err := b.setExpiry(map[string]any{"enabled": true, "rules": nil, "warnBefore": nil}); err != nil {
		return err
	}
	ns, err := b.newNamespace("expiry")
	if err != nil {
		return err
	}
	defer b.empty(ns)
	p, err := b.startCollector(ownergc, expiryRate, "expiry")
	if err != nil {
		return err
	}
	defer p.stop()
	if err := pollUntil(time.Minute, p.Alive, func() (bool, string) {
		enabled, synced, err := b.expiryStatus()
		return err == nil && enabled && synced, fmt.Sprintf("status.collectors.expiry enabled %t, synced %t (%v)", enabled, synced, err)
	}); err != nil {
		return err
	}

	gone, stop, err := b.watchDeletions(ns)
	if err != nil {
		return err
	}
	defer stop()
	b.waitQuiet(p)
	before, err := b.scrape()
	if err != nil {
		return err
	}
	r := rand.New(rand.NewSource(26))
	offsets := make([]time.Duration, expiryObjects)
	for i := range offsets {
		offsets[i] = time.Duration(r.Int63n(int64(expirySpread)))
	}
	slices.Sort(offsets)
	first := time.Now().Add(expiryLead)
	at := make([]time.Time, expiryObjects)
	created := make([]time.Time, expiryObjects)
	for i, o := range offsets {
		at[i] = first.Add(o)
	}
	start := time.Now()
	// In the order of their times, a few at a time: ahead of them.
	if _, err := b.createConfigMaps(ns, expiryObjects, func(i int) *corev1.ConfigMap {
		created[i] = time.Now()
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("exp-%05d", i),
			Annotations: map[string]string{"ownergc.io/expires": at[i].UTC().Format(time.RFC3339Nano)}}}
	}); err != nil {
		return err
	}
	b.logf("  created %d objects in %s; the first expires %s after the creations began", expiryObjects, time.Since(start).Round(time.Millisecond), expiryLead)
	deadline := at[len(at)-1].Add(2 * time.Minute)
	for {
		if err := p.Alive(); err != nil {
			return err
		}
		n := gone.count()
		if n == expiryObjects {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d objects deleted 2 minutes after the last one's time", n, expiryObjects)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(trailing)
	after, err := b.scrape()
	if err != nil {
		return err
	}
	delta := after.minus(before)
	res.reqs, res.others = requests{}, requests{}
	for k, v := range delta.collectorRequests(requests{}) {
		if k.resource == "configmaps" {
			res.reqs[k] = v
		} else {
			res.others[k] = v
		}
	}
	// The benchmark's own creates.
	res.reqs[reqKey{verb: "POST", resource: "configmaps"}] -= expiryObjects
	if res.reqs[reqKey{verb: "POST", resource: "configmaps"}] == 0 {
		delete(res.reqs, reqKey{verb: "POST", resource: "configmaps"})
	}
	res.lists, res.listsByResource = countLists(delta)
	times := gone.times()
	for i := range expiryObjects {
		due := at[i]
		if created[i].After(due) {
			res.createdLate++
			due = created[i]
		}
		t, ok := times[fmt.Sprintf("exp-%05d", i)]
		if !ok {
			return fmt.Errorf("no deletion observed of exp-%05d", i)
		}
		late := t.Sub(at[i])
		if late < 0 {
			res.early++
		}
		res.lateness = append(res.lateness, t.Sub(due))
	}
	sort.Slice(res.lateness, func(i, j int) bool { return res.lateness[i] < res.lateness[j] })
	return nil
}

// deletions records when the benchmark's informer saw each ConfigMap of
// a namespace deleted.
type deletions struct {
	mu   sync.Mutex
	gone map[string]time.Time
}

func (d *deletions) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.gone)
}

func (d *deletions) times() map[string]time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gone
}

// watchDeletions starts an informer on the ConfigMaps of ns that records
// each deletion's time; stop stops it.
func (b *bench) watchDeletions(ns string) (*deletions, func(), error) {
	d := &deletions{gone: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(b.cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		now := time.Now()
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			d.mu.Lock()
			d.gone[cm.Name] = now
			d.mu.Unlock()
		}
	}}); err != nil {
		cancel()
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, nil, fmt.Errorf("the benchmark's informer did not sync")
	}
	return d, cancel, nil
}

// expiryMemory measures what expiry costs an object that does not expire:
// M ConfigMaps without annotation; ownergc's resident memory with expiry
// off, and with expiry on and one rule for another resource (Secrets of
// another namespace), alternating, the median of each. Then, with ownergc
// running, expiry is enabled live and the LIST requests that follow are
// counted.
func (b *bench) expiryMemory(res *expiryResult) error {
	ns, err := b.newNamespace("expiry-memory")
	if err != nil {
		return err
	}
	other, err := b.newNamespace("expiry-rule")
	if err != nil {
		return err
	}
	defer b.empty(ns)
	start := time.Now()
	if _, err := b.createConfigMaps(ns, expiryMemoryObjects, func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%06d", i), Labels: map[string]string{"app": "bench"}}}
	}); err != nil {
		return err
	}
	b.logf("  created %d objects without annotation in %s", expiryMemoryObjects, time.Since(start).Round(time.Millisecond))
	off := map[string]any{"enabled": false, "rules": nil}
	on := map[string]any{"enabled": true, "rules": []any{map[string]any{"group": "", "resource": "secrets", "namespaces": []any{other}, "after": "168h"}}}
	measure := func(tag string, expiry map[string]any) (int64, error) {
		if err := b.setExpiry(expiry); err != nil {
			return 0, err
		}
		b.waitQuiet(nil)
		p, err := b.startCollector(ownergc, equalQPS, tag)
		if err != nil {
			return 0, err
		}
		defer p.stop()
		if expiry["enabled"] == true {
			if err := pollUntil(time.Minute, p.Alive, func() (bool, string) {
				_, synced, err := b.expiryStatus()
				return err == nil && synced, fmt.Sprintf("status.collectors.expiry synced %t (%v)", synced, err)
			}); err != nil {
				return 0, err
			}
		}
		return steadyRSS(p)
	}
	for round := range b.rounds {
		order := []bool{false, true}
		if round%2 == 1 {
			order = []bool{true, false}
		}
		for _, enabled := range order {
			tag, expiry := "expiry-off", off
			if enabled {
				tag, expiry = "expiry-on", on
			}
			rss, err := measure(fmt.Sprintf("%s-%d", tag, round+1), expiry)
			if err != nil {
				return err
			}
			if enabled {
				res.samplesOn = append(res.samplesOn, rss)
			} else {
				res.samplesOff = append(res.samplesOff, rss)
			}
			b.logf("    %s, round %d: %.1f MiB", tag, round+1, mib(rss))
		}
	}
	res.rssOff, res.rssOn = medianInt(res.samplesOff), medianInt(res.samplesOn)

	// Enabled live: no list follows.
	if err := b.setExpiry(off); err != nil {
		return err
	}
	p, err := b.startCollector(ownergc, equalQPS, "expiry-live")
	if err != nil {
		return err
	}
	defer p.stop()
	b.waitQuiet(p)
	before, err := b.scrape()
	if err != nil {
		return err
	}
	if err := b.setExpiry(on); err != nil {
		return err
	}
	if err := pollUntil(time.Minute, p.Alive, func() (bool, string) {
		enabled, synced, err := b.expiryStatus()
		return err == nil && enabled && synced, fmt.Sprintf("status.collectors.expiry enabled %t, synced %t (%v)", enabled, synced, err)
	}); err != nil {
		return err
	}
	time.Sleep(10 * time.Second)
	after, err := b.scrape()
	if err != nil {
		return err
	}
	res.listsLive, res.listsLiveByResource = countLists(after.minus(before))
	return nil
}

func medianInt(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// expiryRows are the expiry workload's rows of the table: ownergc's alone
// (kube-controller-manager has no expiry).
func (b *bench) expiryRows() []row {
	r := b.res
	na := notApplicable()
	get := func(w string, f func(*expiryResult) (float64, bool)) cell {
		if e := r.err(w, ownergc); e != nil {
			return failed(e)
		}
		if r.expiry != nil {
			if v, ok := f(r.expiry); ok {
				return val(v)
			}
		}
		return missing()
	}
	times := func(f func(*expiryResult) float64) cell {
		return get("expiry", func(e *expiryResult) (float64, bool) { return f(e), len(e.lateness) > 0 })
	}
	memory := func(f func(*expiryResult) float64) cell {
		return get("expiry-memory", func(e *expiryResult) (float64, bool) { return f(e), e.rssOn > 0 && e.rssOff > 0 })
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return []row{
		{metric: fmt.Sprintf("Expiry: %d objects whose times spread over %s (ownergc at %s): lateness of the deletion after the object's time, median", expiryObjects, expirySpread, expiryRate),
			og: times(func(e *expiryResult) float64 { return ms(e.quantile(0.5)) }), up: na, format: "%.0f ms", target: "—"},
		{metric: "… lateness, p99", og: times(func(e *expiryResult) float64 { return ms(e.quantile(0.99)) }), up: na, format: "%.0f ms", target: "—"},
		{metric: "… lateness, max", og: times(func(e *expiryResult) float64 { return ms(e.quantile(1)) }), up: na, format: "%.0f ms",
			target: "≤ 1000 ms (each deleted within 1 s of its time)", check: func(og, _ cell) bool { return og.ok && og.v <= 1000 }},
		{metric: "… objects deleted before their time", og: times(func(e *expiryResult) float64 { return float64(e.early) }), up: na, format: "%.0f",
			target: "0", check: func(og, _ cell) bool { return og.ok && og.v == 0 }},
		{metric: "… API requests per expired object", og: times(func(e *expiryResult) float64 { return e.reqs.total() / float64(len(e.lateness)) }), up: na,
			format: "%.2f", target: "1.00", check: func(og, _ cell) bool { return og.ok && og.v < 1.005 }},
		{metric: "… LIST requests meanwhile (any resource but the kube-apiserver's own periodic LIST of services)", og: times(func(e *expiryResult) float64 { return e.lists }), up: na, format: "%.0f",
			target: "0 (no list after start-up)", check: func(og, _ cell) bool { return og.ok && og.v == 0 }},
		{metric: fmt.Sprintf("Expiry enabled with one rule for another resource, %d objects without annotation: resident memory per object above expiry disabled", expiryMemoryObjects),
			og: memory(func(e *expiryResult) float64 { return float64(e.rssOn-e.rssOff) / expiryMemoryObjects }), up: na, format: "%.1f bytes",
			target: "≤ 8 bytes", check: func(og, _ cell) bool { return og.ok && og.v <= 8 }},
		{metric: "… LIST requests after expiry was enabled live (the same)", og: memory(func(e *expiryResult) float64 { return e.listsLive }), up: na, format: "%.0f",
			target: "0", check: func(og, _ cell) bool { return og.ok && og.v == 0 }},
	}
}

// expiryWorkload describes the expiry workload in docs/benchmarks.md.
func expiryWorkload(b *bench) string {
	return fmt.Sprintf("- **Expiry.** ownergc alone (kube-controller-manager has no expiry), with `--kube-api-qps=%g --kube-api-burst=%d` and the GCPolicy's "+
		"`spec.collectors.expiry.enabled: true`, on a fresh namespace. The benchmark creates N=%d ConfigMaps annotated `ownergc.io/expires` with times "+
		"drawn at random over %s, the first %s after the creations begin, in the order of their times (so each exists before its time), and records when its own "+
		"informer sees each deleted. *Lateness* is that moment minus the object's time (for an object created after its time, minus its creation); an object "+
		"seen deleted before its time counts as early. Requests are the kube-apiserver's `apiserver_request_total` on ConfigMaps from before the first time until "+
		"%s after the last deletion, LIST and WATCH excluded, minus the benchmark's creates; *LIST requests* count every LIST of any resource in that window but of services, which the kube-apiserver's own repair loops (Service IPs, node ports) LIST every 3 minutes whatever its clients do (the log names every LIST by resource). "+
		"Then M=%d ConfigMaps without annotation are created on another namespace, and ownergc is started %d times with expiry disabled and %d times "+
		"with expiry enabled and one rule for another resource (`{resource: secrets, namespaces: [<another namespace>], after: 168h}`), alternating; its resident "+
		"memory is read as in Memory, and the medians compared: (on − off) ÷ M. Last, with ownergc running and expiry disabled, expiry is enabled live with that rule, "+
		"and the LIST requests of the next 10 s (after status.collectors.expiry reports it synced) are counted.\n",
		expiryRate.qps, expiryRate.burst, expiryObjects, expirySpread, expiryLead, trailing, expiryMemoryObjects, b.rounds, b.rounds)
}
