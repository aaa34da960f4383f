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
	"testing"
)

// SuiteOptions describe what a test package's TestMain starts for all of
// its tests.
type SuiteOptions struct {
	// Bare starts the control plane without ownergc's CRDs (see
	// StartBareControlPlane); otherwise they are installed.
	Bare bool
	// Audited starts it with an audit log of the requests that write (see
	// StartAuditedControlPlane and ControlPlane.Writes).
	Audited bool
	// Manager, when set, starts one in-process manager with these options
	// for the whole package (see StartManager); it describes the objects
	// that waits fail on (ControlPlane.Diagnose).
	Manager *ManagerOptions
	// Setup, when set, runs once everything has started, before the tests.
	Setup func(*ControlPlane) error
}

// RunSuite starts a control plane (and a manager, if asked), stores them in
// *cp and *mgr (mgr may be nil when no manager is asked for), runs
// o.Setup, then the package's tests, and stops everything. It returns the
// exit code for os.Exit; whatever fails before the tests run is printed and
// makes it 1.
//
//	var cp *framework.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(framework.RunSuite(m, framework.SuiteOptions{}, &cp, nil)) }
func RunSuite(m *testing.M, o SuiteOptions, cp **ControlPlane, mgr **Manager) int {
	start := StartControlPlane
	switch {
	case o.Bare:
		start = StartBareControlPlane
	case o.Audited:
		start = StartAuditedControlPlane
	}
	c, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Stop()
	*cp = c
	if o.Manager != nil {
		manager, err := StartManager(c.Config, *o.Manager)
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting ownergc:", err)
			return 1
		}
		defer manager.Stop()
		c.setDiagnose(manager.Describe)
		*mgr = manager
	}
	if o.Setup != nil {
		if err := o.Setup(c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
