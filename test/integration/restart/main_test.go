// Package restart_test checks what ownergc does across its own lifetime on a
// real kube-apiserver: work that piled up while no collector ran, work left
// in flight by a collector that stopped, and readiness while an aggregated
// API fails. No kube-controller-manager runs, so every cascade seen here is
// ownergc's. One control plane serves the package; each test starts and stops
// its own managers (never two at once) and works in a fresh namespace.
package restart_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) { os.Exit(framework.RunSuite(m, framework.SuiteOptions{}, &cp, nil)) }
