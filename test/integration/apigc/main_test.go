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

// Package apigc_test checks the API-level collectors (terminated Pods,
// finished Jobs, stale CertificateSigningRequests) on a real kube-apiserver:
// each rule, enabling and disabling them live, DryRun and protection, and,
// for each, a comparison with kube-controller-manager's own controller on
// the same workload. The Pods, Nodes, Jobs and requests are API objects
// only: the tests set their status themselves, no kubelet runs. The control
// plane keeps an audit log, so that what ownergc wrote can be told from
// what others wrote.
//
// Tests run one at a time and each starts its own manager: the
// terminated-Pod threshold counts the Pods of the whole cluster, so every
// test removes its Pods when it ends.
package apigc_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Audited: true}, &cp, nil))
}
