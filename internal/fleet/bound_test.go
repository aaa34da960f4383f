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

package fleet

import (
	"testing"
	"time"
)

// The bound looks often while the graph changes or nears the limit, and
// less and less often, down to once every boundIdleInterval, while it holds
// still far from it.
func TestNextBoundInterval(t *testing.T) {
	const most = 1000
	for _, tc := range []struct {
		name     string
		interval time.Duration
		n, last  int
		want     time.Duration
	}{
		{"the graph grows", 2 * time.Second, 500, 400, boundInterval},
		{"the first look", boundInterval, 0, -1, boundInterval},
		{"still, far from the bound", boundInterval, 500, 500, 2 * boundInterval},
		{"still for long", 2 * time.Second, 500, 500, boundIdleInterval},
		{"still at the ceiling", boundIdleInterval, 500, 500, boundIdleInterval},
		{"still, within a quarter of the bound", 2 * time.Second, 800, 800, boundInterval},
		{"shrinking", 2 * time.Second, 400, 500, boundInterval},
	} {
		if got := nextBoundInterval(tc.interval, tc.n, tc.last, most); got != tc.want {
			t.Errorf("%s: after %v with %d objects (%d before): %v, want %v", tc.name, tc.interval, tc.n, tc.last, got, tc.want)
		}
	}
}
