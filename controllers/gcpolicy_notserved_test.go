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

package controllers

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// The REST mapper says "GCPolicies are not served" in more than one way;
// every one of them, and nothing else, is recognised.
func TestGCPolicyNotServed(t *testing.T) {
	other := schema.GroupVersion{Group: "example.com", Version: "v1"}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"no kind match": {fmt.Errorf("wrapped: %w", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "ownergc.io", Kind: "GCPolicy"}}), true},
		"group discovery: no resource match": {&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
			ownergcv1alpha1.GroupVersion: &meta.NoResourceMatchError{PartialResource: ownergcv1alpha1.GroupVersion.WithResource("")}}}, true},
		"group discovery: not found": {&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
			ownergcv1alpha1.GroupVersion: apierrors.NewNotFound(schema.GroupResource{}, "")}}, true},
		"another group's discovery": {&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
			other: apierrors.NewNotFound(schema.GroupResource{}, "")}}, false},
		"a failing discovery of ours": {&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
			ownergcv1alpha1.GroupVersion: apierrors.NewServiceUnavailable("down")}}, false},
		"anything else": {errors.New("connection refused"), false},
	} {
		if got := gcPolicyNotServed(tc.err); got != tc.want {
			t.Errorf("%s: gcPolicyNotServed = %t, want %t", name, got, tc.want)
		}
	}
}
