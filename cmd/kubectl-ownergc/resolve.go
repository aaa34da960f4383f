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
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// clients are what a command reads the cluster with.
type clients struct {
	config    *rest.Config
	mapper    meta.RESTMapper
	discovery discovery.CachedDiscoveryInterface
	metadata  metadata.Interface
	// lister lists every resource: a higher rate limit, and no warnings
	// (about deprecated resources it lists only to look for dependents).
	lister metadata.Interface
	kube   kubernetes.Interface
	// dynamic reads the fleet host's ClusterGCStatuses (replicaPod).
	dynamic dynamic.Interface
	// namespace is the namespace of the command: -n, or the context's.
	namespace string
	// forward port-forwards to a pod (portForward; tests replace it).
	forward func(ctx context.Context, namespace, pod string, port int) (local int, stop func(), err error)
}

func (o *options) clients() (*clients, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	c := &clients{config: cfg}
	if c.namespace, _, err = o.config.ToRawKubeConfigLoader().Namespace(); err != nil {
		return nil, err
	}
	if c.mapper, err = o.config.ToRESTMapper(); err != nil {
		return nil, err
	}
	if c.discovery, err = o.config.ToDiscoveryClient(); err != nil {
		return nil, err
	}
	if c.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	lc := rest.CopyConfig(cfg)
	lc.QPS, lc.Burst, lc.WarningHandler = 100, 200, rest.NoWarnings{}
	if c.lister, err = metadata.NewForConfig(lc); err != nil {
		return nil, err
	}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// target is the object a command is about.
type target struct {
	mapping   *meta.RESTMapping
	namespace string
	name      string
	// obj is the object's metadata; nil when it does not exist.
	obj *metav1.PartialObjectMetadata
}

// ref names the target.
func (t target) ref() objectRef {
	r := objectRef{
		APIVersion: t.mapping.GroupVersionKind.GroupVersion().String(), Kind: t.mapping.GroupVersionKind.Kind,
		Resource: formatGVR(t.mapping.Resource), Namespace: t.namespace, Name: t.name,
	}
	if t.obj != nil {
		r.UID = t.obj.UID
	}
	return r
}

// splitArgs takes KIND/NAME, or KIND NAME.
func splitArgs(args []string) (kind, name string, err error) {
	switch len(args) {
	case 1:
		if kind, name, ok := strings.Cut(args[0], "/"); ok && kind != "" && name != "" && !strings.Contains(name, "/") {
			return kind, name, nil
		}
	case 2:
		if args[0] != "" && args[1] != "" && !strings.Contains(args[0], "/") && !strings.Contains(args[1], "/") {
			return args[0], args[1], nil
		}
	}
	return "", "", fmt.Errorf("name one object as KIND/NAME (or KIND NAME), e.g. deploy/web, configmap/x, replicasets.apps/web-7d4b9; got %q", strings.Join(args, " "))
}

// mappingFor resolves a resource or kind argument as kubectl does: a
// resource, short name, singular or kind, optionally qualified by group
// (replicasets.apps) or by version and group (deployments.v1.apps).
func mappingFor(mapper meta.RESTMapper, arg string) (*meta.RESTMapping, error) {
	fullySpecifiedGVR, groupResource := schema.ParseResourceArg(arg)
	gvk := schema.GroupVersionKind{}
	if fullySpecifiedGVR != nil {
		gvk, _ = mapper.KindFor(*fullySpecifiedGVR)
	}
	if gvk.Empty() {
		gvk, _ = mapper.KindFor(groupResource.WithVersion(""))
	}
	if !gvk.Empty() {
		return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	fullySpecifiedGVK, groupKind := schema.ParseKindArg(arg)
	if fullySpecifiedGVK == nil {
		k := groupKind.WithVersion("")
		fullySpecifiedGVK = &k
	}
	if !fullySpecifiedGVK.Empty() {
		if m, err := mapper.RESTMapping(fullySpecifiedGVK.GroupKind(), fullySpecifiedGVK.Version); err == nil {
			return m, nil
		}
	}
	m, err := mapper.RESTMapping(groupKind, gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the server doesn't have a resource type %q", groupResource.Resource)
		}
		return nil, err
	}
	return m, nil
}

// resolve resolves the command's arguments to an object and reads it; a
// missing object is no error (obj is nil), unless mustExist.
func (c *clients) resolve(ctx context.Context, args []string, mustExist bool) (target, error) {
	kind, name, err := splitArgs(args)
	if err != nil {
		return target{}, err
	}
	m, err := mappingFor(c.mapper, kind)
	if err != nil {
		return target{}, err
	}
	if err := validName("the name", name); err != nil {
		return target{}, err
	}
	t := target{mapping: m, name: name}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		t.namespace = c.namespace
		if err := validNamespace("the namespace", t.namespace); err != nil {
			return target{}, err
		}
	}
	obj, err := c.metadata.Resource(m.Resource).Namespace(t.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		t.obj = obj
	case isNotFound(err) && !mustExist:
	default:
		return target{}, err
	}
	return t, nil
}

// formatGVR writes group/version/resource, version/resource for the core
// group (as the manager's explanations do).
func formatGVR(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}
