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

package monitor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Transform is the manager cache's transform
// (cache.Options.DefaultTransform): objects lose their managedFields, which
// nothing in ownergc reads. The cache holds GCPolicies only: the monitors do
// not use it (see store.go).
func Transform(in any) (any, error) {
	if o, ok := in.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return in, nil
}

// protected is the annotations Cached gives a protected object. It is
// shared: never modify it.
var protected = map[string]string{ownergcv1alpha1.ProtectedAnnotation: trueValue}

// trueValue is "true", as annotations and query parameters spell it.
const trueValue = "true"
