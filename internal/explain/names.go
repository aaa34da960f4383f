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

package explain

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A name or a namespace that becomes part of a request path must be one
// path segment, checked before any request is built: client-go joins the
// namespace and the name into the path and cleans it, so that the name
// "../../other/secrets/x" of a ConfigMap in namespace "mine" reads the
// Secret x of namespace "other". No object can have such a name (the API
// server serves every object at a path of its own), so a name that fails
// these checks names no object.

// MaxNameLength bounds the names put in a request path, and in a
// SubjectAccessReview. Kubernetes names are at most 253 characters for
// nearly every resource; the few whose names are only required to be one
// path segment (RBAC's roles and bindings) have no limit of their own, and
// this one is far above any name seen in practice. It bounds what one
// name costs: a request line, a review, an entry of the authorizer's
// cache.
const MaxNameLength = 1024

// MaxUIDLength bounds the UIDs /explain is asked about (the API server's
// are 36-character UUIDs).
const MaxUIDLength = 128

// InvalidNameError says that a name, a namespace or a UID cannot be one
// segment of a request path.
type InvalidNameError struct {
	// What is "name", "namespace" or "uid".
	What string
	// Value is what was given.
	Value string
	// Reasons say why it cannot be.
	Reasons []string
}

func (e *InvalidNameError) Error() string {
	return fmt.Sprintf("%s %s cannot be one segment of a request path: %s", e.What, Shorten(e.Value), strings.Join(e.Reasons, "; "))
}

// shortenAt is how much of a long value messages quote.
const shortenAt = 64

// Shorten quotes s as Go quotes strings (control characters escaped), at
// most its first 64 bytes followed by its length when it is longer: for
// messages that quote a value that may be long.
func Shorten(s string) string {
	if len(s) <= shortenAt {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:shortenAt]), len(s))
}

// ValidateName returns an *InvalidNameError unless name can be an object's
// name: not empty, at most MaxNameLength bytes, and one path segment
// (apimachinery's content.IsPathSegmentName: not "." or "..", no "/" and
// no "%").
func ValidateName(name string) error {
	return check("name", name, MaxNameLength, content.IsPathSegmentName)
}

// ValidateNamespace returns an *InvalidNameError unless ns can be a
// namespace: a DNS-1123 label (which "" is not).
func ValidateNamespace(ns string) error {
	return check("namespace", ns, validation.DNS1123LabelMaxLength, validation.IsDNS1123Label)
}

// ValidatePath returns an *InvalidNameError unless namespace and name can
// address an object in a request path: a namespaced object's namespace
// (cluster-scoped objects have none: "") and its name.
func ValidatePath(namespace, name string) error {
	if namespace != "" {
		if err := ValidateNamespace(namespace); err != nil {
			return err
		}
	}
	return ValidateName(name)
}

// ValidateUID returns an *InvalidNameError unless uid can be an object's
// UID as /explain is asked about it: not empty, at most MaxUIDLength
// bytes, one path segment.
func ValidateUID(uid string) error {
	return check("uid", uid, MaxUIDLength, content.IsPathSegmentName)
}

func check(what, value string, maxLength int, valid func(string) []string) error {
	var reasons []string
	switch {
	case value == "":
		reasons = []string{"it is empty"}
	case len(value) > maxLength:
		reasons = []string{fmt.Sprintf("it is longer than %d bytes", maxLength)}
	default:
		reasons = valid(value)
	}
	if len(reasons) == 0 {
		return nil
	}
	return &InvalidNameError{What: what, Value: value, Reasons: reasons}
}

// ValidateQuery checks the names of a request's query before anything is
// done with them: the uid when it asks by UID, otherwise the name, and the
// namespace when one is given. It returns an *InvalidNameError for the
// first that cannot be one path segment.
func ValidateQuery(q url.Values) error {
	if q.Has("uid") {
		return ValidateUID(q.Get("uid"))
	}
	if q.Has("namespace") && q.Get("namespace") != "" {
		if err := ValidateNamespace(q.Get("namespace")); err != nil {
			return err
		}
	}
	return ValidateName(q.Get("name"))
}
