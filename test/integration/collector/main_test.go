// Package collector_test runs ownergc's collector against a real
// kube-apiserver (no kube-controller-manager runs there, so every cascade
// seen here is ownergc's). One control plane and one manager serve the whole
// package; each test works in a fresh namespace.
package collector_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Manager: &framework.ManagerOptions{}}, &cp, &manager))
}
