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

package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// metadataClient lists and watches the metadata of one resource: the
// requests of client-go's metadata client (k8s.io/client-go/metadata), whose
// responses are decoded keeping only the graph's fields (decode.go).
type metadataClient struct {
	client *rest.RESTClient
	// path is the resource's collection, cluster-wide.
	path []string
}

// Accept headers: the object's metadata only, in protobuf if the server
// can, in JSON otherwise (the metadata client's).
const (
	acceptObjectMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	acceptListMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

var (
	// parameterCodec encodes list options as query parameters.
	parameterCodec = func() runtime.ParameterCodec {
		scheme := runtime.NewScheme()
		metav1.AddToGroupVersion(scheme, optionsVersion)
		return runtime.NewParameterCodec(scheme)
	}()
	optionsVersion = schema.GroupVersion{Version: "v1"}
)

// newMetadataClient returns the client of a monitor of gvr.
func newMetadataClient(config *rest.Config, httpClient *http.Client, gvr schema.GroupVersionResource) (*metadataClient, error) {
	config = metadata.ConfigFor(config)
	config.NegotiatedSerializer = newGraphFieldsNegotiator(config.NegotiatedSerializer)
	// Requests use absolute paths; the group version only serializes the
	// options.
	config.GroupVersion = &schema.GroupVersion{}
	config.APIPath = "/"
	client, err := rest.RESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	path := []string{"api", gvr.Version, gvr.Resource}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group, gvr.Version, gvr.Resource}
	}
	return &metadataClient{client: client, path: path}, nil
}

// List lists the resource's objects' metadata. A server that ignores the
// request for metadata only and answers with whole objects in JSON is read
// as metadata (as the metadata client does).
func (c *metadataClient) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	result := c.client.Get().AbsPath(c.path...).SetHeader("Accept", acceptListMetadata).
		SpecificallyVersionedParams(&opts, parameterCodec, optionsVersion).Do(ctx)
	if err := result.Error(); err != nil {
		return nil, err
	}
	obj, err := result.Get()
	if runtime.IsNotRegisteredError(err) {
		raw, err := result.Raw()
		if err != nil {
			return nil, err
		}
		var list metav1.PartialObjectMetadataList
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("decoding the list as PartialObjectMetadataList: %w", err)
		}
		list.TypeMeta = metav1.TypeMeta{}
		return &list, nil
	}
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*metav1.PartialObjectMetadataList)
	if !ok {
		return nil, fmt.Errorf("listing metadata: got %T, not PartialObjectMetadataList", obj)
	}
	return list, nil
}

// Watch watches the resource's objects' metadata.
func (c *metadataClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	return c.client.Get().AbsPath(c.path...).SetHeader("Accept", acceptObjectMetadata).
		SpecificallyVersionedParams(&opts, parameterCodec, optionsVersion).
		Timeout(timeout).Watch(ctx)
}
