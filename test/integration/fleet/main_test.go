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

// Package fleet_test runs one ownergc manager in the fleet mode
// (--cluster-source=kubeconfig-secrets) against three real control planes:
// the first is also the host, whose namespace holds a kubeconfig Secret for
// each of the three.
package fleet_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

// clusters are the fleet's control planes; clusters[0] is the host.
var clusters [3]*framework.ControlPlane

// names are the clusters' names in the fleet (their Secrets' names).
var names = [3]string{"alpha", "beta", "gamma"}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	for i := range clusters {
		cp, err := framework.StartControlPlane()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cp.Stop()
		clusters[i] = cp
	}
	return m.Run()
}

// host is the control plane that holds the Secrets.
func host() *framework.ControlPlane { return clusters[0] }
