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
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	lines := &lockedBuffer{}
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
			if !strings.Contains(lines.String(), "Proceeding to collect garbage") {
				return fmt.Errorf("its garbage collector has not synced yet")
			}
			return nil
		}, "kube-controller-manager's garbage collector should start")
	}
	return kcm
}
