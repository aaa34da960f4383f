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

// Package adoption_test checks what lets an operator adopt ownergc safely,
// on a real kube-apiserver: dry-run beside kube-controller-manager's
// collector with shadow agreement, protection, and propagation per
// resource. The control plane keeps an audit log, so that what ownergc
// wrote can be told from what others wrote.
package adoption_test

import (
	"os"
	"testing"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Audited: true}, &cp, nil))
}
