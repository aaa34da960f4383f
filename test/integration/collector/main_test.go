// Package collector_test runs ownergc's collector against a real
// kube-apiserver (no kube-controller-manager runs there, so every cascade
// seen here is ownergc's). One control plane and one manager serve the whole
// package; each test works in a fresh namespace.
package collector_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cfg       *rest.Config
	k8s       client.Client
	clientset *kubernetes.Clientset
	manager   *framework.Manager
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
	cfg, k8s, clientset = cp.Config, cp.Client, cp.Clientset
	if manager, err = framework.StartManager(cfg, framework.ManagerOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "starting ownergc:", err)
		return 1
	}
	defer manager.Stop()
	return m.Run()
}
