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

package main

import (
	"bytes"
	"strings"
	"testing"
)

const crd = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          metadata:
            type: object
          spec:
            type: object
        type: object
        x-kubernetes-validations:
        - fieldPath: .metadata.name
          rule: self.metadata.name == 'default'
`

func TestDeclaresMetadataNameAndNothingElse(t *testing.T) {
	out, err := declareMetadataName([]byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(crd, "          metadata:\n            type: object\n",
		"          metadata:\n            properties:\n              name:\n                type: string\n            type: object\n", 1)
	if string(out) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
	again, err := declareMetadataName(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Fatalf("a second run changed the file:\n%s", again)
	}
}

func TestRefusesWhatIsNotACRD(t *testing.T) {
	for _, in := range []string{
		"apiVersion: v1\nkind: ConfigMap\n",               // no leading ---
		"---\napiVersion: v1\nkind: ConfigMap\n",          // not a CRD
		"---\nkind: CustomResourceDefinition\nspec: {}\n", // no versions
	} {
		if _, err := declareMetadataName([]byte(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
}
