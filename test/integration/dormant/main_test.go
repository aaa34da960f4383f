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

// Package dormant_test runs the collector with dormant kinds (as a fleet's
// engines run: a kind with no object is not watched, but checked for one
// periodically) against a real kube-apiserver. The periodic check is an
// hour here, so that whatever a test sees of a dormant kind's new objects
// was seen because the collector looked before it decided, never because a
// check happened to come first. Each test makes a kind of its own.
package dormant_test

import (
	"os"
	"testing"
	"time"

	"github.com/ownergc/ownergc/test/framework"
)

var (
	cp      *framework.ControlPlane
	manager *framework.Manager
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, framework.SuiteOptions{Manager: &framework.ManagerOptions{DormantCheck: time.Hour}}, &cp, &manager))
}
