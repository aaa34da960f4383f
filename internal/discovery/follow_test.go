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
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

func followedObject(name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

func followedList(rv string, objs ...*metav1.PartialObjectMetadata) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, o := range objs {
		l.Items = append(l.Items, *o)
	}
	return l
}

// A follower tells of every addition, change and deletion: from its first
// list, from the watch that starts at the list's resourceVersion, and from
// a relist after that watch expired (what changed while it was down). A
// watch the API server ends is opened again from the last resourceVersion.
func TestAFollowerTellsOfEveryChangeItObserves(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// a was created, then its status written later: it last changed then.
	aChanged := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := followedObject("a", "1")
	a.CreationTimestamp = metav1.NewTime(aChanged.Add(-time.Hour))
	a.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Time: ptr.To(metav1.NewTime(aChanged.Add(-time.Hour)))},
		{Manager: "kube-apiserver", Subresource: "status", Time: ptr.To(metav1.NewTime(aChanged))},
		{Manager: "no-time"},
	}
	a11 := a.DeepCopy()
	a11.ResourceVersion = "11"
	lists := []runtime.Object{
		followedList("10", a, followedObject("b", "2")),
		followedList("30", followedObject("c", "25"), followedObject("d", "26")),
	}
	expired := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	watches := [][]watch.Event{
		{{Type: watch.Modified, Object: a11}},
		{{Type: watch.Deleted, Object: followedObject("a", "12")}, {Type: watch.Error, Object: expired}},
		{{Type: watch.Modified, Object: followedObject("d", "31")}},
	}
	var from []string
	var told []string
	f := newFollower(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			if len(lists) == 0 {
				cancel()
				return nil, ctx.Err()
			}
			l := lists[0]
			lists = lists[1:]
			return l, nil
		},
		func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			from = append(from, o.ResourceVersion)
			if len(watches) == 0 {
				cancel()
				return nil, ctx.Err()
			}
			w := watch.NewFakeWithChanSize(len(watches[0]), false)
			for _, ev := range watches[0] {
				w.Action(ev.Type, ev.Object)
			}
			watches = watches[1:]
			w.Stop()
			return w, nil
		},
		nil,
		func(c change, name string, changed time.Time) {
			told = append(told, fmt.Sprintf("%s %s", [...]string{"added", "modified", "deleted", "listed"}[c], name))
			if name == "a" && c != deleted && !changed.Equal(aChanged) {
				t.Errorf("told of %s last changed %v, want %v", name, changed, aChanged)
			}
		})
	f.sleep = func(context.Context, time.Duration) bool {
		t.Error("a follower backed off without a failure")
		return false
	}
	f.onSynced = func() { told = append(told, "synced") }
	f.noStreaming = true // the lists above are LISTs
	f.run(ctx)
	// The first list's objects are listed, in the list's order, and then
	// it is synced, once; a relist's additions come before its deletions.
	want := "listed a,listed b,synced,modified a,deleted a,added c,added d,deleted b,modified d"
	if got := strings.Join(told, ","); got != want {
		t.Errorf("told %s\nwant %s", got, want)
	}
	if want := "10,11,30"; strings.Join(from, ",") != want+",31" {
		t.Errorf("watched from %v, want %s and then 31", from, want)
	}
	if !f.synced() {
		t.Error("not synced after its lists")
	}
}

// Where the API server serves streaming lists, a follower lists through
// one: the objects sent before the bookmark that ends the initial events;
// that watch is read on after it, and once it ends a plain watch is opened
// from the last resourceVersion. One refused as a bad request makes it list
// by LIST.
func TestAFollowerListsByAStreamingListWhereServed(t *testing.T) {
	end := followedObject("", "10")
	end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	for _, served := range []bool{true, false} {
		t.Run(fmt.Sprintf("served=%v", served), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls []string
			var told []string
			f := newFollower(
				func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					calls = append(calls, "list")
					return followedList("10", followedObject("a", "1")), nil
				},
				func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
					if o.SendInitialEvents != nil && *o.SendInitialEvents {
						calls = append(calls, "streaming list")
						if !served {
							return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden")
						}
						w := watch.NewFakeWithChanSize(3, false)
						w.Add(followedObject("a", "1"))
						w.Action(watch.Bookmark, end)
						w.Delete(followedObject("a", "11")) // after the end: read on, as the watch
						w.Stop()                            // the API server ends it
						return w, nil
					}
					calls = append(calls, "watch from "+o.ResourceVersion)
					cancel()
					return nil, ctx.Err()
				},
				nil,
				func(c change, name string, _ time.Time) { told = append(told, fmt.Sprintf("%d %s", c, name)) })
			f.sleep = func(context.Context, time.Duration) bool { return false }
			f.run(ctx)
			want, wantTold := "streaming list,watch from 11", fmt.Sprintf("%d a,%d a", listed, deleted)
			if !served {
				want, wantTold = "streaming list,list,watch from 10", fmt.Sprintf("%d a", listed)
			}
			if got := strings.Join(calls, ","); got != want {
				t.Errorf("calls %s, want %s", got, want)
			}
			if got := strings.Join(told, ","); got != wantTold || !f.synced() {
				t.Errorf("told %s (synced %v), want %s and synced", got, f.synced(), wantTold)
			}
		})
	}
}
