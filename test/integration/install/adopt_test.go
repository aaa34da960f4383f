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

package install_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// helmOwnershipError says why Helm 3 would refuse to take an existing object
// into a release ("exists and cannot be imported into the current release"),
// with the rule of Helm's checkOwnership (pkg/action/validate.go): the label
// app.kubernetes.io/managed-by=Helm and the annotations
// meta.helm.sh/release-name and meta.helm.sh/release-namespace naming the
// release.
func helmOwnershipError(obj client.Object, release, namespace string) error {
	for _, want := range []struct{ kind, key, value, got string }{
		{"label", "app.kubernetes.io/managed-by", "Helm", obj.GetLabels()["app.kubernetes.io/managed-by"]},
		{"annotation", "meta.helm.sh/release-name", release, obj.GetAnnotations()["meta.helm.sh/release-name"]},
		{"annotation", "meta.helm.sh/release-namespace", namespace, obj.GetAnnotations()["meta.helm.sh/release-namespace"]},
	} {
		if want.got != want.value {
			return fmt.Errorf("%s %s is %q, Helm requires %q", want.kind, want.key, want.got, want.value)
		}
	}
	return nil
}

// adoptPolicyIntoRelease does what docs/operating.md says to do before
// `helm upgrade --set gcPolicy.enable=true` on a cluster where the manager
// created the GCPolicy: the manager's policy would not be taken over by Helm,
// and with the two kubectl commands of the docs it would.
//
//	kubectl annotate gcpolicy default meta.helm.sh/release-name=RELEASE meta.helm.sh/release-namespace=NAMESPACE kubernetes.io/description-
//	kubectl label gcpolicy default app.kubernetes.io/managed-by=Helm --overwrite
func adoptPolicyIntoRelease(t *testing.T, k8s client.Client, release, namespace string) {
	t.Helper()
	p := &ownergcv1alpha1.GCPolicy{}
	if err := k8s.Get(framework.Context(t), client.ObjectKey{Name: ownergcv1alpha1.PolicyName}, p); err != nil {
		t.Fatalf("the manager should have created the GCPolicy: %v", err)
	}
	if p.Labels[ownergcv1alpha1.LabelManagedBy] != ownergcv1alpha1.ManagedByOwnergc {
		t.Fatalf("the GCPolicy has labels %v: not the one the manager creates", p.Labels)
	}
	if err := helmOwnershipError(p, release, namespace); err == nil {
		t.Fatal("Helm would take over the manager's GCPolicy as it is: the documented adoption step would be needless")
	} else {
		t.Logf("as created by the manager, Helm would refuse the GCPolicy: %v", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"meta.helm.sh/release-name":%q,"meta.helm.sh/release-namespace":%q,%q:null},`+
		`"labels":{"app.kubernetes.io/managed-by":"Helm"}}}`, release, namespace, ownergcv1alpha1.AnnotationDescription)
	if err := k8s.Patch(framework.Context(t), p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("annotating and labelling the GCPolicy for Helm: %v", err)
	}
	if err := helmOwnershipError(p, release, namespace); err != nil {
		t.Fatalf("after the documented commands, Helm would still refuse the GCPolicy: %v", err)
	}
	if _, ok := p.Annotations[ownergcv1alpha1.AnnotationDescription]; ok {
		t.Errorf("the annotation saying the manager created the GCPolicy is still there")
	}
}
