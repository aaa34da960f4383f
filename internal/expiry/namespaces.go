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

package expiry

import (
	"context"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespaceLabels follows the labels of the Namespaces, which the graph
// does not keep (no monitor decodes labels), for the rules that select
// namespaces by their labels: a metadata informer whose cache keeps each
// Namespace's name and labels only. A session runs it only while some rule
// has a namespaceSelector; Namespaces are few.
type namespaceLabels struct {
	informer toolscache.SharedIndexInformer
}

// newNamespaceLabels returns the informer; changed is called when a
// Namespace's labels change (or it comes or goes), once it has synced.
func newNamespaceLabels(c metadata.Interface, changed func()) *namespaceLabels {
	lw := toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.Resource(namespacesGVR).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Resource(namespacesGVR).Watch(ctx, opts)
		},
	}, c)
	inf := toolscache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, toolscache.SharedIndexInformerOptions{})
	_ = inf.SetTransform(func(in any) (any, error) {
		if o, ok := in.(*metav1.PartialObjectMetadata); ok {
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: o.Labels}}, nil
		}
		return in, nil
	})
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				changed()
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*metav1.PartialObjectMetadata)
			n, ok2 := cur.(*metav1.PartialObjectMetadata)
			if !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels) {
				changed()
			}
		},
		DeleteFunc: func(any) { changed() },
	})
	return &namespaceLabels{informer: inf}
}

// get returns the labels of namespace name; false when the informer does
// not know it (yet).
func (n *namespaceLabels) get(name string) (map[string]string, bool) {
	obj, ok, err := n.informer.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	o, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, false
	}
	return o.Labels, true
}
