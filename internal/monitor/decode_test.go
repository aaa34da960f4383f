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
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/discovery"
)

// standardProtobuf is the protobuf serializer of the metadata client: the
// one the API server encodes with and the one graphFieldsSerializer stands
// in for.
func standardProtobuf(t testing.TB) runtime.Serializer {
	t.Helper()
	for _, info := range metainternalversionscheme.Codecs.WithoutConversion().SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			return info.Serializer
		}
	}
	t.Fatal("the metadata scheme has no protobuf serializer")
	return nil
}

func encode(t testing.TB, obj runtime.Object, gvk schema.GroupVersionKind) []byte {
	t.Helper()
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	var b bytes.Buffer
	if err := standardProtobuf(t).Encode(obj, &b); err != nil {
		t.Fatalf("encoding %T: %v", obj, err)
	}
	return b.Bytes()
}

// graphFieldsOf is what the decoder keeps of an object the standard
// decoder decoded: the fields its table keeps and, of the annotations, the
// kept ones.
func graphFieldsOf(o *metav1.PartialObjectMetadata) metav1.PartialObjectMetadata {
	out := metav1.PartialObjectMetadata{TypeMeta: o.TypeMeta}
	in, kept := reflect.ValueOf(o.ObjectMeta), reflect.ValueOf(&out.ObjectMeta).Elem()
	for i := range in.NumField() {
		if f := metaFieldNamed(jsonName(in.Type().Field(i))); f != nil && f.keep != nil {
			kept.Field(i).Set(in.Field(i))
		}
	}
	out.Annotations = nil
	for k, v := range o.Annotations {
		if keptAnnotation([]byte(k)) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// graphFieldsOfObject is what the decoder keeps of a PartialObjectMetadata
// or of each item of a PartialObjectMetadataList the standard decoder
// decoded (a list is changed in place); other objects are returned as they
// are.
func graphFieldsOfObject(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		k := graphFieldsOf(o)
		return &k
	case *metav1.PartialObjectMetadataList:
		for i := range o.Items {
			o.Items[i] = graphFieldsOf(&o.Items[i])
		}
	}
	return obj
}

// metaFieldNamed is the entry of the decoder's field table named name, nil
// when there is none.
func metaFieldNamed(name string) *metaField {
	for i := range objectMetaFields {
		if objectMetaFields[i].name != "" && objectMetaFields[i].name == name {
			return &objectMetaFields[i]
		}
	}
	return nil
}

// jsonName is a struct field's JSON name.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// The decoder's field table is ObjectMeta's protobuf encoding, field by
// field: a field added to ObjectMeta, or one the table names wrongly, fails
// here.
func TestTheFieldTableIsObjectMetasEncoding(t *testing.T) {
	typ := reflect.TypeFor[metav1.ObjectMeta]()
	inTable := map[int]bool{}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		tag := strings.Split(sf.Tag.Get("protobuf"), ",") // "bytes,1,opt,name=name"
		num, err := strconv.Atoi(tag[1])
		if err != nil || len(tag) < 3 {
			t.Fatalf("ObjectMeta.%s: protobuf tag %q", sf.Name, sf.Tag.Get("protobuf"))
		}
		if num >= len(objectMetaFields) || objectMetaFields[num].name == "" {
			t.Errorf("ObjectMeta.%s (field %d) is not in the decoder's field table: add it, kept or skipped", sf.Name, num)
			continue
		}
		inTable[num] = true
		f := objectMetaFields[num]
		wire := map[string]protowire.Type{"bytes": protowire.BytesType, "varint": protowire.VarintType}[tag[0]]
		if f.name != jsonName(sf) || f.typ != wire || f.repeated != (tag[2] == "rep") {
			t.Errorf("field %d of the table is %q (wire type %d, repeated %t); ObjectMeta.%s is %q (wire type %d, repeated %t)",
				num, f.name, f.typ, f.repeated, sf.Name, jsonName(sf), wire, tag[2] == "rep")
		}
	}
	for num, f := range objectMetaFields {
		if f.name != "" && !inTable[num] {
			t.Errorf("the table names field %d %q, which ObjectMeta does not have", num, f.name)
		}
	}
}

// monitorReads are what the monitors read of an object they decoded, each
// named after where it is read: whatever is read must be read alike from
// the decoder's object and from the standard decoder's, so that a field the
// decoder does not keep cannot be read empty without a test failing.
var monitorReads = map[string]func(o *metav1.PartialObjectMetadata) any{
	// monitor.go: everything the graph keeps of it.
	"the graph's observation": func(o *metav1.PartialObjectMetadata) any {
		return (&monitor{res: discovery.Resource{GroupVersionResource: valvesGVR, Kind: "Valve", Namespaced: true}}).observation(o)
	},
	// run.go: what a list's listing keeps of it.
	"the listed object's name": func(o *metav1.PartialObjectMetadata) any { return [2]string{o.Namespace, o.Name} },
	// run.go and listwatch.go: the end of a streaming list's initial
	// events, and the resourceVersion to watch from.
	"the end of the initial events": func(o *metav1.PartialObjectMetadata) any { return initialEventsEnd(o) },
	"the resourceVersion": func(o *metav1.PartialObjectMetadata) any {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		return m.GetResourceVersion()
	},
}

// What the monitors read of an object is the same whichever decoder
// decoded it, for objects with every field of the metadata set.
func TestWhatTheMonitorsReadTheDecoderKeeps(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	standard, fast := standardProtobuf(t), graphFieldsSerializer{standardProtobuf(t)}
	for i := range 500 {
		o := randomMetadata(r, i)
		if i%2 == 0 {
			// Every field set, and labels and annotations that might be
			// mistaken for the kept ones.
			o.Labels = map[string]string{ownergcv1alpha1.ProtectedAnnotation: trueValue, ownergcv1alpha1.TTLAnnotation: "1h"}
			o.Annotations = map[string]string{"note": "n", ownergcv1alpha1.ProtectedAnnotation + "x": trueValue,
				ownergcv1alpha1.TTLAnnotation + "x": "1h", "x" + ownergcv1alpha1.ExpiresAnnotation: "2026-07-01"}
		}
		data := encode(t, o, partialObjectMetadataGVK)
		whole, _, err := standard.Decode(data, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		decoded, _, err := fast.Decode(data, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for what, read := range monitorReads {
			if got, want := read(decoded.(*metav1.PartialObjectMetadata)), read(whole.(*metav1.PartialObjectMetadata)); !reflect.DeepEqual(got, want) {
				t.Fatalf("object %d: %s reads\n%#v\nfrom the decoder's object, and\n%#v\nfrom the whole object: keep what it reads in the decoder's field table (decode.go)",
					i, what, got, want)
			}
		}
	}
}

// randomMetadata sets every field of the metadata in some of the objects,
// so that the tests above see every field read.
func TestRandomMetadataSetsEveryField(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	typ := reflect.TypeFor[metav1.ObjectMeta]()
	set := make([]bool, typ.NumField())
	for i := range 100 {
		v := reflect.ValueOf(randomMetadata(r, i).ObjectMeta)
		for f := range typ.NumField() {
			set[f] = set[f] || !v.Field(f).IsZero()
		}
	}
	for f, ok := range set {
		if !ok {
			t.Errorf("randomMetadata never sets ObjectMeta.%s", typ.Field(f).Name)
		}
	}
}

// randomMetadata builds an object with every metadata field the API
// server may send, each present or not at random.
func randomMetadata(r *rand.Rand, i int) *metav1.PartialObjectMetadata {
	maybe := func() bool { return r.Intn(2) == 0 }
	word := func(prefix string) string { return fmt.Sprintf("%s-%d-%d", prefix, i, r.Intn(1000)) }
	boolPtr := func() *bool {
		switch r.Intn(3) {
		case 0:
			return nil
		case 1:
			return new(bool)
		}
		yes := true
		return &yes
	}
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: word("name"), UID: types.UID(word("uid")), ResourceVersion: fmt.Sprint(r.Int63()),
		CreationTimestamp: metav1.NewTime(time.Unix(r.Int63n(2e9), 0)),
	}}
	m := &o.ObjectMeta
	if maybe() {
		m.Namespace = word("ns")
	}
	if maybe() {
		m.GenerateName, m.Generation = "gen-", r.Int63()
	}
	if maybe() {
		// Older API servers still send it.
		m.SelfLink = "/api/v1/" + word("link") //nolint:staticcheck // see above

	}
	if maybe() {
		ts := metav1.NewTime(time.Unix(r.Int63n(2e9), 0))
		grace := r.Int63n(60)
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &ts, &grace
	}
	if maybe() {
		m.Labels = map[string]string{"app": word("app"), "tier": word("tier")}
	}
	if maybe() {
		m.Annotations = map[string]string{"note": word("note")}
		if maybe() {
			m.Annotations[ownergcv1alpha1.ProtectedAnnotation] = []string{"true", "false", ""}[r.Intn(3)]
		}
		if maybe() {
			m.Annotations[metav1.InitialEventsAnnotationKey] = "true"
		}
		if maybe() {
			m.Annotations[ownergcv1alpha1.TTLAnnotation] = []string{"7d", "36h", "", "soon"}[r.Intn(4)]
		}
		if maybe() {
			m.Annotations[ownergcv1alpha1.ExpiresAnnotation] = []string{"2026-07-01", "2026-07-01T18:00:00Z", "", "tomorrow"}[r.Intn(4)]
		}
	}
	for range r.Intn(4) {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{
			APIVersion: []string{"v1", "apps/v1", "example.com/v2"}[r.Intn(3)], Kind: word("Kind"),
			Name: word("owner"), UID: types.UID(word("ouid")), Controller: boolPtr(), BlockOwnerDeletion: boolPtr(),
		})
	}
	for range r.Intn(3) {
		m.Finalizers = append(m.Finalizers, word("example.com/finalizer"))
	}
	if maybe() {
		at := metav1.NewTime(time.Unix(r.Int63n(2e9), 0))
		m.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &at,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:key":{}}}`),
		}}
	}
	return o
}

// Every object the API server may send decodes to exactly what the
// standard decoder gives of the fields the graph keeps, through the fast
// path.
func TestTheDecoderKeepsExactlyTheGraphFieldsOfWhatTheStandardDecoderReads(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	standard, fast := standardProtobuf(t), graphFieldsSerializer{standardProtobuf(t)}
	for i := range 2000 {
		data := encode(t, randomMetadata(r, i), partialObjectMetadataGVK)
		want, _, err := standard.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("object %d: the standard decoder failed: %v", i, err)
		}
		if _, _, ok := decodeGraphFields(data, nil); !ok {
			t.Fatalf("object %d: the fast path declined an object the API server could send:\n%#v", i, want)
		}
		got, gvk, err := fast.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if *gvk != partialObjectMetadataGVK {
			t.Errorf("object %d: decoded as %v, want %v", i, gvk, partialObjectMetadataGVK)
		}
		if w := graphFieldsOf(want.(*metav1.PartialObjectMetadata)); !reflect.DeepEqual(got, &w) {
			t.Fatalf("object %d decoded as\n%#v\nwant\n%#v", i, got, &w)
		}
	}
}

func TestTheDecoderReadsListsAndDecodesIntoTheCallersObject(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	remaining := int64(7)
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: &remaining}}
	for i := range 50 {
		list.Items = append(list.Items, *randomMetadata(r, i))
	}
	data := encode(t, list, partialObjectMetadataListGVK)
	wantObj, _, err := standardProtobuf(t).Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := wantObj.(*metav1.PartialObjectMetadataList)
	for i := range want.Items {
		want.Items[i] = graphFieldsOf(&want.Items[i])
	}
	into := &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{}}}
	got, _, err := graphFieldsSerializer{standardProtobuf(t)}.Decode(data, nil, into)
	if err != nil {
		t.Fatal(err)
	}
	if got != into {
		t.Errorf("decoded into a new %T, not the caller's", got)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("list decoded as\n%#v\nwant\n%#v", got, want)
	}

	one := randomMetadata(r, 0)
	into1 := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"stale": "x"}}}
	got1, _, err := graphFieldsSerializer{standardProtobuf(t)}.Decode(encode(t, one, partialObjectMetadataGVK), nil, into1)
	if err != nil {
		t.Fatal(err)
	}
	w := graphFieldsOf(one)
	w.SetGroupVersionKind(partialObjectMetadataGVK)
	if got1 != into1 || !reflect.DeepEqual(got1, &w) {
		t.Fatalf("decoded into the caller's object as\n%#v\nwant\n%#v", got1, &w)
	}
}

// appendField appends a length-delimited field to a protobuf message.
func appendField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// envelope encodes raw as a protobuf-encoded object of kind.
func envelope(apiVersion, kind string, raw []byte) []byte {
	typeMeta := appendField(appendField(nil, 1, []byte(apiVersion)), 2, []byte(kind))
	return append(append([]byte{}, protobufPrefix...), appendField(appendField(nil, 1, typeMeta), 2, raw)...)
}

// What the API server does not send the way it sends objects goes to the
// standard decoder, whatever it is: the result is the standard decoder's.
func TestTheDecoderLeavesAnythingElseToTheStandardDecoder(t *testing.T) {
	owner, err := (&metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	metadata := func(fields ...[]byte) []byte {
		var m []byte
		for _, f := range fields {
			m = append(m, f...)
		}
		return envelope(metaV1, "PartialObjectMetadata", appendField(nil, 1, m))
	}
	status := encode(t, &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}, metav1.SchemeGroupVersion.WithKind("Status"))
	tests := map[string][]byte{
		"a watch's error":                status,
		"JSON":                           []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a","labels":{"x":"y"}}}`),
		"another API version":            envelope("meta.k8s.io/v1beta1", "PartialObjectMetadata", appendField(nil, 1, appendField(nil, 1, []byte("a")))),
		"a name given twice":             metadata(appendField(nil, 1, []byte("a")), appendField(nil, 1, []byte("b"))),
		"an owner reference as a number": metadata(appendField(nil, 1, []byte("a")), protowire.AppendVarint(protowire.AppendTag(nil, 13, protowire.VarintType), 5)),
		"a malformed owner reference":    metadata(appendField(nil, 1, []byte("a")), appendField(nil, 13, append(owner, 0x80))),
		"a metadata given twice":         envelope(metaV1, "PartialObjectMetadata", append(appendField(nil, 1, appendField(nil, 1, []byte("a"))), appendField(nil, 1, appendField(nil, 5, []byte("u")))...)),
		"a truncated object":             metadata(appendField(nil, 1, []byte("a")))[:12],
		"a generation as bytes":          metadata(appendField(nil, 1, []byte("a")), appendField(nil, 7, []byte("1"))),
		"a grace period as fixed64":      metadata(appendField(nil, 1, []byte("a")), protowire.AppendFixed64(protowire.AppendTag(nil, 10, protowire.Fixed64Type), 30)),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, _, ok := decodeGraphFields(data, nil); ok {
				t.Fatal("the fast path decoded it")
			}
			standard := standardProtobuf(t)
			want, _, wantErr := standard.Decode(data, nil, nil)
			got, _, err := graphFieldsSerializer{standard}.Decode(data, nil, nil)
			if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded as %#v (error %v), the standard decoder gives %#v (error %v)", got, err, want, wantErr)
			}
		})
	}
	// The fast path keeps the references it reads with the standard
	// decoder, in order.
	got, _, ok := decodeGraphFields(metadata(appendField(nil, 1, []byte("a")), appendField(nil, 13, owner), appendField(nil, 13, owner)), nil)
	if !ok || len(got.(*metav1.PartialObjectMetadata).OwnerReferences) != 2 {
		t.Fatalf("an object with two references decoded as %#v (ok %v)", got, ok)
	}
}

// Fuzzed input: whatever the standard decoder reads, the decoder reads the
// same of the graph's fields, or leaves it to the standard decoder. (Where
// the standard decoder fails, the fast path may still decode: it checks
// the fields it skips for framing only.) The seeds are random objects and
// a list of them, and the corpus in testdata/fuzz, whose apiserver-* files
// are kube-apiserver's answers (see apiServerAnswers).
func FuzzTheDecoderAgreesWithTheStandardDecoder(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for i := range 20 {
		f.Add(encode(f, randomMetadata(r, i), partialObjectMetadataGVK))
	}
	f.Add(encode(f, &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{*randomMetadata(r, 0)}}, partialObjectMetadataListGVK))
	standard := standardProtobuf(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, _, err := standard.Decode(data, nil, nil)
		got, _, gotErr := graphFieldsSerializer{standard}.Decode(data, nil, nil)
		if err != nil {
			return
		}
		if gotErr != nil {
			t.Fatalf("the standard decoder read %#v, the decoder failed: %v", want, gotErr)
		}
		if _, _, fast := decodeGraphFields(data, nil); !fast {
			// Declined: the standard decoder's result, whole.
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("declined, yet decoded as\n%#v\nnot as the standard decoder reads\n%#v", got, want)
			}
			return
		}
		want = graphFieldsOfObject(want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded as\n%#v\nthe standard decoder reads\n%#v", got, want)
		}
	})
}

// The monitors' client asks for metadata as the metadata client does and
// decodes lists and watch events with the graph's decoder.
func TestTheMonitorsClientDecodesOnlyTheGraphFields(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	objs := []*metav1.PartialObjectMetadata{randomMetadata(r, 1), randomMetadata(r, 2)}
	for _, o := range objs {
		o.Labels = map[string]string{"dropped": "yes"}
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []metav1.PartialObjectMetadata{*objs[0]}}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/apis/example.com/v2/valves" {
			http.Error(w, "unexpected path "+req.URL.Path, http.StatusNotFound)
			return
		}
		if req.URL.Query().Get("watch") != "true" {
			if req.Header.Get("Accept") != acceptListMetadata {
				http.Error(w, "unexpected Accept "+req.Header.Get("Accept"), http.StatusNotAcceptable)
				return
			}
			w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
			_, _ = w.Write(encode(t, list, partialObjectMetadataListGVK))
			return
		}
		if req.Header.Get("Accept") != acceptObjectMetadata {
			http.Error(w, "unexpected Accept "+req.Header.Get("Accept"), http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		for _, o := range objs {
			ev, err := (&metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: encode(t, o, partialObjectMetadataGVK)}}).Marshal()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(ev))))
			_, _ = w.Write(ev)
		}
	}))
	defer server.Close()

	base, err := newMetadataClient(&rest.Config{Host: server.URL}, server.Client())
	if err != nil {
		t.Fatal(err)
	}
	c := base.For(valvesGVR)
	gotList, err := c.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := graphFieldsOf(objs[0]); gotList.ResourceVersion != "10" || len(gotList.Items) != 1 || !reflect.DeepEqual(gotList.Items[0], want) {
		t.Fatalf("listed %#v, want resourceVersion 10 and %#v", gotList, want)
	}
	w, err := c.Stream(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, o := range objs {
		typ, obj, err := w.Next()
		want := graphFieldsOf(o)
		if err != nil || typ != watch.Added || !reflect.DeepEqual(obj, &want) {
			t.Fatalf("watch event %d: %s %#v (%v), want ADDED %#v", i, typ, obj, err, &want)
		}
	}
	if _, _, err := w.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v, want io.EOF (the server ended the watch)", err)
	}
}

// apiServerAnswers are the answers of kube-apiserver in the fuzz corpus: a
// list and watch events of ConfigMaps and of a custom resource, captured by
// test/integration/decoder (TestCaptureTheAPIServersAnswers with
// -update-corpus writes them again).
func apiServerAnswers(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzTheDecoderAgreesWithTheStandardDecoder", "apiserver-*"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte, len(files))
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// go test's corpus format: a header line, then []byte("...").
		_, value, ok := strings.Cut(strings.TrimSpace(string(text)), "\n")
		quoted, ok2 := strings.CutPrefix(value, "[]byte(")
		quoted, ok3 := strings.CutSuffix(quoted, ")")
		data, err := strconv.Unquote(quoted)
		if !ok || !ok2 || !ok3 || err != nil {
			t.Fatalf("%s is not a corpus file of one []byte: %v", f, err)
		}
		out[filepath.Base(f)] = []byte(data)
	}
	return out
}

// What kube-apiserver sends the monitors, the decoder reads itself (it
// never declines it) and reads as the standard decoder does.
func TestTheDecoderTakesTheAPIServersAnswers(t *testing.T) {
	answers := apiServerAnswers(t)
	for _, want := range []string{"apiserver-configmaps-list", "apiserver-valves-list", "-bookmark", "-added", "-modified", "-deleted"} {
		found := false
		for name := range answers {
			found = found || strings.Contains(name, want)
		}
		if !found {
			t.Errorf("the corpus holds no answer %s*: capture it with test/integration/decoder", want)
		}
	}
	standard := standardProtobuf(t)
	for name, data := range answers {
		whole, _, err := standard.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("%s: the standard decoder fails: %v", name, err)
		}
		got, _, ok := decodeGraphFields(data, nil)
		if !ok {
			t.Fatalf("%s: the decoder declined the API server's answer", name)
		}
		want := graphFieldsOfObject(whole)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s decoded as\n%#v\nthe standard decoder reads\n%#v", name, got, want)
		}
	}
}

// A watch answered in JSON (an API server that does not encode the
// metadata in protobuf, such as an aggregated one) is read as such: the
// stream is told apart from a protobuf one by its first byte.
func TestTheMonitorsClientReadsAWatchAnsweredInJSON(t *testing.T) {
	o := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v", UID: "u", ResourceVersion: "7", Labels: map[string]string{"dropped": "no"}}}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, "{\"type\":\"MODIFIED\",\"object\":%s}\n", mustJSON(t, o))
	}))
	defer server.Close()
	base, err := newMetadataClient(&rest.Config{Host: server.URL}, server.Client())
	if err != nil {
		t.Fatal(err)
	}
	c := base.For(valvesGVR)
	w, err := c.Stream(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	typ, obj, err := w.Next()
	got, ok := obj.(*metav1.PartialObjectMetadata)
	if err != nil || typ != watch.Modified || !ok || got.Name != "v" || got.UID != "u" || got.ResourceVersion != "7" {
		t.Fatalf("read %s %#v (%v), want MODIFIED ns/v at resourceVersion 7", typ, obj, err)
	}
	if _, _, err := w.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v, want io.EOF", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
