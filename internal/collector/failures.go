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
}

// failureEventThreshold is the number of consecutive failures after which a
// Warning event is recorded about the object.
const failureEventThreshold = 5

func newFailureTracker() *failureTracker {
	return &failureTracker{counts: make(map[*graph.Node]int)}
}

// failed records a failure and returns the number of consecutive failures.
func (f *failureTracker) failed(n *graph.Node) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[n]++
	return f.counts[n]
}

func (f *failureTracker) succeeded(n *graph.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.counts, n)
}

// trackFailures counts the outcome of processing n; expected outcomes
// (waiting, not served) neither count nor reset.
func (c *Collector) trackFailures(n *graph.Node, id graph.Identity, err error) {
	switch {
	case err == nil:
		c.failures.succeeded(n)
	case quiet(err):
	case c.failures.failed(n) == failureEventThreshold:
		c.recordCollectionFailing(id, failureEventThreshold, err)
	}
}
