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

package collector

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/graph"
)

// The helpers every file of the package builds on: how objects and owner
// references are named, placed and compared. They call nothing else of the
// package.

// describe names an object in logs and errors: "Kind namespace/name", or
// "Kind name" for a cluster-scoped one.
func describe(id graph.Identity) string {
	if id.Namespace == "" {
		return fmt.Sprintf("%s %s", id.Kind, id.Name)
	}
	return fmt.Sprintf("%s %s/%s", id.Kind, id.Namespace, id.Name)
}

// namespaceFor is the namespace of an object of a namespaced or
// cluster-scoped resource that a dependent in ns names: ns, or "" for a
// cluster-scoped one (whatever namespace a graph identity carries).
func namespaceFor(namespaced bool, ns string) string {
	if namespaced {
		return ns
	}
	return ""
}

// boolValue is the value of an owner reference's optional flag: unset is
// false.
func boolValue(b *bool) bool { return b != nil && *b }

// refUIDs returns the owner UIDs of refs, in order.
func refUIDs(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// sameReference reports whether two owner references name the same owner
// the same way, with the same flags (unset and false alike).
func sameReference(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name &&
		boolValue(a.BlockOwnerDeletion) == boolValue(b.BlockOwnerDeletion) && boolValue(a.Controller) == boolValue(b.Controller)
}
