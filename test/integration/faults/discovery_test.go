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

package faults_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	ogdiscovery "github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/test/framework"
)

var (
	runtimeClasses = framework.Kind{GVR: schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}, Kind: "RuntimeClass"}
	clusterRoles   = framework.Kind{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole"}
)

// Fault: a built-in group is switched off at a kube-apiserver restart
// (--runtime-config=node.k8s.io/v1=false), then on again. Its objects still
// exist, unserved: nothing they own is collected, an owner they block in a
// foreground deletion waits for them, and once the group is served again
// everything proceeds.
func TestGroupSwitchedOffAtAnAPIServerRestart(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	m := cp.StartManager(t, framework.ManagerOptions{})
	suffix := utilrand.String(5)
	handler := withField("handler", "runc")

	rcOwner := cp.Create(t, runtimeClasses, "", "owner-"+suffix, handler)
	dep := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-runtimeclass", framework.OwnedBy(rcOwner.Ref(false)))
	fgOwner := cp.Create(t, clusterRoles, "", "foreground-owner-"+suffix)
	rcBlocking := cp.Create(t, runtimeClasses, "", "blocking-"+suffix, handler, framework.OwnedBy(fgOwner.Ref(true)))
	m.WaitObserved(t, rcOwner, dep, fgOwner, rcBlocking)

	if err := cp.RestartAPIServer(map[string]string{"runtime-config": "node.k8s.io/v1=false"}); err != nil {
		t.Fatalf("restarting kube-apiserver without node.k8s.io/v1: %v", err)
	}
	t.Cleanup(func() {
		// Leave the group served for the next test, whatever happened.
		if _, err := cp.Clientset.Discovery().ServerResourcesForGroupVersion("node.k8s.io/v1"); err != nil {
			_ = cp.RestartAPIServer(map[string]string{"runtime-config": ""})
		}
	})
	waitWatched(t, m, runtimeClasses.GroupKind(), false)

	cp.DeleteWith(t, fgOwner, metav1.DeletePropagationForeground)
	cp.Survive(t, "its owner, a RuntimeClass, exists though node.k8s.io is not served", dep)
	cp.WaitDeleting(t, fgOwner, metav1.FinalizerDeleteDependents, "its blocking dependent cannot be verified while node.k8s.io is not served")

	if err := cp.RestartAPIServer(map[string]string{"runtime-config": ""}); err != nil {
		t.Fatalf("restarting kube-apiserver with node.k8s.io/v1: %v", err)
	}
	waitWatched(t, m, runtimeClasses.GroupKind(), true)
	cp.WaitGone(t, "served again, the blocking dependent of an owner deleted in the foreground is collected, then the owner", rcBlocking, fgOwner)
	cp.MustExist(t, "its owner still exists", dep)
	cp.DeleteWith(t, rcOwner, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its owner was deleted", dep)
}

// Fault: an aggregated API is removed (its APIService deleted) while its
// objects own others, and restored. While it is not served nothing its
// objects own is collected, even the dependents of an object its server
// deleted meanwhile; once it is served again, those are collected and the
// others kept.
func TestAggregatedAPIRemovedAndRestored(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	gv := schema.GroupVersion{Group: "agg-" + utilrand.String(5) + ".ownergc.test", Version: "v1"}
	agg := framework.StartAggregatedAPI(t, gv, "Flange", "flanges")
	agg.Register(t, cp)
	m := cp.StartManager(t, framework.ManagerOptions{})
	flanges := agg.Served()
	waitWatched(t, m, flanges.GroupKind(), true)

	kept := cp.Create(t, flanges, ns, "kept")
	removed := cp.Create(t, flanges, ns, "removed-while-unserved")
	depOfKept := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-kept", framework.OwnedBy(kept.Ref(false)))
	depOfRemoved := cp.Create(t, framework.ConfigMaps, ns, "dependent-of-removed", framework.OwnedBy(removed.Ref(false)))
	m.WaitObserved(t, kept, removed, depOfKept, depOfRemoved)

	agg.Unregister(t, cp)
	waitWatched(t, m, flanges.GroupKind(), false)
	if !agg.Delete(ns, removed.Name) {
		t.Fatalf("the aggregated server has no %s", removed)
	}
	cp.Survive(t, "their owners' API is not served: they cannot be verified", depOfKept, depOfRemoved)

	agg.Register(t, cp)
	waitWatched(t, m, flanges.GroupKind(), true)
	cp.WaitGone(t, "served again, its owner is verified gone", depOfRemoved)
	cp.Survive(t, "its owner exists", depOfKept)
	cp.DeleteWith(t, kept, metav1.DeletePropagationBackground)
	cp.WaitGone(t, "its owner was deleted", depOfKept)
}

// The collector's discovery client asks kube-apiserver for aggregated
// discovery in protobuf and discovers what client-go's (JSON) client does:
// the same groups and resources, and an aggregated API whose server went
// away reported as a failed group-version by both.
func TestProtobufDiscoveryAgreesWithClientGo(t *testing.T) {
	gv := schema.GroupVersion{Group: "agg-" + utilrand.String(5) + ".ownergc.test", Version: "v1"}
	agg := cp.ServeAggregatedAPI(t, gv, "Sprocket", "sprockets")

	cfg, answers := recordingAnswers(cp.Config)
	ours, err := ogdiscovery.NewClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	agree := func(wantFailed bool) error {
		groups, lists, err := ours.ServerGroupsAndResources()
		rgroups, rlists, rerr := cp.Clientset.Discovery().ServerGroupsAndResources()
		failed, _ := discovery.GroupDiscoveryFailedErrorGroups(err)
		rfailed, _ := discovery.GroupDiscoveryFailedErrorGroups(rerr)
		switch {
		case (err == nil) != (failed == nil) || (rerr == nil) != (rfailed == nil):
			return fmt.Errorf("discovery failed: ours %v, client-go's %v", err, rerr)
		case wantFailed != (failed[gv] != nil) || wantFailed != (rfailed[gv] != nil):
			return fmt.Errorf("%s failed: ours %v, client-go's %v; want failed %v", gv, failed[gv], rfailed[gv], wantFailed)
		case !reflect.DeepEqual(groups, rgroups):
			return fmt.Errorf("the groups differ: ours %d, client-go's %d", len(groups), len(rgroups))
		case !reflect.DeepEqual(byGroupVersion(lists), byGroupVersion(rlists)):
			return fmt.Errorf("the resources differ: ours %d group-versions, client-go's %d", len(lists), len(rlists))
		}
		return nil
	}
	framework.Eventually(t, 30*time.Second, func() error { return agree(false) },
		"the protobuf discovery should discover what client-go's does with %s served", gv)
	for _, path := range []string{"/api", "/apis"} {
		if ct := answers.last(path); !strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf;") || !strings.Contains(ct, "as=APIGroupDiscoveryList") {
			t.Errorf("kube-apiserver answered %s with %q, want aggregated discovery in protobuf", path, ct)
		}
	}

	agg.Close()
	framework.Eventually(t, 90*time.Second, func() error { return agree(true) },
		"both should report %s failed once its server is gone, and agree on the rest", gv)
}

// The discovery triggers' APIService client reads APIServices in protobuf,
// as typed objects, by LIST and by a streaming list's watch: the API
// server's own group-versions without a service, an aggregated one with
// its service.
func TestAPIServiceClientReadsTypedAPIServicesInProtobuf(t *testing.T) {
	gv := schema.GroupVersion{Group: "agg-" + utilrand.String(5) + ".ownergc.test", Version: "v1"}
	cp.ServeAggregatedAPI(t, gv, "Cog", "cogs")
	aggregated, local := gv.Version+"."+gv.Group, "v1."

	cfg, answers := recordingAnswers(cp.Config)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ogdiscovery.NewAPIServiceClient(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := c.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the APIServices: %v", err)
	}
	list, ok := obj.(*apiregistrationv1.APIServiceList)
	if !ok {
		t.Fatalf("the list is a %T, want *APIServiceList", obj)
	}
	listed := map[string]apiregistrationv1.APIServiceSpec{}
	for _, a := range list.Items {
		listed[a.Name] = a.Spec
	}
	if spec, ok := listed[local]; !ok || spec.Service != nil || spec.Group != "" || spec.Version != "v1" {
		t.Errorf("APIService %s listed %v with %+v, want the core group-version without a service", local, ok, spec)
	}
	if spec, ok := listed[aggregated]; !ok || spec.Service == nil || spec.Group != gv.Group || spec.Version != gv.Version {
		t.Errorf("APIService %s listed %v with %+v, want %s with its service", aggregated, ok, spec, gv)
	}

	yes := true
	w, err := c.Watch(t.Context(), metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatalf("opening a streaming list of the APIServices: %v", err)
	}
	defer w.Stop()
	streamed := map[string]apiregistrationv1.APIServiceSpec{}
	timeout := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatal("the streaming list ended before its initial events did")
			}
			a, ok := ev.Object.(*apiregistrationv1.APIService)
			if !ok {
				t.Fatalf("a %s event of the streaming list holds a %T, want *APIService", ev.Type, ev.Object)
			}
			switch ev.Type {
			case watch.Added:
				streamed[a.Name] = a.Spec
			case watch.Bookmark:
				done = a.Annotations[metav1.InitialEventsAnnotationKey] == "true"
			}
		case <-timeout:
			t.Fatalf("no bookmark ended the streaming list's initial events within 30 s (%d APIServices streamed)", len(streamed))
		}
	}
	for _, name := range []string{local, aggregated} {
		if !reflect.DeepEqual(streamed[name], listed[name]) {
			t.Errorf("APIService %s streamed with %+v, listed with %+v", name, streamed[name], listed[name])
		}
	}
	contentTypes := answers.to("/apis/apiregistration.k8s.io/v1/apiservices")
	if len(contentTypes) != 2 {
		t.Errorf("%d answers about APIServices, want 2 (the list and the watch)", len(contentTypes))
	}
	for _, ct := range contentTypes {
		if !strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf") {
			t.Errorf("kube-apiserver answered about APIServices with %q, want protobuf", ct)
		}
	}
}

// byGroupVersion keys resource lists by group-version (client-go returns
// them in map order).
func byGroupVersion(lists []*metav1.APIResourceList) map[string]*metav1.APIResourceList {
	out := make(map[string]*metav1.APIResourceList, len(lists))
	for _, l := range lists {
		out[l.GroupVersion] = l
	}
	return out
}

// answers records the Content-Type of every answer a client is sent, by
// the request's path.
type answers struct {
	mu     sync.Mutex
	byPath map[string][]string
}

// recordingAnswers returns a copy of cfg whose clients' answers are
// recorded.
func recordingAnswers(cfg *rest.Config) (*rest.Config, *answers) {
	a := &answers{byPath: map[string][]string{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				a.mu.Lock()
				a.byPath[req.URL.Path] = append(a.byPath[req.URL.Path], resp.Header.Get("Content-Type"))
				a.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg, a
}

// to is the Content-Types of the answers to requests for path, in order.
func (a *answers) to(path string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.byPath[path])
}

// last is the Content-Type of the last answer to a request for path ("" if
// none).
func (a *answers) last(path string) string {
	if cts := a.to(path); len(cts) > 0 {
		return cts[len(cts)-1]
	}
	return ""
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
