package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

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
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	dir, err := os.MkdirTemp("", "ownergc-requests-")
	if err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(requestsAuditPolicy), 0o600); err != nil {
		return nil, err
	}
	log := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
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
	if cp.auditLog == "" {
		return nil, fmt.Errorf("the control plane keeps no audit log: start it with StartBareControlPlaneRecordingRequests")
	}
	f, err := os.Open(cp.auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		if r.User.Username == user {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}
