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

package decoder_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

var update = flag.Bool("update-corpus", false,
	"write the captured answers into internal/monitor/testdata/fuzz, replacing the ones captured before")

// corpusDir is the fuzz corpus of the monitors' decoder, relative to the
// repository's root; the captured answers are its files named apiserver-*.
const corpusDir = "internal/monitor/testdata/fuzz/FuzzTheDecoderAgreesWithTheStandardDecoder"

// The Accept headers of the monitors' requests (internal/monitor/client.go):
// metadata only, in protobuf.
const (
	acceptObjectMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	acceptListMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// answer is one answer of the API server as the monitors' decoder gets it:
// a list's body, or the object of one watch event.
type answer struct {
	name string
	data []byte
}

// Captures, for a built-in kind (ConfigMaps) and a custom resource, what
// kube-apiserver answers the monitors: a list, and the events of a streaming
// list's watch (the initial events, the bookmark that ends them, a change, a
// deletion held by a finalizer, the deletion), of objects with every field
// the decoder keeps or skips (owner references, finalizers, labels,
// annotations, ownergc's protection and expiry annotations). It checks that the answers
// hold all that, and with -update-corpus writes them as the decoder's fuzz
// corpus:
//
//	KUBEBUILDER_ASSETS=... go test ./test/integration/decoder -run TestCaptureTheAPIServersAnswers -update-corpus
//
// The decoder's tests read them back (internal/monitor: its fuzz test, and
// TestTheDecoderTakesTheAPIServersAnswers).
func TestCaptureTheAPIServersAnswers(t *testing.T) {
	ns := framework.CreateNamespace(t, cp.Client)
	crd := framework.CRD{Group: framework.UniqueGroup("corpus"), Kind: "Valve", Plural: "valves", Scope: apiextensionsv1.NamespaceScoped}
	valves, _ := cp.CreateCRD(t, crd)
	var answers []answer
	for _, k := range []framework.Kind{framework.ConfigMaps, valves} {
		answers = append(answers, capture(t, k, ns)...)
	}
	if !*update {
		t.Logf("captured %d answers; -update-corpus writes them to %s", len(answers), corpusDir)
		return
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, corpusDir)
	old, err := filepath.Glob(filepath.Join(dir, "apiserver-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range answers {
		// The format of go test's fuzz corpus files.
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", a.data)
		if err := os.WriteFile(filepath.Join(dir, a.name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d answers to %s", len(answers), dir)
}

// capture creates objects of k in ns and returns the answers to a list and
// to a streaming list's watch while they change.
func capture(t *testing.T, k framework.Kind, ns string) []answer {
	t.Helper()
	prefix := "apiserver-" + k.GVR.Resource
	owner := cp.Create(t, k, ns, "owner", framework.WithLabels(map[string]string{"app": "corpus"}))
	cp.Create(t, k, ns, "dependent", framework.OwnedBy(owner.Ref(true)), framework.WithFinalizers(framework.HoldFinalizer),
		framework.WithLabels(map[string]string{"app": "corpus", "tier": "back"}),
		func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{ownergcv1alpha1.ProtectedAnnotation: "true", "note": "kept out of the graph"})
		})
	held := cp.Create(t, k, ns, "held", framework.OwnedBy(owner.Ref(false)), framework.WithFinalizers(framework.HoldFinalizer),
		func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{ownergcv1alpha1.TTLAnnotation: "7d", ownergcv1alpha1.ExpiresAnnotation: "2030-07-01"})
		})

	c := client(t)
	path := collection(k.GVR, ns)
	list, err := c.Get().AbsPath(path...).SetHeader("Accept", acceptListMetadata).DoRaw(framework.Context(t))
	if err != nil {
		t.Fatalf("listing %s: %v", k.GVR, err)
	}
	answers := []answer{{name: prefix + "-list", data: list}}
	if got := decode(t, list); len(got.(*metav1.PartialObjectMetadataList).Items) != 3 {
		t.Fatalf("the list of %s holds %d objects, want 3", k.GVR, len(got.(*metav1.PartialObjectMetadataList).Items))
	}

	ctx, cancel := context.WithTimeout(framework.Context(t), time.Minute)
	defer cancel()
	stream, err := c.Get().AbsPath(path...).SetHeader("Accept", acceptObjectMetadata).
		Param("watch", "true").Param("allowWatchBookmarks", "true").Param("sendInitialEvents", "true").
		Param("resourceVersionMatch", string(metav1.ResourceVersionMatchNotOlderThan)).Stream(ctx)
	if err != nil {
		t.Fatalf("watching %s: %v", k.GVR, err)
	}
	defer func() { _ = stream.Close() }()
	events := frames(stream)
	// next takes the next event, which must be of type want (a periodic
	// bookmark may come at any time: it is passed over).
	next := func(want watch.EventType) {
		t.Helper()
		var ev metav1.WatchEvent
		for ev.Type == "" || (want != watch.Bookmark && watch.EventType(ev.Type) == watch.Bookmark) {
			var ok bool
			select {
			case ev, ok = <-events:
				if !ok {
					t.Fatalf("the watch of %s ended", k.GVR)
				}
			case <-ctx.Done():
				t.Fatalf("no %s event of %s within a minute", want, k.GVR)
			}
		}
		if watch.EventType(ev.Type) != want {
			t.Fatalf("the watch of %s sent %s, want %s", k.GVR, ev.Type, want)
		}
		obj := decode(t, ev.Object.Raw).(*metav1.PartialObjectMetadata)
		if want == watch.Bookmark && obj.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("the bookmark of %s does not end the initial events: %v", k.GVR, obj.Annotations)
		}
		answers = append(answers, answer{name: fmt.Sprintf("%s-watch-%d-%s", prefix, len(answers), strings.ToLower(ev.Type)), data: ev.Object.Raw})
	}
	for range 3 {
		next(watch.Added)
	}
	next(watch.Bookmark)
	cp.Update(t, owner, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "corpus", "changed": "yes"}) })
	next(watch.Modified)
	cp.Delete(t, held)
	next(watch.Modified) // its deletion timestamp
	cp.RemoveFinalizer(t, held, framework.HoldFinalizer)
	next(watch.Deleted)

	// What the corpus is for: every field the decoder reads, and some it
	// skips, as the API server sends them.
	var all []*metav1.PartialObjectMetadata
	for _, a := range answers[1:] {
		all = append(all, decode(t, a.data).(*metav1.PartialObjectMetadata))
	}
	for what, has := range map[string]func(o *metav1.PartialObjectMetadata) bool{
		"an owner reference":   func(o *metav1.PartialObjectMetadata) bool { return len(o.OwnerReferences) > 0 },
		"a finalizer":          func(o *metav1.PartialObjectMetadata) bool { return len(o.Finalizers) > 0 },
		"a deletion timestamp": func(o *metav1.PartialObjectMetadata) bool { return o.DeletionTimestamp != nil },
		"the protection annotation": func(o *metav1.PartialObjectMetadata) bool {
			return o.Annotations[ownergcv1alpha1.ProtectedAnnotation] == "true"
		},
		"the expiry annotations": func(o *metav1.PartialObjectMetadata) bool {
			return o.Annotations[ownergcv1alpha1.TTLAnnotation] != "" && o.Annotations[ownergcv1alpha1.ExpiresAnnotation] != ""
		},
		"a creation timestamp": func(o *metav1.PartialObjectMetadata) bool { return !o.CreationTimestamp.IsZero() },
		"labels":               func(o *metav1.PartialObjectMetadata) bool { return len(o.Labels) > 0 },
		"managed fields":       func(o *metav1.PartialObjectMetadata) bool { return len(o.ManagedFields) > 0 },
	} {
		if !slices.ContainsFunc(all, has) {
			t.Errorf("no watch event of %s carries %s", k.GVR, what)
		}
	}
	return answers
}

// client is a REST client of the control plane that asks for answers as
// they are sent: no compression.
func client(t *testing.T) *rest.RESTClient {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.DisableCompression = true
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/"
	cfg.NegotiatedSerializer = metainternalversionscheme.Codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func collection(gvr schema.GroupVersionResource, ns string) []string {
	if gvr.Group == "" {
		return []string{"api", gvr.Version, "namespaces", ns, gvr.Resource}
	}
	return []string{"apis", gvr.Group, gvr.Version, "namespaces", ns, gvr.Resource}
}

// frames reads the events of a protobuf watch stream: each a 4-byte length
// and a WatchEvent.
func frames(r io.Reader) <-chan metav1.WatchEvent {
	out := make(chan metav1.WatchEvent)
	go func() {
		defer close(out)
		br := bufio.NewReader(r)
		for {
			var size [4]byte
			if _, err := io.ReadFull(br, size[:]); err != nil {
				return
			}
			frame := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(br, frame); err != nil {
				return
			}
			var ev metav1.WatchEvent
			if err := ev.Unmarshal(frame); err != nil {
				return
			}
			out <- ev
		}
	}()
	return out
}

// decode decodes an answer with the standard decoder of object metadata.
func decode(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("k8s\x00")) {
		t.Fatalf("the answer is not in protobuf: %q", data[:min(len(data), 64)])
	}
	obj, _, err := metainternalversionscheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decoding an answer: %v", err)
	}
	return obj
}
