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

// Package crd_test runs ownergc against custom resources on a real
// kube-apiserver: CustomResourceDefinitions created, deleted and re-created
// while the manager runs, custom resources as owners and dependents (they do
// not support strategic merge patch), and owner references to kinds that are
// not served yet. No kube-controller-manager runs, so every cascade seen here
// is ownergc's. One control plane and one manager serve the whole package;
// each test uses CRDs of its own group and a fresh namespace.
package crd_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Manager: &framework.ManagerOptions{}}, &cp, &manager))
}
