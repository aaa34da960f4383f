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
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// CRDTimeout bounds how long the API server takes to establish, change or
// remove a CustomResourceDefinition.
const CRDTimeout = 30 * time.Second

// UniqueGroup returns a fresh API group, so that a test can run again
// (-count) against the same control plane.
func UniqueGroup(prefix string) string {
	return prefix + "-" + utilrand.String(5) + ".crd.ownergc.test"
}

// CRD describes a CustomResourceDefinition whose versions keep unknown
// fields. Versions lists the version names in order; the last is served and
// stored unless Storage names another. Without versions it has v1.
type CRD struct {
	Group, Kind, Plural string
	Scope               apiextensionsv1.ResourceScope
	Versions            []string
	// Storage is the storage version (default: the last version).
	Storage string
	// Unserved lists versions kept in the CRD but no longer served.
	Unserved []string
	// Conversion, when set, is the conversion strategy.
	Conversion *apiextensionsv1.CustomResourceConversion
}

// Name returns the CRD's name.
func (s CRD) Name() string { return s.Plural + "." + s.Group }

func (s CRD) versions() []string {
	if len(s.Versions) == 0 {
		return []string{"v1"}
	}
	return s.Versions
}

func (s CRD) storage() string {
	if s.Storage != "" {
		return s.Storage
	}
	v := s.versions()
	return v[len(v)-1]
}

// Resource returns the CRD's kind at its storage version.
func (s CRD) Resource() Kind {
	return Kind{
		GVR:        schema.GroupVersionResource{Group: s.Group, Version: s.storage(), Resource: s.Plural},
		Kind:       s.Kind,
		Namespaced: s.Scope != apiextensionsv1.ClusterScoped,
	}
}

func (s CRD) spec() apiextensionsv1.CustomResourceDefinitionSpec {
	preserve := true
	scope := s.Scope
	if scope == "" {
		scope = apiextensionsv1.NamespaceScoped
	}
	spec := apiextensionsv1.CustomResourceDefinitionSpec{
		Group: s.Group,
		Scope: scope,
		Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural: s.Plural, Singular: strings.ToLower(s.Kind), Kind: s.Kind, ListKind: s.Kind + "List",
		},
		Conversion: s.Conversion,
	}
	for _, v := range s.versions() {
		spec.Versions = append(spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: !slices.Contains(s.Unserved, v), Storage: v == s.storage(),
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: &preserve,
			}},
		})
	}
	return spec
}

// CreateCRD creates the CRD and waits until it is Established; it returns
// its kind at the storage version and when the test saw it Established.
func (cp *ControlPlane) CreateCRD(t testing.TB, s CRD) (Kind, time.Time) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: s.Name()}, Spec: s.spec()}
	if _, err := cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Create(Context(t), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", s.Name(), err)
	}
	return s.Resource(), cp.waitEstablished(t, s)
}

// UpdateCRD changes the CRD to s (versions, storage, conversion) and waits
// until it is Established with them.
func (cp *ControlPlane) UpdateCRD(t testing.TB, s CRD) Kind {
	t.Helper()
	Eventually(t, CRDTimeout, func() error {
		cur, err := cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Get(Context(t), s.Name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec = s.spec()
		_, err = cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Update(Context(t), cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return err
		}
		if err != nil {
			t.Fatalf("updating CRD %s: %v", s.Name(), err)
		}
		return nil
	}, "updating CRD %s", s.Name())
	cp.waitEstablished(t, s)
	return s.Resource()
}

func (cp *ControlPlane) waitEstablished(t testing.TB, s CRD) time.Time {
	t.Helper()
	var established time.Time
	Eventually(t, CRDTimeout, func() error {
		cur, err := cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Get(Context(t), s.Name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = time.Now()
				return nil
			}
		}
		return fmt.Errorf("CRD %s is not Established: %+v", s.Name(), cur.Status.Conditions)
	}, "CRD %s should become Established", s.Name())
	return established
}

// DeleteCRD deletes the CRD and waits until it is gone (the API server
// deletes its custom resources first).
func (cp *ControlPlane) DeleteCRD(t testing.TB, s CRD) {
	t.Helper()
	if err := cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Delete(Context(t), s.Name(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting CRD %s: %v", s.Name(), err)
	}
	Eventually(t, CRDTimeout, func() error {
		_, err := cp.Apix.ApiextensionsV1().CustomResourceDefinitions().Get(Context(t), s.Name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("CRD %s still exists", s.Name())
	}, "CRD %s should be deleted", s.Name())
}
