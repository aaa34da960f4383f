// Package api_test checks the GCPolicy API as a real kube-apiserver serves it
// from the CRD in config/crd/bases: schema defaulting, validation and the
// status subresource. No manager runs; only the API server is under test.
package api_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// k8sClient talks to the control plane that TestMain starts for the whole
// package.
var k8sClient client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := framework.NewEnvironment()
	if err != nil {
		fmt.Fprintf(os.Stderr, "setting up the test control plane: %v\n", err)
		return 1
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the test control plane: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test control plane: %v\n", err)
		}
	}()

	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		fmt.Fprintf(os.Stderr, "building the scheme: %v\n", err)
		return 1
	}
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating the client: %v\n", err)
		return 1
	}
	return m.Run()
}

// ctx returns a context bounded for a single API call or short wait.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// unstructuredPolicy builds a GCPolicy as a plain map so that exactly the
// given JSON reaches the server: zero values, empty lists and missing fields
// are sent as written rather than as the Go types would encode them. A nil
// spec leaves the spec field out altogether.
func unstructuredPolicy(name string, spec map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "GCPolicy",
		"metadata":   map[string]any{"name": name},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	return &unstructured.Unstructured{Object: obj}
}

// deleteOnCleanup makes sure the cluster-scoped policy name is gone once the
// test ends, so that the next test can create its own. It is registered
// before the create, so that an object a test wrongly got accepted is removed
// too.
func deleteOnCleanup(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(func() { deletePolicy(t, name) })
}

// deletePolicy deletes the policy name (if it exists) and waits until the
// server no longer returns it.
func deletePolicy(t *testing.T, name string) {
	t.Helper()
	p := &v1alpha1.GCPolicy{}
	p.Name = name
	if err := k8sClient.Delete(ctx(t), p); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting GCPolicy %q: %v", name, err)
		return
	}
	framework.Eventually(t, 30*time.Second, func() error {
		err := k8sClient.Get(ctx(t), client.ObjectKey{Name: name}, &v1alpha1.GCPolicy{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		default:
			return fmt.Errorf("GCPolicy %q still exists", name)
		}
	}, "waiting for GCPolicy %q to be deleted", name)
}

// getPolicy reads the policy name back from the server.
func getPolicy(t *testing.T, name string) *v1alpha1.GCPolicy {
	t.Helper()
	p := &v1alpha1.GCPolicy{}
	if err := k8sClient.Get(ctx(t), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatalf("reading GCPolicy %q back: %v", name, err)
	}
	return p
}
