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

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// runnable is a runnable for runAll's tests: it counts its starts and
// stops, and returns what ret returns once ctx ends (or at once, when
// early).
type runnable struct {
	started, stopped atomic.Int32
	early            bool
	ret              error
	// hold keeps it from returning after ctx ends until closed.
	hold chan struct{}
}

func (r *runnable) Start(ctx context.Context) error {
	r.started.Add(1)
	defer r.stopped.Add(1)
	if !r.early {
		<-ctx.Done()
	}
	if r.hold != nil {
		<-r.hold
	}
	return r.ret
}

// runAllIn runs runAll in the background and returns its result channel.
func runAllIn(ctx context.Context, timeout time.Duration, rs ...*runnable) chan error {
	runnables := make([]manager.Runnable, len(rs))
	for i, r := range rs {
		runnables[i] = r
	}
	out := make(chan error, 1)
	go func() { out <- runAll(ctx, runnables, timeout) }()
	return out
}

// wait returns runAll's result, failing the test after a bound.
func wait(t *testing.T, out chan error) error {
	t.Helper()
	select {
	case err := <-out:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("runAll did not return within 10s")
		return nil
	}
}

// counted returns a condition (for eventually) that n reaches want.
func counted(n *atomic.Int32, want int32) func() error {
	return func() error {
		if got := n.Load(); got != want {
			return fmt.Errorf("%d, want %d", got, want)
		}
		return nil
	}
}

// A fleet's engine runs its runnables as a manager runs those of an engine
// without leader election: all at once, until its context ends (nil) or one
// fails (its error, every other stopped first); one that returns nil early
// leaves the others running; one that does not stop is waited for no longer
// than the timeout.
func TestRunAll(t *testing.T) {
	t.Run("until the context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a, b := &runnable{}, &runnable{}
		out := runAllIn(ctx, time.Minute, a, b)
		eventually(t, "the first runnable started", counted(&a.started, 1))
		eventually(t, "the second runnable started", counted(&b.started, 1))
		cancel()
		if err := wait(t, out); err != nil {
			t.Fatalf("runAll returned %v after its context ended, want nil", err)
		}
		if a.stopped.Load() != 1 || b.stopped.Load() != 1 {
			t.Fatalf("runAll returned before its runnables stopped (stopped: %d, %d)", a.stopped.Load(), b.stopped.Load())
		}
	})
	t.Run("an error returned once the context ended is no failure", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a := &runnable{ret: errors.New("sync cut short")}
		out := runAllIn(ctx, time.Minute, a, &runnable{})
		eventually(t, "the runnable started", counted(&a.started, 1))
		cancel()
		if err := wait(t, out); err != nil {
			t.Fatalf("runAll returned %v after its context ended, want nil", err)
		}
	})
	t.Run("the first failure stops the others", func(t *testing.T) {
		boom := errors.New("boom")
		a, b, c := &runnable{}, &runnable{early: true, ret: boom}, &runnable{}
		err := wait(t, runAllIn(context.Background(), time.Minute, a, b, c))
		if !errors.Is(err, boom) {
			t.Fatalf("runAll returned %v, want the failure %v", err, boom)
		}
		if a.stopped.Load() != 1 || c.stopped.Load() != 1 {
			t.Fatalf("the other runnables were not stopped before runAll returned (stopped: %d, %d)", a.stopped.Load(), c.stopped.Load())
		}
	})
	t.Run("one returning nil early leaves the others running", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a, b := &runnable{early: true}, &runnable{}
		out := runAllIn(ctx, time.Minute, a, b)
		eventually(t, "the early runnable returned", counted(&a.stopped, 1))
		select {
		case err := <-out:
			t.Fatalf("runAll returned (%v) when a runnable returned nil, with its context alive", err)
		case <-time.After(100 * time.Millisecond):
		}
		if b.stopped.Load() != 0 {
			t.Fatal("the other runnable was stopped when one returned nil")
		}
		cancel()
		if err := wait(t, out); err != nil {
			t.Fatalf("runAll returned %v, want nil", err)
		}
	})
	t.Run("a runnable that does not stop is waited for up to the timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		stuck := &runnable{hold: make(chan struct{})}
		defer close(stuck.hold)
		out := runAllIn(ctx, 50*time.Millisecond, &runnable{}, stuck)
		cancel()
		err := wait(t, out)
		if err == nil || !strings.Contains(err.Error(), "1 of the engine's runnables did not stop within 50ms") {
			t.Fatalf("runAll returned %v, want the runnable that did not stop reported", err)
		}
	})
}

// A fleet's engine needs its cluster's name, and a single-cluster engine
// does not run without its manager.
func TestRunIsForAFleetsEngine(t *testing.T) {
	if _, err := NewCluster("", &rest.Config{Host: "https://127.0.0.1:1"}, ClusterOptions{}); err == nil {
		t.Error("NewCluster built an engine without a cluster name")
	}
	e := &Engine{}
	if err := e.Run(context.Background()); err == nil {
		t.Error("Run ran a single-cluster engine")
	}
}
