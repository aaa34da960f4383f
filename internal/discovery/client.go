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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Client is client-go's discovery client, but that it asks for the
// aggregated discovery documents (/api and /apis) in protobuf, which the API
// server encodes and the collector decodes for a fraction of what JSON
// costs; client-go asks for JSON only. Decoding the two JSON documents was
// a tenth of a fleet's CPU while it engaged many clusters at once (`go run
// ./test/bench -only storm`; docs/architecture.md). An API server that
// answers in JSON is read as JSON; one that does not serve aggregated
// discovery (before Kubernetes 1.26, or with it switched off) is read as
// client-go reads it, per group-version. What ServerGroupsAndResources
// returns is what client-go's would: the same groups and resources (through
// client-go's SplitGroupsAndResources), a stale group-version of an
// aggregated API reported as failed in an ErrGroupDiscoveryFailed, and the
// whole asked for twice while some group-version fails, as client-go does.
type Client struct {
	*discovery.DiscoveryClient
}

// NewClientForConfig returns a Client for cfg.
func NewClientForConfig(cfg *rest.Config) (*Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{DiscoveryClient: dc}, nil
}

// protobufAggregated is the media type of the aggregated discovery
// document in protobuf (client-go names only the JSON one, AcceptV2).
const protobufAggregated = runtime.ContentTypeProtobuf + ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// acceptAggregated asks for aggregated discovery in protobuf, then in JSON,
// then for the unaggregated document (client-go's acceptDiscoveryFormats,
// with protobuf first).
const acceptAggregated = protobufAggregated + "," + discovery.AcceptV2 + "," + discovery.AcceptV1

// discoveryAttempts is how many times ServerGroupsAndResources asks while
// some group-version fails (client-go's defaultRetries).
const discoveryAttempts = 2

// errUnaggregated: the API server answered with the unaggregated document.
var errUnaggregated = errors.New("the API server does not serve aggregated discovery")

// aggregatedDecoder decodes the protobuf aggregated discovery document.
var aggregatedDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := apidiscoveryv2.AddToScheme(s); err != nil {
		panic(err)
	}
	return protobuf.NewSerializer(s, s)
}()

// ServerGroupsAndResources returns the groups and the resources of every
// group-version the API server serves, and an ErrGroupDiscoveryFailed
// naming those whose resources could not be discovered (with the rest).
func (c *Client) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return c.ServerGroupsAndResourcesWithContext(context.Background())
}

// ServerGroupsAndResourcesWithContext is ServerGroupsAndResources within
// ctx.
func (c *Client) ServerGroupsAndResourcesWithContext(ctx context.Context) (groups []*metav1.APIGroup, lists []*metav1.APIResourceList, err error) {
	for range discoveryAttempts {
		groups, lists, err = discovery.ServerGroupsAndResourcesWithContext(ctx, c)
		if err == nil {
			return groups, lists, nil
		}
		if !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, nil, err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return groups, lists, err
}

// GroupsAndMaybeResources is GroupsAndMaybeResourcesWithContext without a
// deadline.
func (c *Client) GroupsAndMaybeResources() (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	return c.GroupsAndMaybeResourcesWithContext(context.Background())
}

// GroupsAndMaybeResourcesWithContext returns the groups of /api and /apis,
// the legacy group first, with their resources and the group-versions that
// failed, from the aggregated documents; from an API server that does not
// serve them, what client-go's discovery client returns (the groups only:
// discovery.ServerGroupsAndResources then asks for each group-version).
func (c *Client) GroupsAndMaybeResourcesWithContext(ctx context.Context) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	groups, resources, failed, err := c.aggregated(ctx, "/api")
	switch {
	case apierrors.IsNotFound(err):
		// An aggregated API server may serve no /api (client-go's rule).
		groups, resources, failed = &metav1.APIGroupList{}, map[schema.GroupVersion]*metav1.APIResourceList{}, map[schema.GroupVersion]error{}
	case errors.Is(err, errUnaggregated):
		return c.DiscoveryClient.GroupsAndMaybeResourcesWithContext(ctx)
	case err != nil:
		return nil, nil, nil, err
	}
	apiGroups, apiResources, apiFailed, err := c.aggregated(ctx, "/apis")
	switch {
	case errors.Is(err, errUnaggregated):
		return c.DiscoveryClient.GroupsAndMaybeResourcesWithContext(ctx)
	case err != nil:
		return nil, nil, nil, err
	}
	groups.Groups = append(groups.Groups, apiGroups.Groups...)
	for gv, l := range apiResources {
		resources[gv] = l
	}
	for gv, err := range apiFailed {
		failed[gv] = err
	}
	return groups, resources, failed, nil
}

// aggregated reads the aggregated discovery document at path, in protobuf
// or JSON, into groups, resources and failed group-versions; errUnaggregated
// if the API server answered with another document.
func (c *Client) aggregated(ctx context.Context, path string) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	var contentType string
	body, err := c.RESTClient().Get().AbsPath(path).SetHeader("Accept", acceptAggregated).
		Do(ctx).ContentType(&contentType).Raw()
	if err != nil {
		return nil, nil, nil, err
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["g"] != apidiscoveryv2.SchemeGroupVersion.Group ||
		params["v"] != apidiscoveryv2.SchemeGroupVersion.Version || params["as"] != "APIGroupDiscoveryList" {
		return nil, nil, nil, errUnaggregated
	}
	var doc apidiscoveryv2.APIGroupDiscoveryList
	switch mediaType {
	case runtime.ContentTypeProtobuf:
		_, _, err = aggregatedDecoder.Decode(body, nil, &doc)
	case runtime.ContentTypeJSON:
		err = json.Unmarshal(body, &doc)
	default:
		return nil, nil, nil, errUnaggregated
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decoding the aggregated discovery document of %s: %w", path, err)
	}
	groups, resources, failed := discovery.SplitGroupsAndResources(doc)
	return groups, resources, failed, nil
}
