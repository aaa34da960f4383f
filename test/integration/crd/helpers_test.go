package crd_test

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/test/framework"
)

// labelCRD sets a label on the CRD.
func labelCRD(t *testing.T, s framework.CRD, key, value string) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}})
	if _, err := cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Patch(framework.Context(t), s.Name(), types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling CRD %s: %v", s.Name(), err)
	}
}
