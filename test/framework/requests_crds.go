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

// StartControlPlaneRecordingRequests starts a control plane with ownergc's
// CRDs installed (as StartControlPlane) whose kube-apiserver writes an
// audit log of every request, reads and watches included; see Requests.
// The fleet profile of test/bench counts with it what an idle fleet asks
// of its host and of each member.
func StartControlPlaneRecordingRequests() (*ControlPlane, error) {
	env, err := NewEnvironment()
	if err != nil {
		return nil, err
	}
	return startAudited(env, requestsAuditPolicy)
}
