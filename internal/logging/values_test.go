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

package logging

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// zapLogger is a JSON zap logger at verbosity 2 that names the caller of
// each line, writing to buf.
func zapLogger(buf *bytes.Buffer) logr.Logger {
	config := zap.NewProductionEncoderConfig()
	config.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewJSONEncoder(config), zapcore.AddSync(buf), zap.NewAtomicLevelAt(-2))
	return zapr.NewLogger(zap.New(core, zap.AddCaller()))
}

type identity struct{ Kind, Name string }

// Each step logs one way through both loggers: its lines must be the same.
func TestHeldValuesWriteWhatWithValuesWrites(t *testing.T) {
	steps := []struct {
		name string
		log  func(withValues func(logr.Logger, ...any) logr.Logger, log logr.Logger)
	}{
		{"values then a line", func(with func(logr.Logger, ...any) logr.Logger, log logr.Logger) {
			with(log, "object", identity{"Pod", "p"}).Info("Deleting", "propagation", "Background")
		}},
		{"a decision at V(2), another at V(4) (not written)", func(with func(logr.Logger, ...any) logr.Logger, log logr.Logger) {
			l := with(log, "gvr", "apps/v1/deployments")
			l.V(2).Info("Listing failed", "err", "boom")
			l.V(4).Info("Not written")
		}},
		{"an error", func(with func(logr.Logger, ...any) logr.Logger, log logr.Logger) {
			with(log, "owner", "o").Error(errors.New("conflict"), "Orphaning failed", "dependents", 3)
		}},
		{"values, a name, more values, the same key again", func(with func(logr.Logger, ...any) logr.Logger, log logr.Logger) {
			l := with(log.WithName("fleet"), "cluster", "c1").WithName("monitors")
			with(l, "gvr", "v1/pods").WithValues("gvr", "v1/secrets").Info("Started")
		}},
		{"no values", func(with func(logr.Logger, ...any) logr.Logger, log logr.Logger) {
			with(log).V(1).Info("Plain")
		}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			var want, got bytes.Buffer
			step.log(logr.Logger.WithValues, zapLogger(&want))
			step.log(WithValues, zapLogger(&got))
			if want.String() != got.String() {
				t.Errorf("held values wrote\n%s\nwhere WithValues writes\n%s", got.String(), want.String())
			}
			if got.Len() == 0 || strings.Count(got.String(), "values_test.go") != strings.Count(got.String(), "\n") {
				t.Errorf("not every line names its caller in this file: %s", got.String())
			}
		})
	}
}

// ctrl.Log is a delegating sink until the manager sets its logger: values
// held on it must write what WithValues writes on it, the caller included.
func TestHeldValuesOnControllerRuntimesRootLogger(t *testing.T) {
	var buf bytes.Buffer
	crlog.SetLogger(zapLogger(&buf))
	plain := crlog.Log.WithValues("cluster", "c1")
	held := WithValues(crlog.Log, "cluster", "c1")
	plain.Info("Engaged")
	held.Info("Engaged")
	plain.WithName("monitors").V(2).Info("Started")
	held.WithName("monitors").V(2).Info("Started")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("wrote %d lines, want 4:\n%s", len(lines), buf.String())
	}
	for i := 0; i < len(lines); i += 2 {
		// Each pair is written from two lines of this file.
		if withoutCaller(lines[i]) != withoutCaller(lines[i+1]) {
			t.Errorf("held values wrote\n%s\nwhere WithValues writes\n%s", lines[i+1], lines[i])
		}
		if !strings.Contains(lines[i+1], `"caller":"logging/values_test.go:`) {
			t.Errorf("the line does not name its caller in this file: %s", lines[i+1])
		}
	}
}

var callerField = regexp.MustCompile(`"caller":"[^"]*",`)

func withoutCaller(line string) string { return callerField.ReplaceAllString(line, "") }

// recordingSink records what its parent would have had to encode.
type recordingSink struct {
	// given is what WithValues was given (a WithValues without values
	// gives nothing).
	given []any
	lines [][]any
}

func (r *recordingSink) Init(logr.RuntimeInfo)              {}
func (r *recordingSink) Enabled(level int) bool             { return level <= 2 }
func (r *recordingSink) Info(_ int, _ string, kv ...any)    { r.lines = append(r.lines, kv) }
func (r *recordingSink) Error(_ error, _ string, kv ...any) { r.lines = append(r.lines, kv) }
func (r *recordingSink) WithValues(kv ...any) logr.LogSink {
	r.given = append(r.given, kv...)
	return r
}
func (r *recordingSink) WithName(string) logr.LogSink         { return r }
func (r *recordingSink) WithCallDepth(depth int) logr.LogSink { return r }

func TestHeldValuesReachTheSinkOnlyWithALine(t *testing.T) {
	rec := &recordingSink{}
	l := WithValues(logr.New(rec), "object", "a")
	l = WithValues(l, "step", 1)
	l.V(4).Info("Not written")
	if len(rec.given) != 0 || len(rec.lines) != 0 {
		t.Fatalf("the sink was given values (%v through WithValues, %d lines) before any line was written", rec.given, len(rec.lines))
	}
	l.Info("Written", "more", true)
	want := []any{"object", "a", "step", 1, "more", true}
	if len(rec.lines) != 1 || len(rec.lines[0]) != len(want) {
		t.Fatalf("lines = %v, want one with %v", rec.lines, want)
	}
	for i := range want {
		if rec.lines[0][i] != want[i] {
			t.Fatalf("line = %v, want %v", rec.lines[0], want)
		}
	}
	if WithValues(logr.Discard(), "a", 1).GetSink() != nil {
		t.Error("a logger without a sink got one")
	}
}

func BenchmarkWithValues(b *testing.B) {
	var buf bytes.Buffer
	log := zapLogger(&buf)
	id := identity{"Pod", "some-pod"}
	b.Run("zap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			log.WithValues("object", id).V(4).Info("Not written")
		}
	})
	b.Run("held", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			WithValues(log, "object", id).V(4).Info("Not written")
		}
	})
}
