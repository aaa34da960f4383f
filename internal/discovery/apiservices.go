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
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// APIServiceSource lists and watches APIServices, for the triggers'
// follower of them (NewWithTriggers): a list is an
// *apiregistrationv1.APIServiceList, a watch's objects *APIService.
type APIServiceSource interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewAPIServiceClient returns an APIServiceSource over cfg and httpClient
// that reads APIServices as typed objects, in protobuf (JSON from a server
// that answers only that). A dynamic client reads them in JSON into maps:
// in a fleet's engagement storm, decoding the forty-odd APIServices of each
// member's streaming list, and its API server encoding them, were the
// largest part of what the process decoded beside the monitors' lists
// (`go run ./test/bench -only storm` with a CPU profile;
// docs/architecture.md).
func NewAPIServiceClient(cfg *rest.Config, httpClient *http.Client) (APIServiceSource, error) {
	cfg = rest.CopyConfig(cfg)
	gv := apiServiceResource.GroupVersion()
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = apiServiceCodecs
	client, err := rest.RESTClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return apiServiceClient{client: client}, nil
}

// apiServiceCodecs are the APIService clients' codecs, over a scheme of
// their own, built once as aggregatedDecoder is: one for every engine of a
// process (a scheme and its codecs per engine grew a twenty-member fleet's
// memory by 3 to 5 MiB).
var apiServiceCodecs = func() runtime.NegotiatedSerializer {
	s := runtime.NewScheme()
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s).WithoutConversion()
}()

type apiServiceClient struct {
	client rest.Interface
}

func (c apiServiceClient) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list := &apiregistrationv1.APIServiceList{}
	err := c.client.Get().Resource(apiServiceResource.Resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
	if err != nil {
		return nil, err
	}
	return list, nil
}

func (c apiServiceClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.client.Get().Resource(apiServiceResource.Resource).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
}
