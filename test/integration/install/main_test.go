/*
Copyright 2026 The ownergc Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package install_test proves that the installation works: it applies
// dist/install.yaml, and the Helm chart in dist/chart rendered with Helm's
// library, to real kube-apiservers (the Deployment's pods do not run there,
// which is fine) and runs the manager binary authenticated as the
// ServiceAccount the manifests create, with exactly the RBAC they grant.
package install_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/ownergc/ownergc/test/framework"
)

const (
	systemNamespace = "ownergc-system"
	serviceAccount  = "ownergc-controller-manager"
)

// cluster is a control plane that ownergc was installed into.
type cluster struct {
	*framework.ControlPlane
	// namespace and serviceAccount of the installed manager.
	namespace, serviceAccount string
}

var (
	// installed has dist/install.yaml applied.
	installed  *cluster
	repoRoot   string
	managerBin string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if repoRoot, err = framework.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workDir, err := os.MkdirTemp("", "ownergc-install-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if managerBin, err = framework.BuildManager(workDir); err != nil {
		fmt.Fprintln(os.Stderr, "building the manager:", err)
		return 1
	}
	var cp *framework.ControlPlane
	// No CRDs preinstalled: the installer brings them.
	return framework.RunSuite(m, framework.SuiteOptions{Bare: true, Setup: func(c *framework.ControlPlane) error {
		installed = &cluster{ControlPlane: c, namespace: systemNamespace, serviceAccount: serviceAccount}
		manifests, err := os.ReadFile(filepath.Join(repoRoot, "dist", "install.yaml"))
		if err == nil {
			err = installed.apply(manifests)
		}
		if err != nil {
			return fmt.Errorf("applying dist/install.yaml: %w", err)
		}
		return nil
	}}, &cp, nil)
}

// apply applies every object of a multi-document YAML stream, in order, as
// `kubectl apply --server-side` does: it creates what is missing and updates
// what exists.
func (c *cluster) apply(manifests []byte) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Clientset.Discovery()))
	objs, err := framework.DecodeManifests(manifests)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("mapping %s: %w", gvk, err)
		}
		ri := c.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		if obj.GetNamespace() == "" {
			ri = c.Dynamic.Resource(mapping.Resource)
		}
		if _, err := ri.Apply(context.Background(), obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: "ownergc-install-test", Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	return nil
}

// kubeconfigFor writes a kubeconfig that authenticates with a bearer token.
func (c *cluster) kubeconfigFor(t *testing.T, name, tok string) string {
	t.Helper()
	return c.WriteKubeconfig(t, framework.Identity{Name: name, Token: tok}, "")
}

// process is a manager binary running as the installed ServiceAccount.
type process struct{ *framework.ManagerProcess }

// startManager runs the manager binary with the token of the ServiceAccount
// that dist/install.yaml creates.
func startManager(t *testing.T, name string, extraArgs ...string) *process {
	t.Helper()
	return installed.startManager(t, name, extraArgs...)
}

// startManager runs the manager binary with the token of the installed
// ServiceAccount and its metrics server on; it is stopped when the test
// ends, and its log is shown if the test failed.
func (c *cluster) startManager(t *testing.T, name string, extraArgs ...string) *process {
	t.Helper()
	kubeconfig := c.kubeconfigFor(t, name, c.Token(t, c.namespace, c.serviceAccount))
	m, err := framework.StartManagerProcess(framework.ManagerProcessOptions{
		Name: "manager " + name, Binary: managerBin, Kubeconfig: kubeconfig, Metrics: true,
		Args: append([]string{"--kube-api-qps=500", "--kube-api-burst=500"}, extraArgs...),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Stop()
		if t.Failed() {
			t.Logf("log of manager %s:\n%s", name, m.Tail(60))
		}
	})
	return &process{m}
}

func (p *process) waitReady(t *testing.T) {
	t.Helper()
	if err := p.WaitReady(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
}

// get requests a path of the metrics server with an optional bearer token.
func (p *process) get(t *testing.T, path, bearer string) (int, string) {
	t.Helper()
	code, body, err := p.GetMetrics(path, bearer)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}
