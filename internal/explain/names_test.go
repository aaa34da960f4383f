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

package explain

import (
	"errors"
	"strings"
	"testing"
)

func TestNamesAreOnePathSegment(t *testing.T) {
	for _, name := range []string{"x", "a.b", "system:controller:job-controller", "..a", "a..", strings.Repeat("a", MaxNameLength)} {
		if err := ValidateName(name); err != nil {
			t.Errorf("%.40q: %v, want it accepted", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", "../../other/secrets/x", "x/../../../other/secrets/x", "x%2Fy", strings.Repeat("a", MaxNameLength+1)} {
		var invalid *InvalidNameError
		if err := ValidateName(name); !errors.As(err, &invalid) || invalid.What != "name" {
			t.Errorf("%.40q: %v, want an *InvalidNameError about the name", name, err)
		}
	}
	for _, ns := range []string{"", "..", "a/b", "Mine", "a.b", strings.Repeat("n", 64)} {
		if err := ValidateNamespace(ns); err == nil {
			t.Errorf("namespace %.40q accepted", ns)
		}
	}
	if err := ValidatePath("", "cluster-scoped"); err != nil {
		t.Errorf("a cluster-scoped object has no namespace: %v", err)
	}
	if err := ValidatePath("mine", "x"); err != nil {
		t.Errorf("mine/x: %v", err)
	}
}

// Messages quote what they refuse, escaped and shortened.
func TestInvalidNameErrorQuotesAShortenedValue(t *testing.T) {
	msg := ValidateName(strings.Repeat("\x1b", 2*MaxNameLength)).Error()
	if strings.ContainsRune(msg, '\x1b') || len(msg) > 400 || !strings.Contains(msg, "(2048 bytes)") {
		t.Errorf("message %q should quote at most the start of the name, escaped, with its length", msg)
	}
}
