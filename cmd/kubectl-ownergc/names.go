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
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Names that go into a request path are checked first: a name that is not
// one path segment ("..", "a/b", "x%2Fy") would make the client request
// another object than the one named, or another resource.

// checkName returns why name cannot be an object's name, "" when it can:
// it must be one path segment (apimachinery's content.IsPathSegmentName).
func checkName(name string) string {
	if name == "" {
		return "it is empty"
	}
	if msgs := content.IsPathSegmentName(name); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return ""
}

// checkNamespace returns why ns cannot be a namespace, "" when it can: it
// must be a DNS-1123 label.
func checkNamespace(ns string) string {
	if ns == "" {
		return "it is empty"
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return ""
}

// validName returns an error unless name can be the name of an object;
// what names it in the message (e.g. "the name").
func validName(what, name string) error {
	if why := checkName(name); why != "" {
		return fmt.Errorf("%s %s cannot be an object's name: %s", what, quoted(name), why)
	}
	return nil
}

// validNamespace returns an error unless ns can be a namespace.
func validNamespace(what, ns string) error {
	if why := checkNamespace(ns); why != "" {
		return fmt.Errorf("%s %s cannot be the name of a namespace: %s", what, quoted(ns), why)
	}
	return nil
}

// Text the plugin prints comes partly from others: object names, kinds,
// finalizers, reasons and errors from the API server and from the manager.
// None of it may reach a terminal as a control sequence, so every
// character that is not printable is escaped as Go escapes it (\x1b,
// \u202e, \n).

// printable reports whether s is valid UTF-8 made of printable characters
// only (strconv.IsPrint: letters, marks, numbers, punctuation, symbols and
// the ASCII space).
func printable(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// display writes a name, a kind or a namespace as it is when it is
// printable, and Go-quoted otherwise ("evil\x1b[2J"), so that it is told
// apart from the text around it.
func display(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// quoted writes s Go-quoted, for messages that quote what they name.
func quoted(s string) string { return strconv.Quote(s) }

// escapeText escapes the characters of s that are not printable, leaving
// the others alone: for free text (reasons, decisions, errors) that may
// contain names.
func escapeText(s string) string { return escapeExcept(s, "") }

// escapeExcept escapes the characters of s that are not printable, but for
// those in keep (e.g. "\n\t" for a document).
func escapeExcept(s, keep string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalidAt(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r) || strings.ContainsRune(keep, r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func isInvalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}
