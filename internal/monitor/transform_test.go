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
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/graph"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// The graph is the store, and what the collector reads back of an object
// (Cached) is exactly what it read from the PartialObjectMetadata: the
// resourceVersion string as sent, the deletion timestamp to the nanosecond,
// finalizers in order, every owner reference with its optional booleans
// unset, false or true; nothing else.
func TestCachedIsExactlyWhatTheCollectorReads(t *testing.T) {
	yes, no := true, false
	deleted := metav1.NewTime(time.Date(2026, 11, 23, 13, 0, 0, 123456789, time.UTC).Local())
	tests := []struct {
		name string
		in   metav1.ObjectMeta
		want metav1.ObjectMeta
	}{{
		name: "everything the collector reads",
		in: metav1.ObjectMeta{
			Name: "cm", Namespace: "ns", UID: "u", ResourceVersion: "9", Generation: 3,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": "annotation"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			DeletionTimestamp: &deleted, Finalizers: []string{"orphan", "example.com/keep"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "o", BlockOwnerDeletion: &yes},
				{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "p", Controller: &no, BlockOwnerDeletion: &no},
				{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "q", Controller: &yes},
			},
		},
		want: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u", ResourceVersion: "9",
			DeletionTimestamp: &deleted, Finalizers: []string{"orphan", "example.com/keep"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "o", BlockOwnerDeletion: &yes},
				{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "p", Controller: &no, BlockOwnerDeletion: &no},
				{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "q", Controller: &yes},
			}},
	}, {
		name: "an opaque resourceVersion stays as sent",
		in:   metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "0042-not/a number"},
		want: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "0042-not/a number"},
	}, {
		name: "a numeric resourceVersion in canonical form",
		in:   metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "18446744073709551615"},
		want: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "18446744073709551615"},
	}, {
		name: "a resourceVersion with a leading zero stays as sent",
		in:   metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "042"},
		want: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "042"},
	}, {
		name: "a resourceVersion of zero stays as sent",
		in:   metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "0"},
		want: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "0"},
	}, {
		name: "a resourceVersion too large for a number stays as sent",
		in:   metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "18446744073709551616"},
		want: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "18446744073709551616"},
	}, {
		name: "one owner, blocking, not a controller",
		in: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", ResourceVersion: "7",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o", Controller: &no, BlockOwnerDeletion: &yes}}},
		want: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", ResourceVersion: "7",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o", Controller: &no, BlockOwnerDeletion: &yes}}},
	}, {
		name: "two references to one owner",
		in: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", ResourceVersion: "7", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o"}, {APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o", BlockOwnerDeletion: &yes}}},
		want: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", ResourceVersion: "7", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o"}, {APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o", BlockOwnerDeletion: &yes}}},
	}, {
		name: "finalizers without a deletion",
		in:   metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "7", Finalizers: []string{"a", "b/c"}},
		want: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "7", Finalizers: []string{"a", "b/c"}},
	}, {
		name: "nothing to keep but the identity",
		in:   metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", Finalizers: []string{}, OwnerReferences: []metav1.OwnerReference{}},
		want: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := testStore()
			st.observe(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: tt.in}, false)
			want := &metav1.PartialObjectMetadata{ObjectMeta: tt.want}
			want.SetGroupVersionKind(configMapGVK)
			got, ok := s.Cached(configMapGVK.GroupKind(), tt.in.Namespace, tt.in.Name)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("read back (%v):\n%+v\nwant:\n%+v", ok, got, want)
			}
		})
	}
}

// What Cached returns is the caller's: changing it leaves the store as it
// was.
func TestCachedGivesAFreshCopy(t *testing.T) {
	yes := true
	s, st := testStore()
	st.observe(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "u", Finalizers: []string{"f"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "o", BlockOwnerDeletion: &yes}}}}, false)
	first, _ := s.Cached(configMapGVK.GroupKind(), "", "x")
	first.Finalizers[0] = "changed"
	*first.OwnerReferences[0].BlockOwnerDeletion = false
	first.OwnerReferences[0].Name = "changed"
	second, _ := s.Cached(configMapGVK.GroupKind(), "", "x")
	if second.Finalizers[0] != "f" || !*second.OwnerReferences[0].BlockOwnerDeletion || second.OwnerReferences[0].Name != "s" {
		t.Fatalf("the stored object changed: %+v", second.ObjectMeta)
	}
}

func TestTransformStripsManagedFields(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, _ := Transform(cm)
	got := out.(*corev1.ConfigMap)
	if got.ManagedFields != nil || got.Labels["keep"] != "me" {
		t.Fatalf("typed objects lose managedFields only: %+v", got.ObjectMeta)
	}
}

// A protected object keeps that one annotation, as a map shared by every
// protected object: the cost is a bit, not a map per object.
func TestCachedKeepsOnlyTheProtectedAnnotation(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{"protected", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true", "other": "dropped"},
			map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}},
		{"not protected", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "false"}, nil},
		{"no annotations", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := testStore()
			st.observe(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", Annotations: tt.annotations}}, false)
			obj, _ := s.Cached(configMapGVK.GroupKind(), "", "p")
			got := obj.Annotations
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("annotations %v, want %v", got, tt.want)
			}
			if tt.want != nil && reflect.ValueOf(got).Pointer() != reflect.ValueOf(protected).Pointer() {
				t.Fatal("protected objects must share one annotations map")
			}
		})
	}
}

// testStore returns a Set with a ConfigMap monitor, and the monitor's store.
func testStore() (*Set, *store) {
	g := graph.New(10)
	s := &Set{opts: Options{Graph: g, Sink: discardSink{}, Changed: func() {}}, monitors: map[schema.GroupKind]*monitor{}}
	m := testMonitor(g)
	s.monitors[m.res.GroupKind()] = m
	return s, &store{m: m, s: s}
}
