package monitor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
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
// decoder decoded.
func graphFieldsOf(o *metav1.PartialObjectMetadata) metav1.PartialObjectMetadata {
	m := o.ObjectMeta
	out := metav1.PartialObjectMetadata{TypeMeta: o.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp, Finalizers: m.Finalizers, OwnerReferences: m.OwnerReferences,
	}}
	for k, v := range m.Annotations {
		if keptAnnotation([]byte(k)) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
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
	meta := func(fields ...[]byte) []byte {
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
		"a name given twice":             meta(appendField(nil, 1, []byte("a")), appendField(nil, 1, []byte("b"))),
		"an owner reference as a number": meta(appendField(nil, 1, []byte("a")), protowire.AppendVarint(protowire.AppendTag(nil, 13, protowire.VarintType), 5)),
		"a malformed owner reference":    meta(appendField(nil, 1, []byte("a")), appendField(nil, 13, append(owner, 0x80))),
		"a metadata given twice":         envelope(metaV1, "PartialObjectMetadata", append(appendField(nil, 1, appendField(nil, 1, []byte("a"))), appendField(nil, 1, appendField(nil, 5, []byte("u")))...)),
		"a truncated object":             meta(appendField(nil, 1, []byte("a")))[:12],
		"a generation as bytes":          meta(appendField(nil, 1, []byte("a")), appendField(nil, 7, []byte("1"))),
		"a grace period as fixed64":      meta(appendField(nil, 1, []byte("a")), protowire.AppendFixed64(protowire.AppendTag(nil, 10, protowire.Fixed64Type), 30)),
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
	got, _, ok := decodeGraphFields(meta(appendField(nil, 1, []byte("a")), appendField(nil, 13, owner), appendField(nil, 13, owner)), nil)
	if !ok || len(got.(*metav1.PartialObjectMetadata).OwnerReferences) != 2 {
		t.Fatalf("an object with two references decoded as %#v (ok %v)", got, ok)
	}
}

// Fuzzed input: whatever the standard decoder reads, the decoder reads the
// same of the graph's fields, or leaves it to the standard decoder. (Where
// the standard decoder fails, the fast path may still decode: it checks
// the fields it skips for framing only.)
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
		switch w := want.(type) {
		case *metav1.PartialObjectMetadata:
			k := graphFieldsOf(w)
			want = &k
		case *metav1.PartialObjectMetadataList:
			for i := range w.Items {
				w.Items[i] = graphFieldsOf(&w.Items[i])
			}
		}
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

	c, err := newMetadataClient(&rest.Config{Host: server.URL}, server.Client(), valvesGVR)
	if err != nil {
		t.Fatal(err)
	}
	gotList, err := c.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := graphFieldsOf(objs[0]); gotList.ResourceVersion != "10" || len(gotList.Items) != 1 || !reflect.DeepEqual(gotList.Items[0], want) {
		t.Fatalf("listed %#v, want resourceVersion 10 and %#v", gotList, want)
	}
	w, err := c.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i, o := range objs {
		select {
		case ev := <-w.ResultChan():
			want := graphFieldsOf(o)
			if ev.Type != watch.Added || !reflect.DeepEqual(ev.Object, &want) {
				t.Fatalf("watch event %d: %s %#v, want ADDED %#v", i, ev.Type, ev.Object, &want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch event %d did not arrive within 10s", i)
		}
	}
}
