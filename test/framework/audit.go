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

// enableAudit makes env's kube-apiserver write an audit log of every
// request that writes, into dir; it returns the log's path.
func enableAudit(env *envtest.Environment, dir string) (string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", err
	}
	log := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", log).
		Set("audit-log-format", "json")
	return log, nil
}

// StartAuditedControlPlane starts a control plane (with ownergc's CRDs)
// whose kube-apiserver writes an audit log of the requests that write; see
// Writes.
func StartAuditedControlPlane() (*ControlPlane, error) {
	env, err := NewEnvironment()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ownergc-audit-")
	if err != nil {
		return nil, err
	}
	log, err := enableAudit(env, dir)
	if err != nil {
		return nil, err
	}
	cp, err := startWith(env)
	if err != nil {
		return nil, err
	}
	cp.auditLog, cp.auditDir = log, dir
	return cp, nil
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

// Writes returns the requests that wrote, made by user, so far (the
// control plane must have been started with StartAuditedControlPlane).
func (cp *ControlPlane) Writes(user string) ([]AuditEntry, error) {
	if cp.auditLog == "" {
		return nil, fmt.Errorf("the control plane keeps no audit log: start it with StartAuditedControlPlane")
	}
	f, err := os.Open(cp.auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		if e.User.Username == user {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
