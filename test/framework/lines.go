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

package framework

import (
	"regexp"
	"slices"
	"strings"
)

// UnmatchedPatterns returns the patterns (regular expressions) that match
// no line of text as a whole, trailing spaces trimmed: what a test of a
// command's output (the demo's, the kubectl plugin's) found missing.
func UnmatchedPatterns(text string, patterns ...string) []string {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	var missing []string
	for _, p := range patterns {
		re := regexp.MustCompile("^(?:" + p + ")$")
		if !slices.ContainsFunc(lines, re.MatchString) {
			missing = append(missing, p)
		}
	}
	return missing
}
