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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// metadataClient lists and watches the metadata of one resource: the
// requests of client-go's metadata client (k8s.io/client-go/metadata), whose
// responses are decoded keeping only the graph's fields (decode.go).
type metadataClient struct {
	client *rest.RESTClient
	// serializer decodes watch responses (the client's).
	serializer runtime.NegotiatedSerializer
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

// listParams sets opts on req as query parameters, each field that is not
// zero, as client-go's parameter codec does, but without its reflection
// over ListOptions: that was a twentieth of a fleet's CPU while it engaged
// many clusters at once, each of whose monitors sends a streaming list (`go
// run ./test/bench -only storm`; docs/architecture.md). A test compares it
// with the codec for every field of ListOptions.
func listParams(req *rest.Request, opts *metav1.ListOptions) *rest.Request {
	set := func(name, value string) {
		if value != "" {
			req.Param(name, value)
		}
	}
	set("labelSelector", opts.LabelSelector)
	set("fieldSelector", opts.FieldSelector)
	if opts.Watch {
		set("watch", "true")
	}
	if opts.AllowWatchBookmarks {
		set("allowWatchBookmarks", "true")
	}
	set("resourceVersion", opts.ResourceVersion)
	set("resourceVersionMatch", string(opts.ResourceVersionMatch))
	if opts.TimeoutSeconds != nil {
		set("timeoutSeconds", strconv.FormatInt(*opts.TimeoutSeconds, 10))
	}
	if opts.Limit != 0 {
		set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	set("continue", opts.Continue)
	if opts.SendInitialEvents != nil {
		set("sendInitialEvents", strconv.FormatBool(*opts.SendInitialEvents))
	}
	set("shardSelector", opts.ShardSelector)
	return req
}

// newMetadataClient returns a client of no resource yet: For gives the
// client of a monitor of one resource, and all share its REST client (its
// rate limiter, its serializer), as the informers of a client-go informer
// factory share their clientset's.
func newMetadataClient(config *rest.Config, httpClient *http.Client) (*metadataClient, error) {
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
	return &metadataClient{client: client, serializer: config.NegotiatedSerializer}, nil
}

// For returns the client of gvr, sharing c's REST client.
func (c *metadataClient) For(gvr schema.GroupVersionResource) *metadataClient {
	path := []string{"api", gvr.Version, gvr.Resource}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group, gvr.Version, gvr.Resource}
	}
	return &metadataClient{client: c.client, serializer: c.serializer, path: path}
}

// List lists the resource's objects' metadata. A server that ignores the
// request for metadata only and answers with whole objects in JSON is read
// as metadata (as the metadata client does).
func (c *metadataClient) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	result := listParams(c.client.Get().AbsPath(c.path...).SetHeader("Accept", acceptListMetadata), &opts).Do(ctx)
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

// Stream opens a watch of the resource's objects' metadata (opts.Watch is
// set): its events are read by the caller's goroutine, through Next, with
// the graph's decoder. Like client-go's watches, it is not held back by the
// client's rate limiter.
func (c *metadataClient) Stream(ctx context.Context, opts metav1.ListOptions) (eventStream, error) {
	opts.Watch = true
	body, err := listParams(c.client.Get().AbsPath(c.path...).SetHeader("Accept", acceptObjectMetadata), &opts).
		Throttle(nil).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return &responseEvents{body: body, serializer: c.serializer}, nil
}

// responseEvents reads the events of a watch response. The response is
// in protobuf or in JSON, as the API server chose from the Accept header;
// the two are told apart by the first byte, which Stream does not give: a
// protobuf stream starts with the length of its first frame, whose first
// of four bytes is zero (a frame is far smaller than 16 MiB), and a JSON
// stream with an object.
type responseEvents struct {
	body       io.ReadCloser
	serializer runtime.NegotiatedSerializer
	decoder    *restclientwatch.Decoder
}

func (e *responseEvents) Next() (watch.EventType, runtime.Object, error) {
	if e.decoder == nil {
		var first [1]byte
		if _, err := io.ReadFull(e.body, first[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			return "", nil, err
		}
		mediaType := runtime.ContentTypeJSON
		if first[0] == 0 {
			mediaType = runtime.ContentTypeProtobuf
		}
		objects, events, framer, err := runtime.NewClientNegotiator(e.serializer, schema.GroupVersion{}).StreamDecoder(mediaType, nil)
		if err != nil {
			return "", nil, err
		}
		body := struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(first[:]), e.body), e.body}
		e.decoder = restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), events), objects)
	}
	return e.decoder.Decode()
}

func (e *responseEvents) Close() { _ = e.body.Close() }
