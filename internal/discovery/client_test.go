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

package discovery

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// discoveryServer serves /api and /apis as an API server does, in the
// format the test chooses, and records the Accept header of each request.
type discoveryServer struct {
	// format: "protobuf" (aggregated, protobuf when asked for), "json"
	// (aggregated, always JSON), "legacy" (unaggregated documents, and
	// each group-version's resources).
	format string
	// noAPI: /api answers 404 (an aggregated API server may serve none).
	noAPI bool
	api   apidiscoveryv2.APIGroupDiscoveryList
	apis  apidiscoveryv2.APIGroupDiscoveryList

	mu      sync.Mutex
	accepts map[string][]string // path → Accept headers
}

func (s *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.accepts == nil {
		s.accepts = map[string][]string{}
	}
	s.accepts[r.URL.Path] = append(s.accepts[r.URL.Path], r.Header.Get("Accept"))
	s.mu.Unlock()
	if s.noAPI && r.URL.Path == "/api" {
		http.NotFound(w, r)
		return
	}
	var doc apidiscoveryv2.APIGroupDiscoveryList
	switch r.URL.Path {
	case "/api":
		doc = s.api
	case "/apis":
		doc = s.apis
	default:
		s.serveLegacyResources(w, r)
		return
	}
	doc.TypeMeta = metav1.TypeMeta{APIVersion: apidiscoveryv2.SchemeGroupVersion.String(), Kind: "APIGroupDiscoveryList"}
	switch {
	case s.format == "protobuf" && strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf+";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"):
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		if err := protobuf.NewSerializer(nil, nil).Encode(&doc, w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	case s.format == "protobuf" || s.format == "json":
		w.Header().Set("Content-Type", discovery.AcceptV2)
		_ = json.NewEncoder(w).Encode(&doc)
	default:
		s.serveLegacy(w, r.URL.Path, doc)
	}
}

// serveLegacy answers /api or /apis with the unaggregated document of doc.
func (s *discoveryServer) serveLegacy(w http.ResponseWriter, path string, doc apidiscoveryv2.APIGroupDiscoveryList) {
	w.Header().Set("Content-Type", "application/json")
	groups, _, _ := discovery.SplitGroupsAndResources(doc)
	if path == "/api" {
		v := metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}}
		for _, g := range groups.Groups {
			for _, gv := range g.Versions {
				v.Versions = append(v.Versions, gv.Version)
			}
		}
		_ = json.NewEncoder(w).Encode(&v)
		return
	}
	groups.TypeMeta = metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}
	_ = json.NewEncoder(w).Encode(groups)
}

// serveLegacyResources answers /api/<v> and /apis/<g>/<v> with the
// group-version's resources.
func (s *discoveryServer) serveLegacyResources(w http.ResponseWriter, r *http.Request) {
	gvText := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/apis/"), "/api/")
	for _, doc := range []apidiscoveryv2.APIGroupDiscoveryList{s.api, s.apis} {
		_, resources, _ := discovery.SplitGroupsAndResources(doc)
		for gv, l := range resources {
			if gv.String() == gvText {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(l)
				return
			}
		}
	}
	http.NotFound(w, r)
}

func (s *discoveryServer) requests(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accepts[path])
}

// aggregatedResource is a deletable resource of aggregated discovery.
func aggregatedResource(resource, kind string, namespaced bool) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	return apidiscoveryv2.APIResourceDiscovery{
		Resource: resource, ResponseKind: &metav1.GroupVersionKind{Kind: kind}, Scope: scope,
		SingularResource: strings.TrimSuffix(resource, "s"), Verbs: all, ShortNames: []string{resource[:2]},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status", ResponseKind: &metav1.GroupVersionKind{Kind: kind}, Verbs: []string{"get", "patch", "update"}}},
	}
}

func aggregatedGroup(name string, stale bool, versions map[string][]apidiscoveryv2.APIResourceDiscovery, order ...string) apidiscoveryv2.APIGroupDiscovery {
	g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, v := range order {
		freshness := apidiscoveryv2.DiscoveryFreshnessCurrent
		if stale {
			freshness = apidiscoveryv2.DiscoveryFreshnessStale
		}
		g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: v, Resources: versions[v], Freshness: freshness})
	}
	return g
}

// testDocuments are the /api and /apis of an API server with the core
// group, a group served at two versions, and (stale: true) an aggregated
// API whose discovery is stale.
func testDocuments(stale bool) (api, apis apidiscoveryv2.APIGroupDiscoveryList) {
	api.Items = []apidiscoveryv2.APIGroupDiscovery{aggregatedGroup("", false, map[string][]apidiscoveryv2.APIResourceDiscovery{
		"v1": {aggregatedResource("configmaps", "ConfigMap", true), aggregatedResource("namespaces", "Namespace", false)},
	}, "v1")}
	apis.Items = []apidiscoveryv2.APIGroupDiscovery{
		aggregatedGroup("example.com", false, map[string][]apidiscoveryv2.APIResourceDiscovery{
			"v2": {aggregatedResource("widgets", "Widget", true)},
			"v1": {aggregatedResource("widgets", "Widget", true), aggregatedResource("gadgets", "Gadget", false)},
		}, "v2", "v1"),
	}
	if stale {
		apis.Items = append(apis.Items, aggregatedGroup("metrics.example.com", true, map[string][]apidiscoveryv2.APIResourceDiscovery{
			"v1beta1": {aggregatedResource("samples", "Sample", true)},
		}, "v1beta1"))
	}
	return api, apis
}

// discoveredBy is what ServerGroupsAndResources returns, resource lists
// sorted by group-version (client-go returns them in map order).
type discovered struct {
	Groups []*metav1.APIGroup
	Lists  []*metav1.APIResourceList
	Failed []string
}

func discoveredBy(t *testing.T, c interface {
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
}) discovered {
	t.Helper()
	groups, lists, err := c.ServerGroupsAndResources()
	var d discovered
	if err != nil {
		failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err)
		if !ok {
			t.Fatalf("discovery failed: %v", err)
		}
		for gv := range failed {
			d.Failed = append(d.Failed, gv.String())
		}
		slices.Sort(d.Failed)
	}
	slices.SortFunc(lists, func(a, b *metav1.APIResourceList) int { return strings.Compare(a.GroupVersion, b.GroupVersion) })
	d.Groups, d.Lists = groups, lists
	return d
}

func startDiscoveryServer(t *testing.T, s *discoveryServer) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// The Client reads aggregated discovery in protobuf where the API server
// serves it, in JSON where it answers JSON, per group-version where it does
// not aggregate, and returns in every case what client-go's discovery
// client returns for the same API server: the same groups and resources,
// a stale group-version reported failed, asked for twice while one fails.
func TestTheClientDiscoversWhatClientGoDoesInEveryFormat(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		stale, noAPI bool
		// wantRequests is how many times /apis is asked for.
		wantRequests int
	}{
		{name: "protobuf", format: "protobuf", wantRequests: 1},
		{name: "protobuf, a stale aggregated API", format: "protobuf", stale: true, wantRequests: 2},
		{name: "JSON answered", format: "json", wantRequests: 1},
		{name: "JSON answered, a stale aggregated API", format: "json", stale: true, wantRequests: 2},
		{name: "unaggregated (asked for again as client-go asks)", format: "legacy", wantRequests: 1},
		{name: "no /api", format: "protobuf", noAPI: true, wantRequests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, apis := testDocuments(tc.stale)
			ours := &discoveryServer{format: tc.format, noAPI: tc.noAPI, api: api, apis: apis}
			theirs := &discoveryServer{format: tc.format, noAPI: tc.noAPI, api: api, apis: apis}
			c, err := NewClientForConfig(startDiscoveryServer(t, ours))
			if err != nil {
				t.Fatal(err)
			}
			reference, err := discovery.NewDiscoveryClientForConfig(startDiscoveryServer(t, theirs))
			if err != nil {
				t.Fatal(err)
			}
			got, want := discoveredBy(t, c), discoveredBy(t, reference)
			if !reflect.DeepEqual(want, got) {
				w, _ := json.MarshalIndent(want, "", " ")
				g, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("the Client discovered otherwise than client-go:\nclient-go: %s\nthe Client: %s", w, g)
			}
			if len(got.Lists) == 0 {
				t.Errorf("nothing discovered")
			}
			if tc.stale && !slices.Equal(got.Failed, []string{"metrics.example.com/v1beta1"}) {
				t.Errorf("failed group-versions %v, want the stale metrics.example.com/v1beta1", got.Failed)
			}
			accepts := ours.requests("/apis")
			if len(accepts) != tc.wantRequests {
				t.Errorf("the Client asked for /apis %d times, want %d (%q)", len(accepts), tc.wantRequests, accepts)
			}
			first := ours.requests("/api")
			if want := runtime.ContentTypeProtobuf + ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"; len(first) == 0 || !strings.HasPrefix(first[0], want) {
				t.Errorf("the Client's Accept headers for /api %q, want the first to start with %q", first, want)
			}
		})
	}
}

// A document that does not decode is an error, not an empty discovery
// (which would read as every resource removed).
func TestADocumentThatDoesNotDecodeIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		_, _ = w.Write([]byte("not a protobuf document"))
	}))
	t.Cleanup(srv.Close)
	c, err := NewClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	groups, lists, err := c.ServerGroupsAndResources()
	if err == nil || discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("ServerGroupsAndResources = %d groups, %d lists, %v; want a decoding error", len(groups), len(lists), err)
	}
	if !strings.Contains(err.Error(), "decoding the aggregated discovery document of /api") {
		t.Errorf("error %q does not say which document did not decode", err)
	}
}
