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
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// checkOutput checks an -o value against the structured formats a command
// supports ("" is the default text).
func checkOutput(output string, formats ...string) error {
	if output == "" || slices.Contains(formats, output) {
		return nil
	}
	return fmt.Errorf("unknown output format %q: use %s, or leave -o out for text", output, strings.Join(formats, " or "))
}

// printStructured writes v as JSON or YAML.
func printStructured(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}
