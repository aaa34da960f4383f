// Package adoption_test checks what lets an operator adopt ownergc safely,
// on a real kube-apiserver: dry-run beside kube-controller-manager's
// collector with shadow agreement, protection, and propagation per
// resource. The control plane keeps an audit log, so that what ownergc
// wrote can be told from what others wrote.
package adoption_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Audited: true}, &cp, nil))
}
