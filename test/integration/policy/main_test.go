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

// Package policy_test checks that the `default` GCPolicy takes effect while
// the manager runs and that its status tells the truth, against a real
// kube-apiserver. Tests share one control plane and one manager, which
// creates the GCPolicy with the defaults, and run one after the other; each
// leaves the defaults in force.
package policy_test

import (
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
	// k8s and clientset are cp's clients.
	k8s       client.Client
	clientset *kubernetes.Clientset
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{
		// A modest client rate makes a cascade of a few hundred objects last
		// long enough to resize the worker pools in the middle of it.
		Manager: &framework.ManagerOptions{QPS: 100, Burst: 100, StatusRefresh: time.Second},
		Setup: func(c *framework.ControlPlane) error {
			k8s, clientset = c.Client, c.Clientset
			return nil
		},
	}, &cp, &manager))
}
