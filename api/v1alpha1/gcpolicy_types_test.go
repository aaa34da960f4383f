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

package v1alpha1

import (
	"reflect"
	"testing"
)

func TestDefaultIgnoredResources(t *testing.T) {
	want := []GroupResource{
		{Group: "", Resource: "events"},
		{Group: "events.k8s.io", Resource: "events"},
	}
	first := DefaultIgnoredResources()
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("DefaultIgnoredResources() = %+v, want %+v", first, want)
	}

	// Callers may modify the result; that must not leak into later calls.
	first[0].Resource = "changed"
	_ = append(first[:1], GroupResource{Resource: "appended"})
	if second := DefaultIgnoredResources(); !reflect.DeepEqual(second, want) {
		t.Fatalf("DefaultIgnoredResources() returned %+v after an earlier result was modified, want a fresh %+v", second, want)
	}
}
