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

// Package expiry_test checks the expiry collector (GCPolicy
// spec.collectors.expiry) on a real kube-apiserver: each form of the
// annotations ownergc.io/ttl and ownergc.io/expires and those it cannot
// read, both together, rules by namespace name and label, a Namespace and a
// cluster-scoped object, a custom resource of a CRD installed after the
// start, protection and DryRun, annotations removed or extended before
// their time, an object changed between the decision and the deletion,
// warnBefore, ignored resources, the collector enabled and disabled live,
// and leadership. The control plane keeps an audit log, so that ownergc's
// requests can be told from the test's.
//
// Tests run one at a time and each starts its own manager (the policy is
// the cluster's); each leaves expiry disabled, in Enforce, when it ends.
package expiry_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Audited: true}, &cp, nil))
}
