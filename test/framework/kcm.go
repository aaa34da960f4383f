package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// KubeControllerManager is kube-controller-manager running against the
// control plane with some of its controllers, to compare ownergc with (its
// garbage collector) or to run beside it.
type KubeControllerManager struct {
	*Process
	// UserName is the user it authenticates as (a member of
	// system:masters): audit entries and events name it.
	UserName string
}

// StartKubeControllerManager starts kube-controller-manager (built by `make
// envtest-assets` beside kube-apiserver) with only the given controllers
// (e.g. "garbagecollector") and waits until its garbage collector, when it
// runs one, has synced; it stops when the test ends.
func (cp *ControlPlane) StartKubeControllerManager(t testing.TB, controllers ...string) *KubeControllerManager {
	t.Helper()
	return cp.StartKubeControllerManagerWithFlags(t, nil, controllers...)
}

// StartKubeControllerManagerWithFlags is StartKubeControllerManager with
// more flags (e.g. "--terminated-pod-gc-threshold=3").
func (cp *ControlPlane) StartKubeControllerManagerWithFlags(t testing.TB, flags []string, controllers ...string) *KubeControllerManager {
	t.Helper()
	assets, err := AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-controller-manager not found in %s: run 'make envtest-assets'", assets)
	}
	dir := t.TempDir()
	user := "kube-controller-manager-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if _, err := cp.WriteAdminKubeconfig(user, kubeconfig); err != nil {
		t.Fatalf("writing a kubeconfig for kube-controller-manager: %v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	lines := &lineLog{}
	p, err := StartProcess(ProcessOptions{
		Name: "kube-controller-manager", Path: bin, LogPath: filepath.Join(dir, "kube-controller-manager.log"), Output: lines,
		StopGrace: 10 * time.Second,
		Args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--controllers=" + strings.Join(controllers, ","),
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			fmt.Sprintf("--secure-port=%d", port),
			"--bind-address=127.0.0.1",
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--v=2",
		}, flags...),
	})
	if err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	kcm := &KubeControllerManager{Process: p, UserName: user}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("kube-controller-manager log:\n%s", p.Tail(40))
		}
	})
	for _, c := range controllers {
		if c != "garbagecollector" {
			continue
		}
		Eventually(t, 2*time.Minute, func() error {
			if err := p.Alive(); err != nil {
				return fmt.Errorf("kube-controller-manager exited: %w", err)
			}
			if !lines.contains("Proceeding to collect garbage") {
				return fmt.Errorf("its garbage collector has not synced yet")
			}
			return nil
		}, "kube-controller-manager's garbage collector should start")
	}
	return kcm
}

// lineLog keeps a process's output to look for lines in it.
type lineLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lineLog) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}
