// Package apigc_test checks the API-level collectors (terminated Pods,
// finished Jobs, stale CertificateSigningRequests) on a real kube-apiserver:
// each rule, enabling and disabling them live, DryRun and protection, and,
// for each, a comparison with kube-controller-manager's own controller on
// the same workload. The Pods, Nodes, Jobs and requests are API objects
// only: the tests set their status themselves, no kubelet runs. The control
// plane keeps an audit log, so that what ownergc wrote can be told from
// what others wrote.
//
// Tests run one at a time and each starts its own manager: the
// terminated-Pod threshold counts the Pods of the whole cluster, so every
// test removes its Pods when it ends.
package apigc_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Audited: true}, &cp, nil))
}
