// Package crd_test runs ownergc against custom resources on a real
// kube-apiserver: CustomResourceDefinitions created, deleted and re-created
// while the manager runs, custom resources as owners and dependents (they do
// not support strategic merge patch), and owner references to kinds that are
// not served yet. No kube-controller-manager runs, so every cascade seen here
// is ownergc's. One control plane and one manager serve the whole package;
// each test uses CRDs of its own group and a fresh namespace.
package crd_test

import (
	"fmt"
	"os"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cfg     *rest.Config
	k8s     client.Client
	apix    apiextensionsclient.Interface
	dyn     dynamic.Interface
	manager *framework.Manager
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
	if apix, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if manager, err = framework.StartManager(cfg, framework.ManagerOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "starting ownergc:", err)
		return 1
	}
	defer manager.Stop()
	return m.Run()
}
