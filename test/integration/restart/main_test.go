// Package restart_test checks what ownergc does across its own lifetime on a
// real kube-apiserver: work that piled up while no collector ran, work left
// in flight by a collector that stopped, and readiness while an aggregated
// API fails. No kube-controller-manager runs, so every cascade seen here is
// ownergc's. One control plane serves the package; each test starts and stops
// its own managers (never two at once) and works in a fresh namespace.
package restart_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cfg  *rest.Config
	k8s  client.Client
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cp, err := framework.StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	cfg, k8s, dyn = cp.Config, cp.Client, cp.Dynamic
	if disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
