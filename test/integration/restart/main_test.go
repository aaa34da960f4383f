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

// Package restart_test checks what ownergc does across its own lifetime on a
// real kube-apiserver: work that piled up while no collector ran, work left
// in flight by a collector that stopped, and readiness while an aggregated
// API fails. No kube-controller-manager runs, so every cascade seen here is
// ownergc's. One control plane serves the package; each test starts and stops
// its own managers (never two at once) and works in a fresh namespace.
package restart_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) { os.Exit(framework.RunSuite(m, framework.SuiteOptions{}, &cp, nil)) }
