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

package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/policy"
)

// policyView is what the plugin could learn of the configuration the
// collector runs with.
type policyView struct {
	// policy is nil when it could not be read; unknown says why.
	policy  *policy.Policy
	unknown string
	// fromObject: the GCPolicy default exists (otherwise the defaults apply).
	fromObject bool
}

// readPolicy reads the GCPolicy default.
func (c *clients) readPolicy(ctx context.Context) policyView {
	gk := schema.GroupKind{Group: ownergcv1alpha1.GroupVersion.Group, Kind: "GCPolicy"}
	m, err := c.mapper.RESTMapping(gk)
	switch {
	case meta.IsNoMatchError(err):
		return policyView{unknown: "the API server does not serve ownergc's GCPolicy: ownergc may not be installed, and another collector (kube-controller-manager's) may be in charge"}
	case err != nil:
		return policyView{unknown: fmt.Sprintf("the GCPolicy kind cannot be resolved: %v", err)}
	}
	dc, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return policyView{unknown: err.Error()}
	}
	u, err := dc.Resource(m.Resource).Get(ctx, "default", metav1.GetOptions{})
	switch {
	case isNotFound(err):
		return policyView{policy: policy.Defaults()}
	case isForbidden(err):
		return policyView{unknown: "you may not get the GCPolicy default"}
	case err != nil:
		return policyView{unknown: fmt.Sprintf("the GCPolicy default cannot be read: %v", err)}
	}
	var gp ownergcv1alpha1.GCPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &gp); err != nil {
		return policyView{unknown: fmt.Sprintf("the GCPolicy default cannot be decoded: %v", err)}
	}
	p, err := policy.FromSpec(&gp.Spec, gp.Generation)
	if err != nil {
		return policyView{unknown: fmt.Sprintf("the GCPolicy default is invalid: %v", err)}
	}
	return policyView{policy: p, fromObject: true}
}
