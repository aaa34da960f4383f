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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the conditions of a ClusterGCStatus (beside those of a
// GCPolicy's).
const (
	// ReasonStarting: the cluster is engaged and its engine is being
	// built or is discovering.
	ReasonStarting = "Starting"
	// ReasonEngineFailed: the cluster's engine could not be built or
	// stopped with an error; it is built again with backoff.
	ReasonEngineFailed = "EngineFailed"
	// ReasonUnreachable: the cluster's API server does not answer.
	ReasonUnreachable = "Unreachable"
	// ReasonKubeconfigRefused: the cluster's Secret holds a kubeconfig
	// with a field the manager refuses (an exec or auth-provider plugin,
	// a file path, a proxy, an unverified or plain-text server); no cluster
	// is engaged for it until the Secret is written without it (or the
	// manager opts in to the field with its --insecure-kubeconfig-* flag).
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonSecretInvalid: the cluster's Secret holds no usable kubeconfig
	// (the key is missing, it does not parse, its current context names no
	// cluster with a server) or its name is too long; no cluster is
	// engaged for it.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonObjectLimitExceeded: the cluster's graph held more objects than
	// the manager's --max-objects-per-cluster allows; its engine stopped,
	// and is built again after a while, so that one cluster cannot take the
	// memory of all.
	ReasonObjectLimitExceeded = "ObjectLimitExceeded"
)

// ClusterGCStatusStatus is the state of one cluster's engine.
type ClusterGCStatusStatus struct {
	// Cluster is the cluster's name in the fleet: the name of its
	// kubeconfig Secret.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Replica names the replica whose engine collects the cluster.
	// +optional
	Replica string `json:"replica,omitempty"`
	// Engaged is when this replica engaged the cluster.
	// +optional
	Engaged *metav1.Time `json:"engaged,omitempty"`
	// EngineStarts counts the engines built for the cluster since it was
	// engaged (more than one: it failed and was built again).
	// +optional
	EngineStarts int32 `json:"engineStarts,omitempty"`
	// MonitoredResources is the number of resources watched.
	// +optional
	MonitoredResources int32 `json:"monitoredResources,omitempty"`
	// FailedResources is the number of resources or group-versions that
	// cannot be discovered or watched.
	// +optional
	FailedResources int32 `json:"failedResources,omitempty"`
	// Nodes and VirtualNodes are the size of the cluster's ownership
	// graph.
	// +optional
	Nodes int64 `json:"nodes,omitempty"`
	// +optional
	VirtualNodes int64 `json:"virtualNodes,omitempty"`
	// BlockedDeletions is the number of blocked foreground and orphaning
	// deletions.
	// +optional
	BlockedDeletions int32 `json:"blockedDeletions,omitempty"`
	// Conditions: Ready (the cluster's graph has synced and it is
	// collected) and Degraded (its API server does not answer, its engine
	// failed, or some of its resources cannot be watched).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastUpdate is when the replica last wrote this status: at once when
	// its conditions, replica, engine starts, failed resources or blocked
	// deletions change; when only the counts of resources and nodes or the
	// conditions' messages move (an engine syncing), at most every 10
	// seconds; and at least every two minutes while it collects the
	// cluster.
	// +optional
	LastUpdate *metav1.Time `json:"lastUpdate,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cgcs,categories=ownergc
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.status.cluster`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Monitored",type=integer,JSONPath=`.status.monitoredResources`
// +kubebuilder:printcolumn:name="Replica",type=string,JSONPath=`.status.replica`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterGCStatus reports, on the host of a fleet (the fleet mode,
// --cluster-source), the state of one cluster's engine: the manager writes
// one per engaged cluster, in the namespace of the kubeconfig Secrets and
// named after the cluster, owned by the cluster's Secret. Each cluster's own
// `GCPolicy default` reports the same in more detail, in that cluster.
type ClusterGCStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status ClusterGCStatusStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterGCStatusList contains a list of ClusterGCStatus.
type ClusterGCStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterGCStatus `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterGCStatus{}, &ClusterGCStatusList{})
}
