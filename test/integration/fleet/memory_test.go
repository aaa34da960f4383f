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

package fleet_test

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ownergc/ownergc/test/framework"
)

// idleClusterBudget is the memory an idle engaged cluster may cost the
// manager (issue 14: ≤ 10 MiB, against ~55 MiB for an ownergc process of its
// own).
const idleClusterBudget = 10 << 20

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// rss returns the process's resident memory (VmRSS), 0 when unknown.
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// An idle engaged cluster costs the manager little memory: what three
// synced, idle engines add to the live heap, per cluster, is within the
// budget. (Each envtest cluster holds ~200 objects.)
func TestMemoryPerIdleEngagedCluster(t *testing.T) {
	ns := framework.CreateNamespace(t, host().Client)
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns})
	time.Sleep(2 * time.Second)
	heap0, rss0 := heapInUse(), rss()
	for i, cp := range clusters {
		cp.WriteKubeconfigSecret(t, host(), ns, names[i])
	}
	for _, name := range names {
		m.WaitSynced(t, name, engageTimeout)
	}
	time.Sleep(5 * time.Second) // idle: discovery done, statuses written
	heap3, rss3 := heapInUse(), rss()
	perHeap := (int64(heap3) - int64(heap0)) / int64(len(names))
	perRSS := (int64(rss3) - int64(rss0)) / int64(len(names))
	t.Logf("per idle engaged cluster: live heap %.1f MiB, resident %.1f MiB (the fleet host alone: heap %.1f MiB)",
		float64(perHeap)/(1<<20), float64(perRSS)/(1<<20), float64(heap0)/(1<<20))
	if perHeap > idleClusterBudget {
		t.Errorf("an idle engaged cluster costs %.1f MiB of live heap, over the %d MiB budget", float64(perHeap)/(1<<20), idleClusterBudget>>20)
	}
}
