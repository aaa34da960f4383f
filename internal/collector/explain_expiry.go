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

package collector

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ownergc/ownergc/internal/decision"
	"github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/explain"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// explainExpiry asks the decision model for the expiry part of an
// explanation, from the object read live. The labels of its namespace,
// which a rule may select it by, are read (within the explanation's reads)
// only when a rule needs them, and only if the caller may get that
// namespace: an explanation says nothing of a namespace its reader may not
// read, and the decision then says it cannot tell.
func (c *Collector) explainExpiry(ctx context.Context, r *explainReads, namespace string, see func(explain.Object) bool) *decision.ExpiryContext {
	return &decision.ExpiryContext{NamespaceLabels: func() (map[string]string, error) {
		ns := explain.Object{APIVersion: "v1", Kind: "Namespace", Resource: discovery.FormatGVR(namespacesGVR), Name: namespace}
		if !see(ns) {
			return nil, fmt.Errorf("you may not get namespace %s", namespace)
		}
		live, err := r.read(ctx, namespacesGVR, "", namespace)
		if err != nil {
			return nil, err
		}
		return live.Labels, nil
	}}
}
