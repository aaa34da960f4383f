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

package collector

import (
	"sync"

	"github.com/ownergc/ownergc/internal/graph"
)

// failureTracker counts consecutive failures per node so that processing
// that keeps failing is reported once, as an event, rather than on every
// retry.
type failureTracker struct {
	mu     sync.Mutex
	counts map[*graph.Node]int
	// last is the latest error of each node that is failing.
	last map[*graph.Node]error
}

// failureEventThreshold is the number of consecutive failures after which a
// Warning event is recorded about the object.
const failureEventThreshold = 5

func newFailureTracker() *failureTracker {
	return &failureTracker{counts: make(map[*graph.Node]int), last: make(map[*graph.Node]error)}
}

// failed records a failure and returns the number of consecutive failures.
func (f *failureTracker) failed(n *graph.Node, err error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[n]++
	f.last[n] = err
	return f.counts[n]
}

func (f *failureTracker) succeeded(n *graph.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.counts, n)
	delete(f.last, n)
}

// lastError returns the latest error of a node that keeps failing, and the
// number of failures in a row.
func (f *failureTracker) lastError(n *graph.Node) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[n], f.last[n]
}

// trackFailures counts the outcome of processing n; expected outcomes
// (waiting, not served) neither count nor reset.
func (c *Collector) trackFailures(n *graph.Node, id graph.Identity, err error) {
	switch {
	case err == nil:
		c.failures.succeeded(n)
	case quiet(err):
	case c.failures.failed(n, err) == failureEventThreshold:
		c.recordCollectionFailing(id, failureEventThreshold, err)
	}
}
