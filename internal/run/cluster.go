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

package run

import (
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/engine"
)

// Cluster runs the single-cluster mode: the engine and the GCPolicy
// controller on a manager of cfg's cluster, with opts (Scheme when they name
// none), ready once the graph has synced. It returns the exit code.
func Cluster(cfg *rest.Config, opts ctrl.Options) int {
	if opts.Scheme == nil {
		opts.Scheme = Scheme
	}
	mgr, eng, err := engine.NewManager(cfg, opts)
	if err != nil {
		return failed(err, "Unable to create the manager")
	}
	if err := SetupEngine(mgr, eng, 0, 0); err != nil {
		return failed(err, "Unable to set up the GCPolicy controller")
	}
	return serve(mgr, "graph-synced", eng.GraphSyncedCheck, "Starting manager")
}
