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
	"net/http"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// everyField is ListOptions with every field but TypeMeta set, by
// reflection (a field a newer apimachinery adds is set too): strings to
// "x", booleans true, numbers 7, pointers to those.
func everyField(t *testing.T) metav1.ListOptions {
	t.Helper()
	var opts metav1.ListOptions
	v := reflect.ValueOf(&opts).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Anonymous {
			continue // TypeMeta
		}
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(7)
		default:
			t.Fatalf("ListOptions.%s is a %s: teach everyField and listParams", v.Type().Field(i).Name, f.Kind())
		}
	}
	return opts
}

// listParams encodes list options as client-go's parameter codec does: the
// same query for every field of ListOptions, set or not, and for the
// options the monitors send.
func TestListParamsEncodeAsTheParameterCodec(t *testing.T) {
	c, err := newMetadataClient(&rest.Config{Host: "https://example.invalid"}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codec := runtime.NewParameterCodec(scheme)
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
	}{
		{name: "none"},
		{name: "every field", opts: everyField(t)},
		{name: "a streaming list", opts: metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](412)}},
		{name: "a watch", opts: metav1.ListOptions{Watch: true, ResourceVersion: "12345", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](0)}},
		{name: "a page", opts: metav1.ListOptions{Limit: 500, Continue: "token/with?odd&chars"}},
		{name: "sendInitialEvents false", opts: metav1.ListOptions{SendInitialEvents: ptr.To(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			got := listParams(c.client.Get().AbsPath("api", "v1", "configmaps"), &opts).URL()
			want := c.client.Get().AbsPath("api", "v1", "configmaps").SpecificallyVersionedParams(&opts, codec, schema.GroupVersion{Version: "v1"}).URL()
			if got.String() != want.String() {
				t.Errorf("listParams sent %s, the parameter codec %s", got, want)
			}
		})
	}
}
