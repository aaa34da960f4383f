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
