package monitor

import (
	"strings"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Transform is the cache's transform (cache.Options.DefaultTransform): the
// collector reads only names, UIDs, resourceVersions, deletion timestamps,
// finalizers, owner references and whether the object is protected (the
// ownergc.io/protected annotation), so a metadata object becomes a Compact
// holding only those, which is what the informer's store keeps and its
// handlers receive. Other objects lose their managedFields.
func Transform(in any) (any, error) {
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		return compact(o), nil
	case *Compact, toolscache.DeletedFinalStateUnknown:
		return o, nil
	case metav1.Object:
		o.SetManagedFields(nil)
		return in, nil
	}
	return in, nil
}

// protected is the annotations a protected object keeps in the cache. It is
// shared: never modify it.
var protected = map[string]string{ownergcv1alpha1.ProtectedAnnotation: trueValue}

// trueValue is "true", as annotations and query parameters spell it.
const trueValue = "true"

func intern(s string) string {
	if s == "" || len(s) > 128 || strings.ContainsRune(s, 0) {
		return s
	}
	return unique.Make(s).Value()
}
