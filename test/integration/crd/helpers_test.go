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
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// keptThenCollected checks that the first of deps is kept while owner
// exists (for the quiet period), then that every one is collected once
// owner is deleted in the background.
func keptThenCollected(t *testing.T, owner framework.Object, deps []framework.Object, exists, deleted string) {
	t.Helper()
	cp.Survive(t, exists, deps[0])
	cp.DeleteWith(t, owner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, deleted, deps...)
}

// createCRD creates a CRD of kind (plural) in a group of its own whose name
// begins with prefix, and returns its kind and when it was Established.
func createCRD(t *testing.T, prefix, kind, plural string, scope apiextensionsv1.ResourceScope) (framework.Kind, time.Time) {
	t.Helper()
	return cp.CreateCRD(t, framework.CRD{Group: framework.UniqueGroup(prefix), Kind: kind, Plural: plural, Scope: scope})
}
