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

package collector

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/explain"
)

// Reports that others read name only the objects their readers may see: an
// explanation, whoever may get the object (and, of its related objects,
// those the caller may get too); an event, whoever may read events in its
// namespace (the object's, or "default" for a cluster-scoped one), which
// may name objects of that namespace and cluster-scoped ones
// (eventMayName). Errors name objects: each error of a request, and of work
// on another object than the one processed (an owner read, a dependent
// orphaned), carries the object it is about (objectError); the rest of an
// error's text is about the object whose processing failed, which the
// report is about.

// redact returns err's text when mayName allows every object err is
// about. Otherwise it leaves out what names another object: of an error
// joined from parts (orphaning: one per dependent), the parts that do,
// counted; of any other error, all of it. mayName is asked once per
// object.
func redact(err error, mayName func(explain.Object) bool) string {
	seen := map[explain.Object]bool{}
	allowed := func(o explain.Object) bool {
		ok, asked := seen[o]
		if !asked {
			ok = mayName(o)
			seen[o] = ok
		}
		return ok
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	var shown []string
	left := 0
	for _, p := range parts {
		if namesOnly(p, allowed) {
			shown = append(shown, p.Error())
		} else {
			left++
		}
	}
	switch {
	case left == 0:
		return err.Error()
	case len(shown) == 0 && left == 1:
		return "an error about an object not named here"
	case len(shown) == 0:
		return fmt.Sprintf("%d errors about objects not named here", left)
	}
	return fmt.Sprintf("%s\n(and %d errors about objects not named here)", strings.Join(shown, "\n"), left)
}

// namesOnly reports whether every object err is about is allowed.
func namesOnly(err error, allowed func(explain.Object) bool) bool {
	if o, ok := err.(*objectError); ok && !allowed(o.object) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !namesOnly(e, allowed) {
				return false
			}
		}
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return namesOnly(next, allowed)
		}
	}
	return true
}

// eventMayName says which objects an event about an object of namespace
// (empty: cluster-scoped) may name: those of that namespace and
// cluster-scoped ones. An event of a cluster-scoped object is recorded in
// namespace "default", where its readers may not see objects of any other
// namespace, "default" included.
func eventMayName(namespace string) func(explain.Object) bool {
	return func(o explain.Object) bool { return o.Namespace == "" || o.Namespace == namespace }
}

// sameObject reports whether o is the object namespace/name of resource
// gvr (at any version).
func sameObject(o explain.Object, gvr schema.GroupVersionResource, namespace, name string) bool {
	if o.Namespace != namespace || o.Name != name {
		return false
	}
	if r, err := parseGVR(o.Resource); err == nil {
		return r.GroupResource() == gvr.GroupResource()
	}
	return false
}

// parseGVR parses group/version/resource (version/resource for the core
// group), as discovery.FormatGVR writes it.
func parseGVR(s string) (schema.GroupVersionResource, error) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		return schema.GroupVersionResource{Version: parts[0], Resource: parts[1]}, nil
	case 3:
		return schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("resource %q is not group/version/resource", s)
}
