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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// Every relative link of README.md and docs/*.md leads somewhere: to a file
// of the tree and, with a fragment, to a heading of that file, named as
// GitHub names headings' anchors. Links to other sites are not followed.
func TestDocumentationLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"README.md"}, docs...)
	anchorsOf := map[string][]string{}
	anchors := func(path string) []string {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[path] = headingAnchors(string(data))
		return anchorsOf[path]
	}
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(string(data)) {
			checked++
			path, fragment, _ := strings.Cut(l.target, "#")
			target := doc
			if path != "" {
				target = filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link to %q: %s does not exist", doc, l.line, l.target, target)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: link to %q: a fragment of a file that is not Markdown", doc, l.line, l.target)
				continue
			}
			if !slices.Contains(anchors(target), fragment) {
				t.Errorf("%s:%d: link to %q: %s has no heading with the anchor %q (it has %s)",
					doc, l.line, l.target, target, fragment, strings.Join(anchors(target), ", "))
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d relative links found in %d files: the link parser misses them", checked, len(docs))
	}
}

// TestHeadingAnchors checks the anchors against those GitHub gives.
func TestHeadingAnchors(t *testing.T) {
	doc := "# Operating ownergc\n" +
		"## Replace kube-controller-manager's collector\n" +
		"```sh\n# not a heading\n```\n" +
		"### `mode`: Enforce or DryRun\n" +
		"## A deletion is stuck? Why is it still there? `kubectl ownergc`\n" +
		"## Install — with [Helm](https://helm.sh)\n" +
		"## Install — with [Helm](https://helm.sh)\n" +
		"## spec.workers_total 1.30\n"
	want := []string{
		"operating-ownergc",
		"replace-kube-controller-managers-collector",
		"mode-enforce-or-dryrun",
		"a-deletion-is-stuck-why-is-it-still-there-kubectl-ownergc",
		"install--with-helm",
		"install--with-helm-1",
		"specworkers_total-130",
	}
	if got := headingAnchors(doc); !slices.Equal(got, want) {
		t.Errorf("anchors:\n got %q\nwant %q", got, want)
	}
}

type link struct {
	target string
	line   int
}

var (
	// inlineLink is a Markdown inline link or image: [text](target) or
	// [text](target "title"); the text may span lines.
	inlineLink = regexp.MustCompile(`\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// linkText keeps the text of a link in a heading.
	linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// relativeLinks returns the links of a Markdown document that lead into the
// repository (no scheme), outside code blocks and code spans.
func relativeLinks(doc string) []link {
	var out []link
	for i, text := range proseLines(doc) {
		text = codeSpan.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			target := strings.Trim(m[1], "<>")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{target: target, line: i + 1})
		}
	}
	return out
}

// proseLines returns the document's lines with those of fenced code blocks
// blanked, so that line numbers stay those of the file.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives the document's ATX
// headings, in order: the heading's text without its Markdown (code spans
// keep their text, links their text), lowercased, every character that is
// not a letter, a digit, a mark, '-', '_' or a space removed, and each
// space made a '-'; a repeated anchor gets "-1", "-2", ….
func headingAnchors(doc string) []string {
	var out []string
	seen := map[string]int{}
	for _, l := range proseLines(doc) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		text := linkText.ReplaceAllString(m[2], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor += "-" + strconv.Itoa(n)
		} else {
			seen[anchor] = 1
		}
		out = append(out, anchor)
	}
	return out
}
