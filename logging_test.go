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
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// parseZap parses the --zap-* flags as main does.
func parseZap(t *testing.T, args ...string) zap.Options {
	t.Helper()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := zap.Options{}
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestTheLoggerKeepsEveryDecisionLine(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(parseZap(t), &out)
	const n = 1000 // zap's production sampler would keep 109 of these
	for i := 0; i < n; i++ {
		log.Info("Dry run: would delete", "object", i)
	}
	log.V(1).Info("Not at the default level")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != n {
		t.Fatalf("%d identical decisions logged within a second gave %d lines, want %d (one per decision)", n, len(lines), n)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("not JSON by default: %q: %v", lines[0], err)
	}
	if first["level"] != "info" || first["msg"] != "Dry run: would delete" || first["ts"] == nil {
		t.Errorf("want level, msg and ts as controller-runtime's production logger writes them, got %v", first)
	}
}

func TestTheLoggerFollowsTheZapFlags(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(parseZap(t, "--zap-log-level=2", "--zap-encoder=console"), &out)
	log.V(2).Info("A decision")
	log.V(3).Info("A graph internal")
	got := out.String()
	if !strings.Contains(got, "A decision") || strings.Contains(got, "A graph internal") {
		t.Errorf("--zap-log-level=2 should log V(2) and not V(3), got %q", got)
	}
	if strings.HasPrefix(strings.TrimSpace(got), "{") {
		t.Errorf("--zap-encoder=console should not write JSON, got %q", got)
	}
}
