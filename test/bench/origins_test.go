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
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// The fleet profile reads the runtime's own profile formats: these tests
// keep its parsers in step with the Go release that builds it.

//go:noinline
func parkedChild(ch, running chan struct{}) {
	close(running)
	<-ch
}

//go:noinline
func parkedParent(ch, running chan struct{}) {
	go parkedChild(ch, running)
	<-ch
}

func TestParseGoroutinesKnowsCreatorAndParent(t *testing.T) {
	ch, running := make(chan struct{}), make(chan struct{})
	defer close(ch)
	go parkedParent(ch, running)
	// The profile is taken once the child runs its own code: a goroutine
	// not yet scheduled shows only the compiler's wrapper as its frames.
	<-running
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	gs, err := parseGoroutines(&buf)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int]*goroutine{}
	for _, g := range gs {
		byID[g.id] = g
	}
	var child *goroutine
	for _, g := range gs {
		if strings.HasSuffix(g.creator, ".parkedParent") {
			child = g
		}
	}
	if child == nil {
		t.Fatalf("no goroutine created by parkedParent among %d", len(gs))
	}
	parent := byID[child.parent]
	if parent == nil || !strings.Contains(strings.Join(parent.frames, " "), ".parkedParent") {
		t.Fatalf("the parent of %+v is %+v, not parkedParent", child, parent)
	}
	lin := lineage(child, byID)
	if !strings.HasSuffix(lin[0], "runtime.gopark") && !strings.Contains(strings.Join(lin, " "), ".parkedChild") {
		t.Errorf("lineage %v misses the child's own frames", lin)
	}
}

var sink [][]byte

func TestParseHeapAndCPUProfiles(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1024
	dir := t.TempDir()
	cpu, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		sink = append(sink, make([]byte, 4096))
		if len(sink) > 1000 {
			sink = sink[:0]
		}
	}
	pprof.StopCPUProfile()
	cpu.Close()
	runtime.GC()
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	heap, err := parseHeap(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if heap.rate != 1024 {
		t.Errorf("rate %d, want 1024", heap.rate)
	}
	found := false
	for _, r := range heap.records {
		if r.allocBytes > 0 && strings.Contains(strings.Join(r.frames, " "), "TestParseHeapAndCPUProfiles") {
			found = true
			if s := heap.scaled(r.allocObjects, r.allocBytes); s < float64(r.allocBytes) {
				t.Errorf("scaled %f below the sampled %d bytes", s, r.allocBytes)
			}
		}
	}
	if !found {
		t.Errorf("no heap record allocated by the test among %d", len(heap.records))
	}
	samples, err := readCPUProfile(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range samples {
		total += s.nanos
		if len(s.frames) == 0 {
			t.Errorf("a sample without frames")
		}
	}
	if len(samples) == 0 || total <= 0 {
		t.Errorf("%d CPU samples, %d ns", len(samples), total)
	}
}

func TestClassifyGoroutineByItsLineage(t *testing.T) {
	monitor := &goroutine{id: 1, frames: []string{"k8s.io/client-go/tools/cache.handleAnyWatch", ownergcPkg + "internal/monitor.(*Set).startMonitor.func1"}}
	decoder := &goroutine{id: 2, frames: []string{"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"},
		creator: "k8s.io/apimachinery/pkg/watch.NewStreamWatcherWithLogger", parent: 1}
	byID := map[int]*goroutine{1: monitor, 2: decoder}
	if o := classifyGoroutine(decoder, byID); o != (origin{"monitors", "watch decoder (StreamWatcher)"}) {
		t.Errorf("the decoder of a monitor's watch is counted as %+v", o)
	}
	orphan := &goroutine{id: 3, frames: []string{"k8s.io/client-go/util/workqueue.(*Typed[...]).Get"},
		creator: ownergcPkg + "internal/collector.(*pool).resize", parent: 99}
	if o := classifyGoroutine(orphan, byID); o.owner != "collector (parent gone)" || o.kind != "worker waiting for an item" {
		t.Errorf("a collector worker whose parent is gone is counted as %+v", o)
	}
}
