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

// Package importrules checks the design's import rules between the
// module's packages, transitively (golangci-lint's depguard checks the
// direct imports of each file the same rules name, in `make lint`):
//   - internal/graph, internal/discovery and internal/workers import nothing
//     from the module;
//   - internal/collector and internal/monitor never import internal/engine
//     or controllers.
package importrules

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ownergc/ownergc"

// deps returns the module's packages that pkg imports, transitively.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var mine []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module+"/") && p != module+"/"+pkg {
			mine = append(mine, strings.TrimPrefix(p, module+"/"))
		}
	}
	return mine
}

func TestImportRules(t *testing.T) {
	for _, tc := range []struct {
		pkg       string
		forbidden func(dep string) bool
		rule      string
	}{
		{"internal/graph", func(string) bool { return true }, "imports nothing from the module"},
		{"internal/discovery", func(string) bool { return true }, "imports nothing from the module"},
		{"internal/workers", func(string) bool { return true }, "imports nothing from the module"},
		{"internal/collector", isEngineOrControllers, "never imports internal/engine or controllers"},
		{"internal/monitor", isEngineOrControllers, "never imports internal/engine or controllers"},
	} {
		for _, d := range deps(t, tc.pkg) {
			if tc.forbidden(d) {
				t.Errorf("%s %s, but imports %s", tc.pkg, tc.rule, d)
			}
		}
	}
}

func isEngineOrControllers(dep string) bool {
	return dep == "internal/engine" || strings.HasPrefix(dep, "internal/engine/") || dep == "controllers" || strings.HasPrefix(dep, "controllers/")
}

// The check can fail: a package known to import the engine is caught.
func TestImportRulesCatchAViolation(t *testing.T) {
	var caught bool
	for _, d := range deps(t, "test/framework") {
		caught = caught || isEngineOrControllers(d)
	}
	if !caught {
		t.Fatal("test/framework imports internal/engine; the check does not see it")
	}
}
