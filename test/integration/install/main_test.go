// Package install_test proves that the installation works: it applies
// dist/install.yaml, and the Helm chart in dist/chart rendered with Helm's
// library, to real kube-apiservers (the Deployment's pods do not run there,
// which is fine) and runs the manager binary authenticated as the
// ServiceAccount the manifests create, with exactly the RBAC they grant.
package install_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

const (
	systemNamespace = "ownergc-system"
	serviceAccount  = "ownergc-controller-manager"
)

// cluster is a control plane that ownergc was installed into.
type cluster struct {
	config    *rest.Config
	k8s       client.Client
	clientset *kubernetes.Clientset
	// namespace and serviceAccount of the installed manager.
	namespace, serviceAccount string
}

var (
	// installed has dist/install.yaml applied; k8s is its admin client.
	installed  *cluster
	k8s        client.Client
	repoRoot   string
	managerBin string
	workDir    string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	root, err := framework.RepoRoot()
	repoRoot = root
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if workDir, err = os.MkdirTemp("", "ownergc-install-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if managerBin, err = framework.BuildManager(workDir); err != nil {
		fmt.Fprintln(os.Stderr, "building the manager:", err)
		return 1
	}

	// No CRDs preinstalled: the installer brings them.
	cp, err := framework.StartBareControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	installed = &cluster{config: cp.Config, k8s: cp.Client, clientset: cp.Clientset,
		namespace: systemNamespace, serviceAccount: serviceAccount}
	k8s = installed.k8s
	manifests, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err == nil {
		err = installed.apply(manifests)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "applying dist/install.yaml:", err)
		return 1
	}
	return m.Run()
}

// apply applies every object of a multi-document YAML stream, in order, as
// `kubectl apply --server-side` does: it creates what is missing and updates
// what exists.
func (c *cluster) apply(manifests []byte) error {
	dc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("mapping %s: %w", gvk, err)
		}
		ri := dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		if obj.GetNamespace() == "" {
			ri = dyn.Resource(mapping.Resource)
		}
		if _, err := ri.(dynamic.ResourceInterface).Apply(context.Background(), obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: "ownergc-install-test", Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
}

// token returns a token of a ServiceAccount of the dist/install.yaml cluster.
func token(t *testing.T, namespace, name string) string {
	t.Helper()
	return installed.token(t, namespace, name)
}

// token returns a token of a ServiceAccount.
func (c *cluster) token(t *testing.T, namespace, name string) string {
	t.Helper()
	expiry := int64(3600)
	tr, err := c.clientset.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token for %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// serviceAccountWithRole creates a ServiceAccount, bound to clusterRole
// unless it is empty.
func serviceAccountWithRole(t *testing.T, name, clusterRole string) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: name}}
	if err := k8s.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if clusterRole == "" {
		return
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: systemNamespace, Name: name}},
	}
	if err := k8s.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// kubeconfigFor writes a kubeconfig that authenticates with a bearer token.
func (c *cluster) kubeconfigFor(t *testing.T, name, tok string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.config.Host, CertificateAuthorityData: c.config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
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
	kubeconfig := c.kubeconfigFor(t, name, c.token(t, c.namespace, c.serviceAccount))
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
