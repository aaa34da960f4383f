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

package framework

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running test control plane with admin clients, and
// the helpers tests use on it: objects of any kind (objects.go), CRDs
// (crd.go), deletion logs (deletions.go) and faults (faults.go).
type ControlPlane struct {
	Env       *envtest.Environment
	Config    *rest.Config
	Client    client.Client
	Clientset *kubernetes.Clientset
	Dynamic   *dynamic.DynamicClient
	Apix      *apiextensionsclient.Clientset

	// diagnoseFn, when set, describes what the running manager knows of
	// an object a wait failed on, for the failure message.
	diagnoseMu sync.Mutex
	diagnoseFn func(Object) string

	// auditLog is kube-apiserver's audit log, in auditDir, when audited.
	auditLog, auditDir string

	// apiServerArgv is kube-apiserver's command line once the framework
	// stopped it; restarted is the kube-apiserver the framework started.
	apiServerArgv []string
	restarted     *apiServer
}

// StartControlPlane starts kube-apiserver and etcd with ownergc's CRDs
// installed (see NewEnvironment) and returns admin clients for it.
func StartControlPlane() (*ControlPlane, error) {
	env, err := NewEnvironment()
	if err != nil {
		return nil, err
	}
	return startWith(env)
}

// StartBareControlPlane starts kube-apiserver and etcd without any CRD.
func StartBareControlPlane() (*ControlPlane, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	return startWith(&envtest.Environment{BinaryAssetsDirectory: assets})
}

func startWith(env *envtest.Environment) (*ControlPlane, error) {
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cp := &ControlPlane{Env: env, Config: cfg}
	if cp.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err == nil {
		if cp.Clientset, err = kubernetes.NewForConfig(cfg); err == nil {
			if cp.Dynamic, err = dynamic.NewForConfig(cfg); err == nil {
				cp.Apix, err = apiextensionsclient.NewForConfig(cfg)
			}
		}
	}
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return cp, nil
}

// Stop stops the control plane.
func (cp *ControlPlane) Stop() {
	if cp.restarted != nil {
		cp.restarted.stop()
		cp.restarted = nil
	}
	_ = cp.Env.Stop()
	if cp.auditDir != "" {
		_ = os.RemoveAll(cp.auditDir)
	}
}

// StartManager starts an in-process manager for one test (see the function
// StartManager): it is stopped when the test ends, and until then waits that
// fail say what it knows of the object. Stop it earlier with its Stop.
func (cp *ControlPlane) StartManager(t testing.TB, o ManagerOptions) *Manager {
	t.Helper()
	cfg := cp.Config
	if o.User != "" {
		admin, err := cp.Env.AddUser(envtest.User{Name: o.User, Groups: []string{"system:masters"}}, cp.Config)
		if err != nil {
			t.Fatalf("adding user %s: %v", o.User, err)
		}
		cfg = admin.Config()
	}
	m, err := StartManager(cfg, o)
	if err != nil {
		t.Fatalf("starting ownergc: %v", err)
	}
	cp.setDiagnose(m.Describe)
	t.Cleanup(func() {
		m.Stop()
		cp.setDiagnose(nil)
	})
	return m
}

func (cp *ControlPlane) setDiagnose(f func(Object) string) {
	cp.diagnoseMu.Lock()
	defer cp.diagnoseMu.Unlock()
	cp.diagnoseFn = f
}

// diagnose describes what the running manager knows of o, on a line of its
// own, or nothing when no manager runs.
func (cp *ControlPlane) diagnose(o Object) string {
	cp.diagnoseMu.Lock()
	f := cp.diagnoseFn
	cp.diagnoseMu.Unlock()
	if f == nil {
		return ""
	}
	return "\n" + f(o)
}

// WriteAdminKubeconfig adds a user of group system:masters to the control
// plane, writes a kubeconfig for it to path (for kubectl and manager
// binaries) and returns its client configuration.
func (cp *ControlPlane) WriteAdminKubeconfig(user, path string) (*rest.Config, error) {
	admin, err := cp.Env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, cp.Config)
	if err != nil {
		return nil, err
	}
	data, err := admin.KubeConfig()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	return admin.Config(), nil
}

// OwnerRef returns an owner reference to obj, of kind gvk.
func OwnerRef(obj client.Object, gvk schema.GroupVersionKind, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: &block,
	}
}

// Exists reports whether obj (by namespace and name) exists.
func Exists(t testing.TB, c client.Client, obj client.Object) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("reading %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
	return true
}

// WaitGone waits up to timeout for obj to be deleted and fails the test
// with why otherwise.
func WaitGone(t testing.TB, c client.Client, obj client.Object, timeout time.Duration, why string) {
	t.Helper()
	Eventually(t, timeout, func() error {
		if Exists(t, c, obj) {
			return fmt.Errorf("%s/%s still exists", obj.GetNamespace(), obj.GetName())
		}
		return nil
	}, "%s/%s should be deleted: %s", obj.GetNamespace(), obj.GetName(), why)
}

const (
	// CascadeTimeout bounds how long a cascade the collector must perform
	// may take in a test; generous for a busy 2-core machine.
	CascadeTimeout = 30 * time.Second
	// Quiet is how long an object must survive to show that the collector
	// left it alone, after the event that would have made it act was
	// processed.
	Quiet = 3 * time.Second
)

// ConfigMapGVK is the kind most tests use for owners and dependents.
var ConfigMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// Context returns a context that ends with the test (or after two minutes).
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}
