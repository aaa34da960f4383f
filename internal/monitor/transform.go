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
