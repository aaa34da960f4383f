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

package policy

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

var (
	coreEvents   = schema.GroupResource{Resource: "events"}
	eventsEvents = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	configMaps   = schema.GroupResource{Resource: "configmaps"}
	deployments  = schema.GroupResource{Group: "apps", Resource: "deployments"}
)

func TestFromSpec(t *testing.T) {
	for _, tc := range []struct {
		name        string
		spec        ownergcv1alpha1.GCPolicySpec
		wantErr     bool
		ignores     []schema.GroupResource
		notIgnores  []schema.GroupResource
		workers     [2]int
		propagation metav1.DeletionPropagation
	}{
		{name: "omitted ignoredResources means the events defaults", spec: ownergcv1alpha1.GCPolicySpec{},
			ignores: []schema.GroupResource{coreEvents, eventsEvents}, notIgnores: []schema.GroupResource{configMaps},
			workers: [2]int{20, 20}, propagation: metav1.DeletePropagationBackground},
		{name: "empty ignoredResources ignores nothing", spec: ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{}},
			notIgnores: []schema.GroupResource{coreEvents, eventsEvents}, workers: [2]int{20, 20}, propagation: metav1.DeletePropagationBackground},
		{name: "a wildcard ignores a whole group",
			spec:    ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Group: "apps", Resource: "*"}}, Workers: ownergcv1alpha1.Workers{AttemptToDelete: 3, AttemptToOrphan: 500}, DefaultPropagation: ownergcv1alpha1.PropagationOrphan},
			ignores: []schema.GroupResource{deployments}, notIgnores: []schema.GroupResource{configMaps, coreEvents},
			workers: [2]int{3, 500}, propagation: metav1.DeletePropagationOrphan},
		{name: "workers out of range", spec: ownergcv1alpha1.GCPolicySpec{Workers: ownergcv1alpha1.Workers{AttemptToDelete: 501}}, wantErr: true},
		{name: "unknown propagation", spec: ownergcv1alpha1.GCPolicySpec{DefaultPropagation: "Sideways"}, wantErr: true},
		{name: "empty resource name", spec: ownergcv1alpha1.GCPolicySpec{IgnoredResources: []ownergcv1alpha1.GroupResource{{Group: "apps"}}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromSpec(&tc.spec, 4)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, gr := range tc.ignores {
				if !p.Ignores(gr) {
					t.Errorf("%v should be ignored", gr)
				}
			}
			for _, gr := range tc.notIgnores {
				if p.Ignores(gr) {
					t.Errorf("%v should not be ignored", gr)
				}
			}
			if p.AttemptToDeleteWorkers != tc.workers[0] || p.AttemptToOrphanWorkers != tc.workers[1] || p.DefaultPropagation != tc.propagation || p.Generation != 4 || !p.FromPolicy {
				t.Errorf("got %+v", p)
			}
		})
	}
}

func TestDefaultsMatchTheCRDDefaults(t *testing.T) {
	d := Defaults()
	if d.FromPolicy || d.AttemptToDeleteWorkers != 20 || d.AttemptToOrphanWorkers != 20 || d.DefaultPropagation != metav1.DeletePropagationBackground ||
		!d.Ignores(coreEvents) || !d.Ignores(eventsEvents) || d.Ignores(configMaps) {
		t.Fatalf("defaults: %+v", d)
	}
}

func TestStoreNotifiesSubscribers(t *testing.T) {
	s := NewStore()
	var seen []int64
	s.Subscribe(func(old, new *Policy) { seen = append(seen, old.Generation, new.Generation) })
	p, _ := FromSpec(&ownergcv1alpha1.GCPolicySpec{}, 2)
	s.Set(p)
	if s.Get() != p || len(seen) != 2 || seen[0] != 0 || seen[1] != 2 {
		t.Fatalf("store: %v", seen)
	}
	if !Defaults().SameIgnored(p) {
		t.Fatal("an empty spec ignores what the defaults ignore")
	}
}

func TestFromSpecAdoptionAndDiagnostics(t *testing.T) {
	spec := ownergcv1alpha1.GCPolicySpec{
		Mode: ownergcv1alpha1.ModeDryRun,
		PropagationOverrides: []ownergcv1alpha1.PropagationOverride{
			{GroupResource: ownergcv1alpha1.GroupResource{Group: "apps", Resource: "replicasets"}, Propagation: ownergcv1alpha1.PropagationForeground},
			{GroupResource: ownergcv1alpha1.GroupResource{Group: "apps", Resource: "*"}, Propagation: ownergcv1alpha1.PropagationOrphan},
		},
		Protection:  ownergcv1alpha1.Protection{Namespaces: []ownergcv1alpha1.NamespaceName{"kube-system"}},
		Diagnostics: ownergcv1alpha1.Diagnostics{BlockedDeletionAfter: &metav1.Duration{Duration: 90 * time.Second}},
	}
	p, err := FromSpec(&spec, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !p.DryRun || p.BlockedDeletionAfter != 90*time.Second || p.ShadowGracePeriod != DefaultShadowGracePeriod {
		t.Fatalf("policy: %+v", p)
	}
	for gr, want := range map[schema.GroupResource]metav1.DeletionPropagation{
		{Group: "apps", Resource: "replicasets"}: metav1.DeletePropagationForeground,
		{Group: "apps", Resource: "deployments"}: metav1.DeletePropagationOrphan,
		configMaps:                               metav1.DeletePropagationBackground,
	} {
		if got := p.PropagationFor(gr); got != want {
			t.Errorf("PropagationFor(%s) = %s, want %s", gr, got, want)
		}
	}
	if !p.Protects("kube-system", nil) || p.Protects("default", nil) || p.Protects("", nil) {
		t.Error("the protected namespace, and only it, is protected")
	}
	if !p.Protects("default", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}) || p.Protects("default", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "yes"}) {
		t.Error(`the annotation protects when it is "true"`)
	}
	for _, c := range []struct {
		namespace   string
		annotations map[string]string
		want        Protection
	}{
		{"kube-system", nil, ProtectedByNamespace},
		{"kube-system", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}, ProtectedByAnnotation},
		{"", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true"}, ProtectedByAnnotation},
		{"default", map[string]string{ownergcv1alpha1.ProtectedAnnotation: "false"}, NotProtected},
	} {
		if got := p.Protection(c.namespace, c.annotations); got != c.want {
			t.Errorf("Protection(%q, %v) = %q, want %q", c.namespace, c.annotations, got, c.want)
		}
	}
	if o, ok := p.OverrideFor(schema.GroupResource{Group: "apps", Resource: "deployments"}); !ok || o != metav1.DeletePropagationOrphan {
		t.Errorf("OverrideFor(deployments.apps) = %q, %v: want the group's override", o, ok)
	}
	if o, ok := p.OverrideFor(configMaps); ok {
		t.Errorf("OverrideFor(configmaps) = %q: no override names it", o)
	}
	for _, bad := range []ownergcv1alpha1.GCPolicySpec{
		{Mode: "Maybe"},
		{PropagationOverrides: []ownergcv1alpha1.PropagationOverride{{GroupResource: ownergcv1alpha1.GroupResource{Resource: "pods"}}}},
		{Diagnostics: ownergcv1alpha1.Diagnostics{ShadowGracePeriod: &metav1.Duration{Duration: 25 * time.Hour}}},
	} {
		if _, err := FromSpec(&bad, 1); err == nil {
			t.Errorf("FromSpec(%+v) should fail", bad)
		}
	}
}

// spec.collectors: absent fields take kube-controller-manager's defaults,
// set ones are in force, and values the schema refuses are errors.
func TestCollectorsFromSpec(t *testing.T) {
	p, err := FromSpec(&ownergcv1alpha1.GCPolicySpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := Collectors{
		TerminatedPods:             TerminatedPods{Threshold: 12500},
		CertificateSigningRequests: CertificateSigningRequests{ApprovedAfter: time.Hour, DeniedAfter: time.Hour, PendingAfter: 24 * time.Hour},
	}
	if !reflect.DeepEqual(p.Collectors, want) {
		t.Errorf("defaults: got %+v, want %+v", p.Collectors, want)
	}
	if d := Defaults(); !reflect.DeepEqual(d.Collectors, want) {
		t.Errorf("built-in defaults: got %+v, want %+v", d.Collectors, want)
	}

	zero := int32(0)
	p, err = FromSpec(&ownergcv1alpha1.GCPolicySpec{Collectors: ownergcv1alpha1.Collectors{
		TerminatedPods: ownergcv1alpha1.TerminatedPodsCollector{Enabled: true, Threshold: &zero},
		FinishedJobs:   ownergcv1alpha1.FinishedJobsCollector{Enabled: true},
		CertificateSigningRequests: ownergcv1alpha1.CertificateSigningRequestsCollector{Enabled: true,
			PendingAfter: &metav1.Duration{Duration: 2 * time.Second}},
	}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want = Collectors{
		TerminatedPods: TerminatedPods{Enabled: true, Threshold: 0},
		FinishedJobs:   FinishedJobs{Enabled: true},
		CertificateSigningRequests: CertificateSigningRequests{Enabled: true,
			ApprovedAfter: time.Hour, DeniedAfter: time.Hour, PendingAfter: 2 * time.Second},
	}
	if !reflect.DeepEqual(p.Collectors, want) {
		t.Errorf("set: got %+v, want %+v", p.Collectors, want)
	}

	tooMany := int32(500001)
	for name, spec := range map[string]ownergcv1alpha1.Collectors{
		"threshold too large": {TerminatedPods: ownergcv1alpha1.TerminatedPodsCollector{Threshold: &tooMany}},
		"duration too short":  {CertificateSigningRequests: ownergcv1alpha1.CertificateSigningRequestsCollector{DeniedAfter: &metav1.Duration{Duration: time.Millisecond}}},
		"duration too long":   {CertificateSigningRequests: ownergcv1alpha1.CertificateSigningRequestsCollector{ApprovedAfter: &metav1.Duration{Duration: 9000 * time.Hour}}},
	} {
		if p, err := FromSpec(&ownergcv1alpha1.GCPolicySpec{Collectors: spec}, 3); err == nil {
			t.Errorf("%s: want an error, got %+v", name, p.Collectors)
		}
	}
}
