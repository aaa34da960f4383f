// Package policy_test checks that the `default` GCPolicy takes effect while
// the manager runs and that its status tells the truth, against a real
// kube-apiserver. Tests share one control plane and one manager and run one
// after the other; each leaves no GCPolicy behind.
package policy_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cfg       *rest.Config
	k8s       client.Client
	clientset *kubernetes.Clientset
	dyn       *dynamic.DynamicClient
	manager   *framework.Manager
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	cp, err := framework.StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	cfg, k8s, clientset, dyn = cp.Config, cp.Client, cp.Clientset, cp.Dynamic
	// A modest client rate makes a cascade of a few hundred objects last
	// long enough to resize the worker pools in the middle of it.
	manager, err = framework.StartManager(cfg, framework.ManagerOptions{QPS: 100, Burst: 100, StatusRefresh: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ownergc:", err)
		return 1
	}
	defer manager.Stop()
	return m.Run()
}
