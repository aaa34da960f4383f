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
// ownergc.io/protected annotation, kept as one map shared by every protected
// object), so a metadata object keeps only those, with its repeated strings
// (apiVersions, kinds, namespaces) interned. Other
// objects lose their managedFields.
func Transform(in any) (any, error) {
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		var annotations map[string]string
		if o.Annotations[ownergcv1alpha1.ProtectedAnnotation] == trueValue {
			annotations = protected // one map shared by every protected object
		}
		o.ObjectMeta = metav1.ObjectMeta{
			Name:              o.Name,
			Namespace:         intern(o.Namespace),
			UID:               o.UID,
			ResourceVersion:   o.ResourceVersion,
			DeletionTimestamp: o.DeletionTimestamp,
			Finalizers:        o.Finalizers,
			OwnerReferences:   o.OwnerReferences,
			Annotations:       annotations,
		}
		o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
		for i := range o.OwnerReferences {
			r := &o.OwnerReferences[i]
			r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
		}
		return o, nil
	case toolscache.DeletedFinalStateUnknown:
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
