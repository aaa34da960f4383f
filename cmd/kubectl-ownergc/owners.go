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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/explain"
)

// OwnerUnknown: the owner could not be read (forbidden, or an error): the
// plugin cannot tell. (The manager's statuses are explain.Owner*.)
const OwnerUnknown = string(decision.OwnerUnknown)

// ownerLookup is what the API server says about the object an owner
// reference names.
type ownerLookup struct {
	// reference is the owner reference looked up.
	reference metav1.OwnerReference
	// ref names the owner as the reference does, with its resource and
	// namespace once its kind is known.
	ref objectRef
	// obj is the owner, when it exists with the reference's UID.
	obj *metav1.PartialObjectMetadata
	// status is explain.OwnerSolid, explain.OwnerWaiting, explain.OwnerDangling,
	// explain.OwnerUnverifiable, or OwnerUnknown; reason says why.
	status, reason string
}

// ownerLookupFunc looks up the owner a reference of an object in namespace
// names.
type ownerLookupFunc func(ctx context.Context, namespace string, ref metav1.OwnerReference) ownerLookup

// lookupOwner reads the owner ref names, for a dependent in namespace ("" for
// a cluster-scoped dependent).
func (c *clients) lookupOwner(ctx context.Context, namespace string, ref metav1.OwnerReference) ownerLookup {
	l := ownerLookup{reference: ref, ref: objectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}}
	if why := checkName(ref.Name); why != "" {
		// Looking it up would read another object, or another resource:
		// the collector never does, and treats the reference as it treats
		// an owner that is gone.
		l.status, l.reason = explain.OwnerDangling, namesNoObject(why)
		return l
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		l.status, l.reason = explain.OwnerUnverifiable, fmt.Sprintf("its apiVersion %q is invalid", ref.APIVersion)
		return l
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	var note string
	m, err := c.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		if m, err = c.mapper.RESTMapping(gk); err == nil {
			note = fmt.Sprintf(" (read at %s: the reference's version %s is not served)", m.GroupVersionKind.Version, gv.Version)
		}
	}
	switch {
	case meta.IsNoMatchError(err):
		l.status, l.reason = explain.OwnerUnverifiable, fmt.Sprintf("its kind %s is not served by the API server: it cannot be verified, and that is never a reason to delete", gv.WithKind(ref.Kind))
		return l
	case err != nil:
		l.status, l.reason = OwnerUnknown, fmt.Sprintf("its kind cannot be resolved: %v", err)
		return l
	}
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	l.ref.Resource = formatGVR(m.Resource)
	if namespaced {
		l.ref.Namespace = namespace
		if namespace == "" {
			l.status, l.reason = explain.OwnerUnverifiable, "a cluster-scoped object cannot have an owner of a namespaced kind"
			return l
		}
		if why := checkNamespace(namespace); why != "" {
			l.status, l.reason = OwnerUnknown, fmt.Sprintf("its namespace %s cannot be the name of a namespace (%s): it is not looked up", quoted(namespace), why)
			return l
		}
	}
	obj, err := c.metadata.Resource(m.Resource).Namespace(l.ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case isNotFound(err):
		obj = nil
	case isForbidden(err):
		l.status, l.reason = OwnerUnknown, "you may not get it"+note
		return l
	case err != nil:
		l.status, l.reason = OwnerUnknown, fmt.Sprintf("it cannot be read: %v", err)
		return l
	}
	l.status = string(decision.OwnerFromRead(ref.UID, obj))
	switch {
	case obj == nil:
		l.reason = "no such object"
	case l.status == explain.OwnerDangling:
		l.reason = fmt.Sprintf("its name belongs to another object (uid %s)", obj.UID)
	case l.status == explain.OwnerWaiting:
		l.reason = "it is being deleted in the foreground and waits for its blocking dependents"
	case obj.DeletionTimestamp != nil:
		l.reason = "it exists, being deleted (it is gone once its finalizers are removed)"
	default:
		l.reason = "it exists"
	}
	if l.status != explain.OwnerDangling {
		l.obj = obj
	}
	l.reason += note
	return l
}

// namesNoObject is the reason of an owner reference whose name cannot be
// an object's name.
func namesNoObject(why string) string {
	return fmt.Sprintf("its name cannot be one path segment (%s), so it names no object: it is never looked up, and the collector treats the reference as dangling (an owner that is gone)", why)
}
