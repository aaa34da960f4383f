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
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// requestsAuditPolicy records every request, reads and watches included, at
// the Metadata level: a watch when its response starts (it may never
// complete while the test runs), any other request when it completes.
const requestsAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// StartBareControlPlaneRecordingRequests starts a control plane without any
// CRD whose kube-apiserver writes an audit log of every request, whatever
// its verb; see Requests. (StartAuditedControlPlane records only the
// requests that write.)
func StartBareControlPlaneRecordingRequests() (*ControlPlane, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	return startAudited(&envtest.Environment{BinaryAssetsDirectory: assets}, requestsAuditPolicy)
}

// Request is one request from the audit log.
type Request struct {
	AuditEntry
	// Stage is ResponseStarted (a watch) or ResponseComplete.
	Stage string `json:"stage"`
	// RequestURI is the path and query; for a request to no resource
	// (/api, /version, ...), ObjectRef is empty and this says what it was.
	RequestURI string `json:"requestURI"`
}

// Requests returns the requests that user made so far, reads included, as
// the audit log of a control plane started with
// StartBareControlPlaneRecordingRequests holds them (on another audited
// control plane, only those that wrote).
func (cp *ControlPlane) Requests(user string) ([]Request, error) {
	return readAuditLog[Request](cp, user, "StartBareControlPlaneRecordingRequests")
}
