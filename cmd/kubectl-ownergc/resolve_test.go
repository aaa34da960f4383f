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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
)

func TestSplitArgs(t *testing.T) {
	for _, c := range []struct {
		args       []string
		kind, name string
	}{
		{[]string{"deploy/web"}, "deploy", "web"},
		{[]string{"replicasets.apps/web-7d4b9"}, "replicasets.apps", "web-7d4b9"},
		{[]string{"configmap", "x"}, "configmap", "x"},
	} {
		kind, name, err := splitArgs(c.args)
		if err != nil || kind != c.kind || name != c.name {
			t.Errorf("splitArgs(%q) = %q, %q, %v", c.args, kind, name, err)
		}
	}
	for _, bad := range [][]string{{"web"}, {"deploy/"}, {"/web"}, {"a/b/c"}, {"deploy/web", "x"}, {"deploy", "a/b"}} {
		if _, _, err := splitArgs(bad); err == nil {
			t.Errorf("splitArgs(%q) should fail", bad)
		}
	}
}

// mappingFor resolves names as kubectl does, with a discovery REST mapper
// and short names.
func TestMappingFor(t *testing.T) {
	fd := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}, Verbs: []string{"get", "list"}},
			{Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, ShortNames: []string{"ev"}, Verbs: []string{"get", "list"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}, Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy"}, Verbs: []string{"get", "list"}},
			{Name: "replicasets", SingularName: "replicaset", Kind: "ReplicaSet", Namespaced: true, ShortNames: []string{"rs"}, Verbs: []string{"get", "list"}},
		}},
	}}}
	groups, err := restmapper.GetAPIGroupResources(fd)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), fd, nil)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for arg, want := range map[string]schema.GroupVersionResource{
		"deploy":              deployments,
		"deployment":          deployments,
		"deployments":         deployments,
		"Deployment":          deployments,
		"deployments.apps":    deployments,
		"deployments.v1.apps": deployments,
		"rs":                  {Group: "apps", Version: "v1", Resource: "replicasets"},
		"replicasets.apps":    {Group: "apps", Version: "v1", Resource: "replicasets"},
		"cm":                  {Version: "v1", Resource: "configmaps"},
		"configmap":           {Version: "v1", Resource: "configmaps"},
		"ev":                  {Version: "v1", Resource: "events"},
		"ns":                  {Version: "v1", Resource: "namespaces"},
		"ReplicaSet.v1.apps":  {Group: "apps", Version: "v1", Resource: "replicasets"},
	} {
		m, err := mappingFor(mapper, arg)
		if err != nil || m.Resource != want {
			t.Errorf("mappingFor(%q) = %v, %v; want %v", arg, m, err, want)
		}
	}
	if _, err := mappingFor(mapper, "ghosts"); err == nil || err.Error() != `the server doesn't have a resource type "ghosts"` {
		t.Errorf("an unknown resource: %v", err)
	}
}
