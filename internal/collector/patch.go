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
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Patch bodies. Every patch names the object's UID, so that it fails on an
// object re-created under the same name; JSON merge patches also carry the
// resourceVersion the change was computed from.

type objectMetaPatch struct {
	Metadata metaPatch `json:"metadata"`
}

type metaPatch struct {
	UID             types.UID `json:"uid"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	OwnerReferences any       `json:"ownerReferences,omitempty"`
	Finalizers      *[]string `json:"finalizers,omitempty"`
}

// deleteRefSMP is one element of a strategic merge patch removing the owner
// references to one UID.
type deleteRefSMP struct {
	Patch string    `json:"$patch"`
	UID   types.UID `json:"uid"`
}

// unblockRefSMP is one element of a strategic merge patch setting
// blockOwnerDeletion=false on the owner references to one UID.
type unblockRefSMP struct {
	UID                types.UID `json:"uid"`
	BlockOwnerDeletion bool      `json:"blockOwnerDeletion"`
}

// deleteRefsPatch is the strategic merge patch list that removes every
// reference to the given owners.
func deleteRefsPatch(owners []types.UID) []deleteRefSMP {
	smp := make([]deleteRefSMP, len(owners))
	for i, uid := range owners {
		smp[i] = deleteRefSMP{Patch: "delete", UID: uid}
	}
	return smp
}

// unblockRefsPatch is the strategic merge patch list that unblocks every
// blocking reference of refs, or nil when none blocks.
func unblockRefsPatch(refs []metav1.OwnerReference) []unblockRefSMP {
	var smp []unblockRefSMP
	for _, r := range refs {
		if boolValue(r.BlockOwnerDeletion) {
			smp = append(smp, unblockRefSMP{UID: r.UID})
		}
	}
	return smp
}

// ownerRefsStrategicPatch is a strategic merge patch of the owner
// references of the object uid.
func ownerRefsStrategicPatch(uid types.UID, list any) ([]byte, error) {
	return json.Marshal(objectMetaPatch{Metadata: metaPatch{UID: uid, OwnerReferences: list}})
}

// ownerRefsMergePatch is a JSON merge patch setting the owner references of
// the object uid at resourceVersion rv.
func ownerRefsMergePatch(uid types.UID, rv string, refs []metav1.OwnerReference) ([]byte, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return json.Marshal(objectMetaPatch{Metadata: metaPatch{UID: uid, ResourceVersion: rv, OwnerReferences: refs}})
}

// finalizersMergePatch is a JSON merge patch setting the finalizers of the
// object uid at resourceVersion rv.
func finalizersMergePatch(uid types.UID, rv string, finalizers []string) ([]byte, error) {
	return json.Marshal(objectMetaPatch{Metadata: metaPatch{UID: uid, ResourceVersion: rv, Finalizers: &finalizers}})
}
