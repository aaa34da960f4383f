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
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditPolicy records every request that writes, at the Metadata level.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// startAudited starts env's control plane with an audit log of what policy
// records, in a temporary directory of its own (removed by Stop).
func startAudited(env *envtest.Environment, policy string) (*ControlPlane, error) {
	dir, err := os.MkdirTemp("", "ownergc-audit-")
	if err != nil {
		return nil, err
	}
	policyFile := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	log := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policyFile).
		Set("audit-log-path", log).
		Set("audit-log-format", "json")
	cp, err := startWith(env)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cp.auditLog, cp.auditDir = log, dir
	return cp, nil
}

// StartAuditedControlPlane starts a control plane (with ownergc's CRDs)
// whose kube-apiserver writes an audit log of the requests that write; see
// Writes.
func StartAuditedControlPlane() (*ControlPlane, error) {
	env, err := NewEnvironment()
	if err != nil {
		return nil, err
	}
	return startAudited(env, auditPolicy)
}

// AuditEntry is one request that wrote, from the audit log.
type AuditEntry struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

func (e AuditEntry) String() string {
	r := e.ObjectRef
	return fmt.Sprintf("%s %s %s/%s/%s %s/%s (%d)", e.User.Username, e.Verb, r.APIGroup, r.Resource, r.Subresource, r.Namespace, r.Name, e.ResponseStatus.Code)
}

func (e AuditEntry) user() string { return e.User.Username }

// Writes returns the requests that wrote, made by user, so far (the
// control plane must have been started with StartAuditedControlPlane).
func (cp *ControlPlane) Writes(user string) ([]AuditEntry, error) {
	return readAuditLog[AuditEntry](cp, user, "StartAuditedControlPlane")
}

// readAuditLog reads the entries of cp's audit log that user made; start
// names how to start a control plane that keeps one.
func readAuditLog[T interface{ user() string }](cp *ControlPlane, user, start string) ([]T, error) {
	if cp.auditLog == "" {
		return nil, fmt.Errorf("the control plane keeps no audit log: start it with %s", start)
	}
	f, err := os.Open(cp.auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e T
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		if e.user() == user {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
