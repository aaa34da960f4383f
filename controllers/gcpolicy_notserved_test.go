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
