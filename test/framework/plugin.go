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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PluginRun is one run of the kubectl plugin (BuildPlugin).
type PluginRun struct {
	Args           []string
	Stdout, Stderr string
	Err            error
}

func (r PluginRun) String() string {
	return fmt.Sprintf("kubectl ownergc %s (%v)\n--- stdout:\n%s--- stderr:\n%s", strings.Join(r.Args, " "), r.Err, r.Stdout, r.Stderr)
}

// RunPlugin runs the plugin binary with the kubeconfig and the arguments,
// for up to two minutes, with its discovery cache in cacheDir and no
// colours (its output is no terminal anyway).
func RunPlugin(binary, cacheDir, kubeconfig string, args ...string) PluginRun {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+cacheDir, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return PluginRun{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// WriteKubeconfig writes, in a directory of the test's own, a kubeconfig
// of cp that authenticates as who, whose context's namespace is ns, and
// returns its path.
func (cp *ControlPlane) WriteKubeconfig(t testing.TB, who Identity, ns string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	cfg.AuthInfos[who.Name] = &clientcmdapi.AuthInfo{Token: who.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: who.Name, Namespace: ns}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("writing a kubeconfig: %v", err)
	}
	return path
}
