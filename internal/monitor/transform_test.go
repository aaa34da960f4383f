package monitor

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

func TestTransformKeepsOnlyWhatTheCollectorReads(t *testing.T) {
	now := metav1.Now()
	yes := true
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "cm", Namespace: "ns", UID: "u", ResourceVersion: "9", Generation: 3,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": "annotation"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			DeletionTimestamp: &now, Finalizers: []string{"orphan"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "o", BlockOwnerDeletion: &yes}},
		},
	}
	want := &metav1.PartialObjectMetadata{
		TypeMeta: in.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u", ResourceVersion: "9",
			DeletionTimestamp: &now, Finalizers: []string{"orphan"}, OwnerReferences: in.OwnerReferences},
	}
	out, err := Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("transformed:\n%+v\nwant:\n%+v", out, want)
	}
	again, _ := Transform(out)
	if !reflect.DeepEqual(again, want) {
		t.Fatal("the transform must be idempotent")
	}
}

func TestTransformStripsManagedFieldsOfOtherObjects(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, _ := Transform(cm)
	got := out.(*corev1.ConfigMap)
	if got.ManagedFields != nil || got.Labels["keep"] != "me" {
		t.Fatalf("typed objects lose managedFields only: %+v", got.ObjectMeta)
	}
}

// A protected object keeps that one annotation, as a map shared by every
// protected object: the cost is a pointer, not a map per object.
func TestTransformKeepsOnlyTheProtectedAnnotation(t *testing.T) {
	objects := make([]*metav1.PartialObjectMetadata, 2)
	for i := range objects {
		in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{
			ownergcv1alpha1.ProtectedAnnotation: "true", "other": "dropped"}}}
		out, _ := Transform(in)
		objects[i] = out.(*metav1.PartialObjectMetadata)
	}
	if got := objects[0].Annotations; len(got) != 1 || got[ownergcv1alpha1.ProtectedAnnotation] != "true" {
		t.Fatalf("annotations of a protected object: %v", got)
	}
	if reflect.ValueOf(objects[0].Annotations).Pointer() != reflect.ValueOf(objects[1].Annotations).Pointer() {
		t.Fatal("protected objects must share one annotations map")
	}
	notProtected, _ := Transform(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		ownergcv1alpha1.ProtectedAnnotation: "false"}}})
	if a := notProtected.(*metav1.PartialObjectMetadata).Annotations; a != nil {
		t.Fatalf("an object that is not protected keeps no annotations: %v", a)
	}
}
