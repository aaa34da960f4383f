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

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// The monitors' decoder. The API server sends the monitors every object's
// whole metadata (labels, annotations, managedFields, timestamps) and the
// graph keeps a few fields of it; decoding the rest was most of a monitor's
// work while the initial lists stream in, and most of the garbage its
// start-up left to collect. graphFieldsSerializer decodes a
// PartialObjectMetadata, or a list of them, from the protobuf encoding
// keeping only the fields its field table (objectMetaFields) keeps:
//
//   - name, namespace, uid, resourceVersion, creationTimestamp,
//     deletionTimestamp, finalizers and ownerReferences (each reference,
//     and each timestamp, decoded by the standard decoder);
//   - of the annotations, those the graph or the reflector read
//     (keptAnnotations): ownergc's protection annotation, the expiry
//     annotations (ownergc.io/ttl, ownergc.io/expires) and the end of a
//     streaming list's initial events (metav1.InitialEventsAnnotationKey,
//     on a bookmark).
//
// Every other field of a monitor object reads empty: labels, generation,
// other annotations, managedFields. To read one, keep it in the table
// first: the tests check the table against ObjectMeta's protobuf encoding,
// and check that whatever the monitors read of an object is the same
// whether the standard decoder or this one decoded it (decode_test.go).
//
// For those fields the result is what the standard decoder gives (see
// decode_test.go, which compares the two on the standard encoder's output
// and on fuzzed input). Anything else is decoded by the standard serializer
// it wraps: other kinds (a watch's error Status), JSON, and any protobuf
// not written the way the API server writes it (a field repeated that
// should not be, a field of the wrong wire type, a malformed reference):
// the fast path only ever declines, never guesses. Fields it skips are
// checked for framing only, not decoded.

// metaV1 is the apiVersion of the metadata-only kinds.
const metaV1 = "meta.k8s.io/v1"

var (
	partialObjectMetadataGVK     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	partialObjectMetadataListGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
	// protobufPrefix starts every protobuf-encoded Kubernetes object.
	protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}
)

// keptAnnotations are the annotations the decoder keeps; it drops the
// others.
var keptAnnotations = []string{ownergcv1alpha1.ProtectedAnnotation, ownergcv1alpha1.TTLAnnotation, ownergcv1alpha1.ExpiresAnnotation,
	metav1.InitialEventsAnnotationKey}

// keptAnnotation reports whether the decoder keeps an annotation.
func keptAnnotation(key []byte) bool {
	for _, k := range keptAnnotations {
		if string(key) == k {
			return true
		}
	}
	return false
}

// graphFieldsSerializer is a runtime.Serializer that decodes the monitors'
// objects keeping only the graph's fields, and hands everything else to the
// serializer it wraps.
type graphFieldsSerializer struct{ runtime.Serializer }

// Decode decodes data keeping only the graph's fields when it is a
// protobuf-encoded PartialObjectMetadata or PartialObjectMetadataList, and
// with the wrapped serializer otherwise.
func (s graphFieldsSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if obj, gvk, ok := decodeGraphFields(data, into); ok {
		return obj, gvk, nil
	}
	return s.Serializer.Decode(data, defaults, into)
}

// graphFieldsNegotiator is a NegotiatedSerializer whose protobuf decoder
// is a graphFieldsSerializer.
type graphFieldsNegotiator struct {
	runtime.NegotiatedSerializer
	types []runtime.SerializerInfo
}

func newGraphFieldsNegotiator(ns runtime.NegotiatedSerializer) graphFieldsNegotiator {
	infos := append([]runtime.SerializerInfo(nil), ns.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeProtobuf {
			infos[i].Serializer = graphFieldsSerializer{infos[i].Serializer}
		}
	}
	return graphFieldsNegotiator{NegotiatedSerializer: ns, types: infos}
}

// SupportedMediaTypes are the wrapped serializer's, with the protobuf
// decoder replaced.
func (n graphFieldsNegotiator) SupportedMediaTypes() []runtime.SerializerInfo { return n.types }

// decodeGraphFields decodes a protobuf-encoded PartialObjectMetadata or
// PartialObjectMetadataList into (a new object, or into when it is of that
// type); ok is false when it declines (see the top of this file).
func decodeGraphFields(data []byte, into runtime.Object) (_ runtime.Object, _ *schema.GroupVersionKind, ok bool) {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return nil, nil, false
	}
	apiVersion, kind, raw, ok := readEnvelope(data[len(protobufPrefix):])
	if !ok || string(apiVersion) != metaV1 {
		return nil, nil, false
	}
	switch string(kind) {
	case partialObjectMetadataGVK.Kind:
		return decodeAs(raw, into, partialObjectMetadataGVK, readPartialObjectMetadata)
	case partialObjectMetadataListGVK.Kind:
		return decodeAs(raw, into, partialObjectMetadataListGVK, readPartialObjectMetadataList)
	}
	return nil, nil, false
}

// decodeAs reads raw with read into a new T, or into when it is a *T, of
// kind gvk; ok is false when into is of another type or read declines.
func decodeAs[T any, P interface {
	*T
	runtime.Object
}](raw []byte, into runtime.Object, gvk schema.GroupVersionKind, read func([]byte, P) bool) (_ runtime.Object, _ *schema.GroupVersionKind, ok bool) {
	out, same := into.(P)
	if into != nil && !same {
		return nil, nil, false
	}
	var v T
	if !read(raw, &v) {
		return nil, nil, false
	}
	if out == nil {
		out = &v
	} else {
		*out = v
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, &gvk, true
}

// fields walks the fields of a protobuf message, calling f with each
// field's number, wire type and value (a length-delimited field's contents;
// nil for the other wire types). It returns false if the message is
// malformed, holds a group, repeats a field that once lists (a bit per
// field number, below 32) or f returns false.
func fields(b []byte, once uint32, f func(num protowire.Number, typ protowire.Type, v []byte) bool) bool {
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num < 32 {
			bit := uint32(1) << num
			if once&bit != 0 && seen&bit != 0 {
				return false
			}
			seen |= bit
		}
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type, protowire.Fixed64Type:
			n = protowire.ConsumeFieldValue(num, typ, b)
		default:
			return false
		}
		if n < 0 || !f(num, typ, v) {
			return false
		}
		b = b[n:]
	}
	return true
}

func bit(nums ...protowire.Number) uint32 {
	var b uint32
	for _, n := range nums {
		b |= 1 << n
	}
	return b
}

// readEnvelope reads a runtime.Unknown: the type and the raw object. Its
// content type and encoding are ignored, as the standard decoder ignores
// them.
func readEnvelope(b []byte) (apiVersion, kind, raw []byte, ok bool) {
	ok = fields(b, bit(1, 2, 3, 4), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		switch num {
		case 1: // typeMeta
			return typ == protowire.BytesType && fields(v, bit(1, 2), func(num protowire.Number, typ protowire.Type, v []byte) bool {
				switch num {
				case 1:
					apiVersion = v
				case 2:
					kind = v
				default:
					return true
				}
				return typ == protowire.BytesType
			})
		case 2: // raw
			raw = v
		case 3, 4: // contentEncoding, contentType
		default:
			return true
		}
		return typ == protowire.BytesType
	})
	return apiVersion, kind, raw, ok
}

// readPartialObjectMetadataList reads a PartialObjectMetadataList: its
// list metadata (with the standard decoder) and its items.
func readPartialObjectMetadataList(b []byte, l *metav1.PartialObjectMetadataList) bool {
	return fields(b, bit(1), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		switch num {
		case 1: // metadata
			return typ == protowire.BytesType && l.ListMeta.Unmarshal(v) == nil
		case 2: // items
			if typ != protowire.BytesType {
				return false
			}
			l.Items = append(l.Items, metav1.PartialObjectMetadata{})
			return readPartialObjectMetadata(v, &l.Items[len(l.Items)-1])
		}
		return true
	})
}

// readPartialObjectMetadata reads a PartialObjectMetadata: its metadata.
func readPartialObjectMetadata(b []byte, o *metav1.PartialObjectMetadata) bool {
	return fields(b, bit(1), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != 1 {
			return true
		}
		return typ == protowire.BytesType && readObjectMeta(v, &o.ObjectMeta)
	})
}

// metaField is a field of ObjectMeta as the API server encodes it in
// protobuf.
type metaField struct {
	// name is its JSON name.
	name string
	// typ is its wire type; repeated, whether it may appear more than
	// once (a list, a map's entries).
	typ      protowire.Type
	repeated bool
	// keep reads one occurrence of the field into m, false when it is
	// malformed; nil for a field the decoder skips (checked for its wire
	// type and framing only): it reads empty in every monitor object.
	keep func(v []byte, m *metav1.ObjectMeta) bool
}

// objectMetaFields is the decoder's field table: every field of ObjectMeta,
// by protobuf field number, and the ones it keeps. Fields of other numbers
// are skipped, as the standard decoder skips them.
var objectMetaFields = [...]metaField{
	1:  {name: "name", typ: protowire.BytesType, keep: func(v []byte, m *metav1.ObjectMeta) bool { m.Name = string(v); return true }},
	2:  {name: "generateName", typ: protowire.BytesType},
	3:  {name: "namespace", typ: protowire.BytesType, keep: func(v []byte, m *metav1.ObjectMeta) bool { m.Namespace = string(v); return true }},
	4:  {name: "selfLink", typ: protowire.BytesType},
	5:  {name: "uid", typ: protowire.BytesType, keep: func(v []byte, m *metav1.ObjectMeta) bool { m.UID = types.UID(v); return true }},
	6:  {name: "resourceVersion", typ: protowire.BytesType, keep: func(v []byte, m *metav1.ObjectMeta) bool { m.ResourceVersion = string(v); return true }},
	7:  {name: "generation", typ: protowire.VarintType},
	8:  {name: "creationTimestamp", typ: protowire.BytesType, keep: readCreationTimestamp},
	9:  {name: "deletionTimestamp", typ: protowire.BytesType, keep: readDeletionTimestamp},
	10: {name: "deletionGracePeriodSeconds", typ: protowire.VarintType},
	11: {name: "labels", typ: protowire.BytesType, repeated: true},
	12: {name: "annotations", typ: protowire.BytesType, repeated: true, keep: readAnnotation},
	13: {name: "ownerReferences", typ: protowire.BytesType, repeated: true, keep: readOwnerReference},
	14: {name: "finalizers", typ: protowire.BytesType, repeated: true, keep: func(v []byte, m *metav1.ObjectMeta) bool { m.Finalizers = append(m.Finalizers, string(v)); return true }},
	17: {name: "managedFields", typ: protowire.BytesType, repeated: true},
}

// singularMetaFields are the fields of the table that appear at most once.
var singularMetaFields = func() uint32 {
	var b uint32
	for num, f := range objectMetaFields {
		if f.name != "" && !f.repeated {
			b |= 1 << num
		}
	}
	return b
}()

// readObjectMeta reads the fields of an ObjectMeta its table keeps and
// checks the wire type of the others.
func readObjectMeta(b []byte, m *metav1.ObjectMeta) bool {
	return fields(b, singularMetaFields, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num >= protowire.Number(len(objectMetaFields)) || objectMetaFields[num].name == "" {
			return true
		}
		f := &objectMetaFields[num]
		return f.typ == typ && (f.keep == nil || f.keep(v, m))
	})
}

// readDeletionTimestamp reads the deletion timestamp with the standard
// decoder.
func readDeletionTimestamp(v []byte, m *metav1.ObjectMeta) bool {
	m.DeletionTimestamp = &metav1.Time{}
	return m.DeletionTimestamp.Unmarshal(v) == nil
}

// readCreationTimestamp reads the creation timestamp with the standard
// decoder.
func readCreationTimestamp(v []byte, m *metav1.ObjectMeta) bool {
	return m.CreationTimestamp.Unmarshal(v) == nil
}

// readOwnerReference reads one owner reference with the standard decoder.
func readOwnerReference(v []byte, m *metav1.ObjectMeta) bool {
	m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{})
	return m.OwnerReferences[len(m.OwnerReferences)-1].Unmarshal(v) == nil
}

// readAnnotation reads one entry of the annotations map and keeps it if
// it is one of keptAnnotations.
func readAnnotation(b []byte, m *metav1.ObjectMeta) bool {
	var key, value []byte
	ok := fields(b, bit(1, 2), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		switch num {
		case 1:
			key = v
		case 2:
			value = v
		default:
			return false
		}
		return typ == protowire.BytesType
	})
	if !ok {
		return false
	}
	if keptAnnotation(key) {
		if m.Annotations == nil {
			m.Annotations = make(map[string]string, 1)
		}
		m.Annotations[string(key)] = string(value)
	}
	return true
}
