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

// Command crdmetadata declares metadata.name in the root schema of the
// CustomResourceDefinitions that controller-gen writes, which controller-gen
// cannot express: it always resets the root metadata to {type: object}.
// Declared, metadata.name can be the fieldPath of a rule on the root, so that
// the API server reports the error on metadata.name rather than on <nil> (the
// GCPolicy singleton rule). `make manifests` runs it on the files of
// config/crd/bases after controller-gen:
//
//	go run ./hack/crdmetadata config/crd/bases/ownergc.io_gcpolicies.yaml
//
// It changes nothing else: the file is re-marshalled the way controller-gen
// writes it (sorted keys), and running it twice changes nothing more.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

const separator = "---\n"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdmetadata CRD_FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := fix(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdmetadata: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func fix(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := declareMetadataName(in)
	if err != nil {
		return err
	}
	if bytes.Equal(in, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// declareMetadataName returns the CRD document in with
// properties.metadata.properties.name {type: string} in the root schema of
// every version.
func declareMetadataName(in []byte) ([]byte, error) {
	body, ok := bytes.CutPrefix(in, []byte(separator))
	if !ok {
		return nil, errors.New("does not start with " + separator + " as controller-gen writes it")
	}
	crd := map[string]any{}
	if err := yaml.Unmarshal(body, &crd); err != nil {
		return nil, err
	}
	if crd["kind"] != "CustomResourceDefinition" {
		return nil, fmt.Errorf("kind %v, want CustomResourceDefinition", crd["kind"])
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return nil, errors.New("no spec.versions")
	}
	for i, v := range versions {
		root, err := dig(v, "schema", "openAPIV3Schema", "properties")
		if err != nil {
			return nil, fmt.Errorf("spec.versions[%d]: %w", i, err)
		}
		metadata, _ := root["metadata"].(map[string]any)
		if metadata == nil {
			return nil, fmt.Errorf("spec.versions[%d]: no metadata in the root schema", i)
		}
		props, _ := metadata["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			metadata["properties"] = props
		}
		props["name"] = map[string]any{"type": "string"}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte(separator), out...), nil
}

// dig returns the map at path under v.
func dig(v any, path ...string) (map[string]any, error) {
	m, _ := v.(map[string]any)
	for _, key := range path {
		next, _ := m[key].(map[string]any)
		if next == nil {
			return nil, fmt.Errorf("no %s", key)
		}
		m = next
	}
	return m, nil
}
