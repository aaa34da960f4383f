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

// Package faults_test is the fault-injection tier: each test changes the API
// surface or the control plane under a running collector — groups switched
// off at an API server restart, aggregated APIs removed and restored, CRD
// versions changed mid-cascade, conversion webhooks that are down, duplicate
// owner references, watch expiry, API server restarts — and checks both
// halves of the collector's rule: nothing with a live owner is deleted, and
// everything whose owners are gone is collected, nothing stuck in deletion.
//
// The package has a control plane of its own, since its tests restart
// kube-apiserver; they run one at a time, each with its own manager.
package faults_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) { os.Exit(framework.RunSuite(m, framework.SuiteOptions{}, &cp, nil)) }

// waitWatched waits until the manager watches gk (synced) or, with
// watched false, no longer watches it.
func waitWatched(t *testing.T, m *framework.Manager, gk schema.GroupKind, watched bool) {
	t.Helper()
	framework.Eventually(t, framework.CRDTimeout, func() error {
		ks := m.Engine.KindState(gk)
		if watched && (!ks.Watched || !ks.Synced) {
			return fmt.Errorf("%s: %+v", gk, ks)
		}
		if !watched && ks.Watched {
			return fmt.Errorf("%s is still watched", gk)
		}
		return nil
	}, "ownergc should %s %s", map[bool]string{true: "watch", false: "stop watching"}[watched], gk)
}

// withField sets a top-level field of the object (a RuntimeClass's handler).
func withField(name string, value any) framework.Option {
	return func(u *unstructured.Unstructured) { u.Object[name] = value }
}
