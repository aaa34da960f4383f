// Package fleet_test runs one ownergc manager in the fleet mode
// (--cluster-source=kubeconfig-secrets) against three real control planes:
// the first is also the host, whose namespace holds a kubeconfig Secret for
// each of the three.
package fleet_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

// clusters are the fleet's control planes; clusters[0] is the host.
var clusters [3]*framework.ControlPlane

// names are the clusters' names in the fleet (their Secrets' names).
var names = [3]string{"alpha", "beta", "gamma"}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	for i := range clusters {
		cp, err := framework.StartControlPlane()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cp.Stop()
		clusters[i] = cp
	}
	return m.Run()
}

// host is the control plane that holds the Secrets.
func host() *framework.ControlPlane { return clusters[0] }
