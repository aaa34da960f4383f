// Package explain_test checks the manager's /explain endpoint on a real
// kube-apiserver: what it answers for objects in the states users ask about,
// and to whom (each caller's own RBAC decides, per object).
package explain_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Manager: &framework.ManagerOptions{Metrics: true}}, &cp, &manager))
}

// explainAs asks the manager to explain o as who; it returns the status
// code and, on 200, the explanation.
func explainAs(t *testing.T, who framework.Identity, query string) (int, explain.Explanation) {
	t.Helper()
	code, body, err := manager.Get(explain.Path+"?"+query, who.Token)
	if err != nil {
		t.Fatalf("GET %s: %v", explain.Path, err)
	}
	var ex explain.Explanation
	if code == http.StatusOK {
		if err := json.Unmarshal(body, &ex); err != nil {
			t.Fatalf("decoding the explanation: %v\n%s", err, body)
		}
	}
	return code, ex
}

func queryFor(o framework.Object) string {
	return explain.Query(o.GVR, o.Namespace, o.Name).Encode()
}

// mustExplain asks as who and fails unless the answer is 200.
func mustExplain(t *testing.T, who framework.Identity, o framework.Object) explain.Explanation {
	t.Helper()
	code, ex := explainAs(t, who, queryFor(o))
	if code != http.StatusOK {
		t.Fatalf("explaining %s as %s: %d, want 200", o, who.Name, code)
	}
	return ex
}

// reader may get every ConfigMap and Secret of its namespace.
func reader(t *testing.T, ns string) framework.Identity {
	return cp.NewIdentity(t, ns, "reader", false, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "events"}, Verbs: []string{"get"}})
}

// withEventFields fills the fields a core Event needs.
func withEventFields(ns string) framework.Option {
	return func(u *unstructured.Unstructured) {
		u.Object["involvedObject"] = map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "x"}
		u.Object["reason"] = "Test"
		u.Object["message"] = "an event"
	}
}
