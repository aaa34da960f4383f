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

package fleet_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/test/framework"
)

// witness is a server that records every request it receives and answers
// 403: the place a kubeconfig Secret would send the manager's requests.
type witness = framework.Recorder

// newWitness starts a witness over TLS, or plain HTTP (a proxy, an
// http:// server).
func newWitness(t *testing.T, tls bool) *witness {
	return framework.StartRecorder(t, tls, func(r *http.Request) string {
		return fmt.Sprintf("%s %s %s Authorization=%q", r.Method, r.Host, r.URL.Path, r.Header.Get("Authorization"))
	}, func(rw http.ResponseWriter, _ *http.Request) { http.Error(rw, "forbidden", http.StatusForbidden) })
}

// hostile is a kubeconfig Secret that asks for what is not plain data.
type hostile struct {
	name  string
	field string
	// server receives the requests the kubeconfig would cause; proxy, when
	// set, is the proxy they would go through.
	server, proxy *witness
	// trace is a file that exists once the manager ran the kubeconfig's
	// command; empty when it names none.
	trace string
	// sent is what the server or proxy must see once the field is accepted.
	sent string
	data []byte
}

// hostileKubeconfigs writes one kubeconfig per field that is not plain
// data, each pointing at witnesses of its own.
func hostileKubeconfigs(t *testing.T) []hostile {
	dir := t.TempDir()
	var out []hostile
	build := func(h hostile, server string, ca []byte, edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) {
		c := &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
		u := &clientcmdapi.AuthInfo{}
		edit(c, u)
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["member"] = c
		cfg.AuthInfos["ownergc"] = u
		cfg.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "ownergc"}
		cfg.CurrentContext = "member"
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		h.data = data
		out = append(out, h)
	}

	// An exec plugin that leaves a trace and hands out a token.
	exec := hostile{name: "exec", field: "users[ownergc].user.exec", server: newWitness(t, true), trace: filepath.Join(dir, "exec-ran"), sent: `"Bearer from-exec"`}
	script := filepath.Join(dir, "credential.sh")
	cred := `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}`
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+exec.trace+"'\necho '"+cred+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	build(exec, exec.server.URL, exec.server.CAData(), func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: script, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	})

	// A file of the manager's machine sent as a bearer token.
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("token-from-a-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := hostile{name: "token-file", field: "users[ownergc].user.tokenFile", server: newWitness(t, true), sent: `"Bearer token-from-a-file"`}
	build(file, file.server.URL, file.server.CAData(), func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.TokenFile = tokenFile })

	// A proxy that would see the traffic.
	proxy := hostile{name: "proxy", field: "clusters[member].cluster.proxy-url", server: newWitness(t, true), proxy: newWitness(t, false), sent: "CONNECT"}
	build(proxy, proxy.server.URL, proxy.server.CAData(), func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		c.ProxyURL, u.Token = proxy.proxy.URL, "proxied-token"
	})

	// A server whose certificate is not verified.
	insecure := hostile{name: "insecure", field: "clusters[member].cluster.insecure-skip-tls-verify", server: newWitness(t, true), sent: `"Bearer unverified-token"`}
	build(insecure, insecure.server.URL, nil, func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		c.InsecureSkipTLSVerify, u.Token = true, "unverified-token"
	})

	// A server in clear text (client-go sends it no bearer token, but the
	// rest of each request).
	plain := hostile{name: "plain-http", field: "clusters[member].cluster.server", server: newWitness(t, false), sent: "GET"}
	build(plain, plain.server.URL, nil, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Token = "clear-text-token" })
	return out
}

// nothingHappened fails when h's command ran or its server or proxy
// received anything.
func (h hostile) nothingHappened() error {
	if h.trace != "" {
		if _, err := os.Stat(h.trace); err == nil {
			return fmt.Errorf("the exec plugin of Secret %s ran", h.name)
		}
	}
	for _, w := range []*witness{h.server, h.proxy} {
		if w == nil {
			continue
		}
		if seen := w.Seen(); len(seen) > 0 {
			return fmt.Errorf("Secret %s sent requests: %v", h.name, seen)
		}
	}
	return nil
}

// waitRefused waits until the host reports Secret name as refused with
// reason, naming field, and has recorded a Warning event on it.
func waitRefused(t *testing.T, ns, name, reason, field string) {
	t.Helper()
	framework.Eventually(t, statusTimeout, func() error {
		cgs, err := clusterStatus(ns, name)
		if err != nil {
			return err
		}
		r := apimeta.FindStatusCondition(cgs.Status.Conditions, ownergcv1alpha1.ConditionReady)
		d := apimeta.FindStatusCondition(cgs.Status.Conditions, ownergcv1alpha1.ConditionDegraded)
		if r == nil || d == nil || r.Status != "False" || d.Status != "True" || d.Reason != reason || !strings.Contains(d.Message, field) {
			return fmt.Errorf("status %+v", cgs.Status)
		}
		return nil
	}, "the host should report Secret %s Degraded=True %s naming %s", name, reason, field)
	framework.Eventually(t, statusTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var events corev1.EventList
		if err := host().Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Secret" && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, field) {
				return nil
			}
		}
		return fmt.Errorf("%d events in %s, none a Warning %s about Secret %s naming %s", len(events.Items), ns, reason, name, field)
	}, "a Warning event %s should be recorded on Secret %s", reason, name)
}

// A kubeconfig Secret is data, never code: one that names an exec plugin, a
// file, a proxy, or a server that is not verified or not encrypted engages
// no cluster — the command is not run, nothing is sent to its server or
// proxy — and the host says why, naming the field, in the cluster's status
// and in an event on the Secret, while a sound member beside them is
// collected. Written again without the field, the Secret engages its
// cluster; a Secret without a kubeconfig is reported too; a Secret that
// loses its label is disengaged.
func TestKubeconfigSecretsAreDataNeverCode(t *testing.T) {
	ns := framework.CreateNamespace(t, host().Client)
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns})
	clusters[1].WriteKubeconfigSecret(t, host(), ns, names[1])
	m.WaitSynced(t, names[1], engageTimeout)

	secrets := hostileKubeconfigs(t)
	for _, h := range secrets {
		framework.WriteKubeconfigSecretWith(t, host(), ns, h.name, h.data)
	}
	for _, h := range secrets {
		waitRefused(t, ns, h.name, ownergcv1alpha1.ReasonKubeconfigRefused, h.field)
		if _, engaged := m.Fleet.State(h.name); engaged {
			t.Errorf("Secret %s was engaged", h.name)
		}
	}
	framework.Consistently(t, 3*time.Second, func() error {
		for _, h := range secrets {
			if err := h.nothingHappened(); err != nil {
				return err
			}
		}
		return nil
	}, "no refused Secret should run a command or send a request")

	t.Run("a sound member is collected beside them", func(t *testing.T) { background(t, clusters[1]) })

	t.Run("a Secret without a kubeconfig is reported", func(t *testing.T) {
		framework.WriteKubeconfigSecretWith(t, host(), ns, "empty", nil)
		waitRefused(t, ns, "empty", ownergcv1alpha1.ReasonSecretInvalid, "data."+fleet.KubeconfigSecretKey)
	})

	t.Run("written without the field, the Secret engages its cluster", func(t *testing.T) {
		data, err := clusters[2].AdminKubeconfig()
		if err != nil {
			t.Fatal(err)
		}
		framework.WriteKubeconfigSecretWith(t, host(), ns, "exec", data)
		m.WaitSynced(t, "exec", engageTimeout)
		waitStatus(t, m, ns, "exec", "True", "False", "")
		background(t, clusters[2])
	})

	t.Run("a Secret that loses its label is disengaged", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var s corev1.Secret
		if err := host().Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "exec"}, &s); err != nil {
			t.Fatal(err)
		}
		delete(s.Labels, fleet.KubeconfigSecretLabel)
		if err := host().Client.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
		m.WaitDisengaged(t, "exec", engageTimeout)
		waitStatusGone(t, ns, "exec")
	})
}

// Each field that is not plain data is accepted with the manager's opt-in
// flag for it: the command runs, the file is read and its token sent, the
// proxy and the unverified or clear-text server receive the requests.
func TestKubeconfigOptIns(t *testing.T) {
	ns := framework.CreateNamespace(t, host().Client)
	m := host().StartFleetManager(t, framework.FleetOptions{Namespace: ns, Kubeconfig: fleet.KubeconfigPolicy{
		AllowExec: true, AllowFiles: true, AllowProxy: true, AllowInsecureTLS: true,
	}})
	secrets := hostileKubeconfigs(t)
	for _, h := range secrets {
		framework.WriteKubeconfigSecretWith(t, host(), ns, h.name, h.data)
	}
	for _, h := range secrets {
		framework.Eventually(t, engageTimeout, func() error {
			if _, engaged := m.Fleet.State(h.name); !engaged {
				return fmt.Errorf("not engaged (refusal: %v)", m.Fleet.Refusal(h.name))
			}
			w := h.server
			if h.proxy != nil {
				w = h.proxy
			}
			seen := w.Seen()
			if !slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, h.sent) }) {
				return fmt.Errorf("requests seen: %v", seen)
			}
			if h.trace != "" {
				if _, err := os.Stat(h.trace); err != nil {
					return fmt.Errorf("the exec plugin did not run: %v", err)
				}
			}
			return nil
		}, "Secret %s should be engaged with its opt-in, and send %s", h.name, h.sent)
	}
}
