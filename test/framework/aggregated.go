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
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// AggregatedAPI is a minimal aggregated API server for tests: it serves one
// namespaced kind of one group-version from memory, with enough of the API
// for the collector to discover, list, watch, read and delete it (and for a
// test to create objects), behind an APIService that points kube-apiserver
// at it. Objects carry metadata only.
type AggregatedAPI struct {
	GroupVersion schema.GroupVersion
	Kind         string
	Resource     string

	server *httptest.Server
	port   int

	mu      sync.Mutex
	rv      int64
	objects map[string]*metav1.PartialObjectMetadata // namespace/name
	events  []aggregatedEvent
	changed chan struct{} // closed and replaced on every event
}

type aggregatedEvent struct {
	typ string
	obj *metav1.PartialObjectMetadata
	rv  int64
}

// StartAggregatedAPI serves kind (plural resource) of gv until the test
// ends. Register it to make kube-apiserver serve it.
func StartAggregatedAPI(t testing.TB, gv schema.GroupVersion, kind, resource string) *AggregatedAPI {
	t.Helper()
	a := &AggregatedAPI{GroupVersion: gv, Kind: kind, Resource: resource,
		objects: map[string]*metav1.PartialObjectMetadata{}, changed: make(chan struct{})}
	a.server = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.server.Close)
	_, port, _ := net.SplitHostPort(a.server.Listener.Addr().String())
	a.port, _ = strconv.Atoi(port)
	return a
}

// Close stops the server: kube-apiserver can no longer reach it, and its
// group-version's discovery fails.
func (a *AggregatedAPI) Close() { a.server.Close() }

// Served returns the kind as tests create it.
func (a *AggregatedAPI) Served() Kind {
	return Kind{GVR: a.GroupVersion.WithResource(a.Resource), Kind: a.Kind, Namespaced: true}
}

var (
	apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Register creates the Service and the APIService that send kube-apiserver
// to the server, and waits until its group-version is discovered.
func (a *AggregatedAPI) Register(t testing.TB, cp *ControlPlane) {
	t.Helper()
	svcName := "aggregated-" + strings.ReplaceAll(a.GroupVersion.Group, ".", "-")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svcName},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(a.port), Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := cp.Clientset.CoreV1().Services("default").Create(Context(t), svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating Service %s: %v", svcName, err)
	}
	cp.createAPIService(t, a.GroupVersion, svcName, int64(a.port))
	Eventually(t, 60*time.Second, func() error {
		_, err := cp.Clientset.Discovery().ServerResourcesForGroupVersion(a.GroupVersion.String())
		return err
	}, "kube-apiserver should serve %s", a.GroupVersion)
}

// apiServiceName is the name of gv's APIService.
func apiServiceName(gv schema.GroupVersion) string { return gv.Version + "." + gv.Group }

// createAPIService creates an APIService that sends kube-apiserver to the
// Service default/service for gv.
func (cp *ControlPlane) createAPIService(t testing.TB, gv schema.GroupVersion, service string, port int64) {
	t.Helper()
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": apiServiceName(gv)},
		"spec": map[string]any{
			"group": gv.Group, "version": gv.Version,
			"service":               map[string]any{"namespace": "default", "name": service, "port": port},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	if _, err := cp.Dynamic.Resource(apiServices).Create(Context(t), apiService, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating APIService %s: %v", apiServiceName(gv), err)
	}
}

// CreateBrokenAPIService creates an APIService for gv whose Service does not
// exist, so that kube-apiserver reports gv as failing discovery. It is
// deleted when the test ends; remove deletes it before, failing the test if
// it cannot.
func (cp *ControlPlane) CreateBrokenAPIService(t testing.TB, gv schema.GroupVersion) (remove func()) {
	t.Helper()
	cp.createAPIService(t, gv, "nope", 443)
	name := apiServiceName(gv)
	t.Cleanup(func() {
		if err := cp.Dynamic.Resource(apiServices).Delete(Context(t), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting APIService %s: %v", name, err)
		}
	})
	return func() {
		t.Helper()
		if err := cp.Dynamic.Resource(apiServices).Delete(Context(t), name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting APIService %s: %v", name, err)
		}
	}
}

// ServeAggregatedAPI starts an aggregated API (StartAggregatedAPI) and
// registers it with cp; it is unregistered when the test ends.
func (cp *ControlPlane) ServeAggregatedAPI(t testing.TB, gv schema.GroupVersion, kind, resource string) *AggregatedAPI {
	t.Helper()
	a := StartAggregatedAPI(t, gv, kind, resource)
	a.Register(t, cp)
	t.Cleanup(func() { a.Unregister(t, cp) })
	return a
}

// Unregister deletes the APIService and waits until kube-apiserver no
// longer discovers the group-version.
func (a *AggregatedAPI) Unregister(t testing.TB, cp *ControlPlane) {
	t.Helper()
	if err := cp.Dynamic.Resource(apiServices).Delete(Context(t), apiServiceName(a.GroupVersion), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting APIService %s: %v", apiServiceName(a.GroupVersion), err)
	}
	Eventually(t, 60*time.Second, func() error {
		if _, err := cp.Clientset.Discovery().ServerResourcesForGroupVersion(a.GroupVersion.String()); err == nil {
			return fmt.Errorf("%s is still discovered", a.GroupVersion)
		}
		return nil
	}, "kube-apiserver should stop serving %s", a.GroupVersion)
}

// Delete deletes an object directly in the server's store, as if the
// aggregated API server deleted it while kube-apiserver did not serve it.
func (a *AggregatedAPI) Delete(namespace, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.objects[namespace+"/"+name]
	if ok {
		a.record("DELETED", o)
		delete(a.objects, namespace+"/"+name)
	}
	return ok
}

// record appends an event; the caller holds mu.
func (a *AggregatedAPI) record(typ string, o *metav1.PartialObjectMetadata) {
	a.rv++
	o.ResourceVersion = strconv.FormatInt(a.rv, 10)
	a.events = append(a.events, aggregatedEvent{typ: typ, obj: o.DeepCopy(), rv: a.rv})
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *AggregatedAPI) serve(w http.ResponseWriter, r *http.Request) {
	prefix := "/apis/" + a.GroupVersion.String()
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == prefix {
		writeJSON(w, http.StatusOK, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: a.GroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: a.Resource, Namespaced: true, Kind: a.Kind,
				Verbs: metav1.Verbs{"create", "delete", "get", "list", "watch"}}},
		})
		return
	}
	if !strings.HasPrefix(path, prefix+"/") {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, path))
		return
	}
	parts := strings.Split(strings.TrimPrefix(path, prefix+"/"), "/")
	namespace, name := "", ""
	switch {
	case len(parts) == 1 && parts[0] == a.Resource:
	case len(parts) == 3 && parts[0] == "namespaces" && parts[2] == a.Resource:
		namespace = parts[1]
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == a.Resource:
		namespace, name = parts[1], parts[3]
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: a.GroupVersion.Group, Resource: a.Resource}, path))
		return
	}
	metadataOnly := strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata")
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && name == "" && (q.Get("watch") == "true" || q.Get("watch") == "1"):
		a.watch(w, r, namespace, metadataOnly)
	case r.Method == http.MethodGet && name == "":
		a.list(w, namespace, metadataOnly)
	case r.Method == http.MethodGet:
		a.get(w, namespace, name, metadataOnly)
	case r.Method == http.MethodPost && name == "" && namespace != "":
		a.create(w, r, namespace)
	case r.Method == http.MethodDelete && name != "":
		a.delete(w, r, namespace, name)
	default:
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: a.GroupVersion.Group, Resource: a.Resource}, r.Method))
	}
}

// shape returns o as the client asked for it.
func (a *AggregatedAPI) shape(o *metav1.PartialObjectMetadata, metadataOnly bool) *metav1.PartialObjectMetadata {
	out := o.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: a.GroupVersion.String(), Kind: a.Kind}
	if metadataOnly {
		out.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
	}
	return out
}

func (a *AggregatedAPI) list(w http.ResponseWriter, namespace string, metadataOnly bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: a.GroupVersion.String(), Kind: a.Kind + "List"}}
	if metadataOnly {
		list.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}
	}
	list.ResourceVersion = strconv.FormatInt(a.rv, 10)
	for _, o := range a.objects {
		if namespace == "" || o.Namespace == namespace {
			list.Items = append(list.Items, *a.shape(o, metadataOnly))
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *AggregatedAPI) get(w http.ResponseWriter, namespace, name string, metadataOnly bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.objects[namespace+"/"+name]
	if !ok {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: a.GroupVersion.Group, Resource: a.Resource}, name))
		return
	}
	writeJSON(w, http.StatusOK, a.shape(o, metadataOnly))
}

func (a *AggregatedAPI) create(w http.ResponseWriter, r *http.Request, namespace string) {
	var in metav1.PartialObjectMetadata
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	key := namespace + "/" + in.Name
	if _, exists := a.objects[key]; exists {
		writeStatus(w, apierrors.NewAlreadyExists(schema.GroupResource{Group: a.GroupVersion.Group, Resource: a.Resource}, in.Name))
		return
	}
	o := &metav1.PartialObjectMetadata{ObjectMeta: in.ObjectMeta}
	o.Namespace, o.UID, o.CreationTimestamp = namespace, uuid.NewUUID(), metav1.Now()
	a.objects[key] = o
	a.record("ADDED", o)
	writeJSON(w, http.StatusCreated, a.shape(o, false))
}

func (a *AggregatedAPI) delete(w http.ResponseWriter, r *http.Request, namespace, name string) {
	var opts metav1.DeleteOptions
	_ = json.NewDecoder(r.Body).Decode(&opts)
	a.mu.Lock()
	defer a.mu.Unlock()
	key := namespace + "/" + name
	o, ok := a.objects[key]
	gr := schema.GroupResource{Group: a.GroupVersion.Group, Resource: a.Resource}
	switch {
	case !ok:
		writeStatus(w, apierrors.NewNotFound(gr, name))
		return
	case opts.Preconditions != nil && opts.Preconditions.UID != nil && *opts.Preconditions.UID != o.UID,
		opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil && *opts.Preconditions.ResourceVersion != o.ResourceVersion:
		writeStatus(w, apierrors.NewConflict(gr, name, fmt.Errorf("precondition failed")))
		return
	}
	delete(a.objects, key)
	a.record("DELETED", o)
	writeJSON(w, http.StatusOK, a.shape(o, false))
}

// watch streams the events after the requested resourceVersion. Streaming
// lists (sendInitialEvents) are refused, so clients list first.
func (a *AggregatedAPI) watch(w http.ResponseWriter, r *http.Request, namespace string, metadataOnly bool) {
	q := r.URL.Query()
	if q.Get("sendInitialEvents") == "true" {
		writeStatus(w, apierrors.NewBadRequest("sendInitialEvents is not supported"))
		return
	}
	from, _ := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	timeout := time.After(5 * time.Minute)
	for {
		a.mu.Lock()
		var pending []aggregatedEvent
		for _, e := range a.events {
			if e.rv > from && (namespace == "" || e.obj.Namespace == namespace) {
				pending = append(pending, e)
			}
		}
		if n := len(a.events); n > 0 {
			from = max(from, a.events[n-1].rv)
		}
		changed := a.changed
		a.mu.Unlock()
		for _, e := range pending {
			if err := enc.Encode(map[string]any{"type": e.typ, "object": a.shape(e.obj, metadataOnly)}); err != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-timeout:
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(st.Code), &st)
}
