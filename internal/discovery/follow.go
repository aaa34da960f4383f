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
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// change is what happened to an object a follower follows.
type change int

const (
	added change = iota
	modified
	deleted
	// listed: an object of the follower's first list (there since before
	// it started, as far as it knows).
	listed
)

// follower lists (by a streaming list where the API server serves them)
// and then watches one resource for the triggers, from one goroutine
// (run): a client-go informer is seven goroutines (reflector,
// resync timer, decoder, FIFO, processor, listener, the HTTP/2 stream),
// and a fleet runs the triggers' two for every member. It keeps, by name,
// each object's resourceVersion and what value makes of it, and tells on
// of every object its first list holds (listed), then of every addition,
// change and deletion it observes; a relist tells it of what changed while
// the watch was down. A watch the API server ends is opened again from the
// last resourceVersion; an expired one, or a failed list or watch, lists
// again, after a backoff (800 ms doubling to 30 s) but for an expired
// resourceVersion.
//
// Concurrency: run's goroutine writes objects and synced under mu; get and
// synced read them from any goroutine. on is called without mu held.
type follower struct {
	list  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// value is what is kept of an object (nil: nothing but its
	// resourceVersion).
	value func(runtime.Object) any
	// on is told of each change, with when the object last changed as far
	// as its metadata says (lastChanged; zero for a deletion a relist
	// found).
	on func(c change, name string, changed time.Time)
	// onSynced, when set, is called once, after on was told of the first
	// list's objects (none, for an empty list).
	onSynced func()
	// sleep waits d or until ctx ends (false); tests replace it.
	sleep func(ctx context.Context, d time.Duration) bool
	// noStreaming: the API server refused a streaming list; run's
	// goroutine lists by LIST from then on.
	noStreaming bool

	mu       sync.Mutex
	objects  map[string]followed
	isSynced bool
}

type followed struct {
	resourceVersion string
	value           any
}

// followerWatchTimeout is the shortest time a follower's watch asks the API
// server to end it after (random up to twice that), as a reflector's.
const followerWatchTimeout = 5 * time.Minute

func newFollower(list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	value func(runtime.Object) any, on func(change, string, time.Time)) *follower {
	return &follower{list: list, watch: watchFn, value: value, on: on, sleep: sleepFor, objects: make(map[string]followed)}
}

func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// synced reports whether the first list is in.
func (f *follower) synced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.isSynced
}

// values returns what is kept of every object.
func (f *follower) values() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]any, 0, len(f.objects))
	for _, o := range f.objects {
		out = append(out, o.value)
	}
	return out
}

// run follows the resource until ctx ends.
func (f *follower) run(ctx context.Context) {
	delay := wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Jitter: 1, Cap: 30 * time.Second}.
		DelayWithReset(clock.RealClock{}, 2*time.Minute)
	rv := ""
	// streaming is the streaming list's watch, read on by the next follow.
	var streaming watch.Interface
	defer func() {
		if streaming != nil {
			streaming.Stop()
		}
	}()
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, streaming, err = f.relist(ctx); err != nil {
				if !f.sleep(ctx, delay()) {
					return
				}
				continue
			}
		}
		start := time.Now()
		next, err := f.follow(ctx, rv, streaming)
		streaming = nil
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && next == rv && time.Since(start) < time.Second:
			// Ended at once with nothing read: watch again after a backoff.
			if !f.sleep(ctx, delay()) {
				return
			}
		case err == nil:
			rv = next
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			rv = ""
		default:
			rv = ""
			if !f.sleep(ctx, delay()) {
				return
			}
		}
	}
}

// relist lists the resource and tells on of what changed since the last
// list or event; it returns the list's resourceVersion, and the streaming
// list's watch to read on (nil after a LIST). It lists by a streaming list
// (a watch sending every object, then a bookmark) where the API server
// serves them, as client-go's informers do, and by LIST where it refuses
// one.
func (f *follower) relist(ctx context.Context) (string, watch.Interface, error) {
	if !f.noStreaming {
		items, rv, w, err := f.streamingList(ctx)
		if err == nil {
			f.replace(items)
			return rv, w, nil
		}
		if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) && !apierrors.IsMethodNotSupported(err) {
			return "", nil, err
		}
		f.noStreaming = true
	}
	out, err := f.list(ctx, metav1.ListOptions{})
	if err != nil {
		return "", nil, err
	}
	items, err := meta.ExtractList(out)
	if err != nil {
		return "", nil, err
	}
	lm, err := meta.ListAccessor(out)
	if err != nil {
		return "", nil, err
	}
	f.replace(items)
	return lm.GetResourceVersion(), nil, nil
}

// streamingList lists the resource through a watch that sends every object
// as an initial event and then a bookmark that marks their end. It returns
// that watch open, to be read on as the follower's watch (as a reflector
// reads it): one request, not two.
func (f *follower) streamingList(ctx context.Context) (items []runtime.Object, rv string, _ watch.Interface, err error) {
	yes := true
	w, err := f.openWatch(ctx, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		return nil, "", nil, err
	}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	for {
		ev, open, err := receive(ctx, w)
		if err != nil {
			return nil, "", nil, err
		}
		switch {
		case !open:
			return nil, "", nil, errors.New("the streaming list ended before its initial events did")
		case ev.Type == watch.Error:
			return nil, "", nil, apierrors.FromObject(ev.Object)
		case ev.Type == watch.Added || ev.Type == watch.Modified:
			items = append(items, ev.Object)
		case ev.Type == watch.Bookmark:
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				return nil, "", nil, err
			}
			if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				return items, m.GetResourceVersion(), w, nil
			}
		default:
			return nil, "", nil, fmt.Errorf("a streaming list sent a %s event before its initial events ended", ev.Type)
		}
	}
}

// replace makes items the objects followed, telling on of what changed.
func (f *follower) replace(items []runtime.Object) {
	type told struct {
		c       change
		name    string
		changed time.Time
	}
	var changes []told
	f.mu.Lock()
	first := !f.isSynced
	inList := make(map[string]followed, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			continue
		}
		o := followed{resourceVersion: m.GetResourceVersion()}
		if f.value != nil {
			o.value = f.value(item)
		}
		inList[m.GetName()] = o
		changed := lastChanged(m)
		switch before, ok := f.objects[m.GetName()]; {
		case !f.isSynced:
			changes = append(changes, told{listed, m.GetName(), changed})
		case !ok:
			changes = append(changes, told{added, m.GetName(), changed})
		case before.resourceVersion != o.resourceVersion:
			changes = append(changes, told{modified, m.GetName(), changed})
		}
	}
	for name := range f.objects {
		if _, ok := inList[name]; !ok {
			changes = append(changes, told{deleted, name, time.Time{}})
		}
	}
	f.objects, f.isSynced = inList, true
	f.mu.Unlock()
	for _, c := range changes {
		f.on(c.c, c.name, c.changed)
	}
	if first && f.onSynced != nil {
		f.onSynced()
	}
}

// lastChanged is when m last changed as far as its metadata says: the
// latest of its creation and of the times its managed fields record (each
// manager's last write, status updates included).
func lastChanged(m metav1.Object) time.Time {
	t := m.GetCreationTimestamp().Time
	for _, f := range m.GetManagedFields() {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// openWatch opens a watch with opts, with bookmarks, asking the API server
// to end it after a random time between followerWatchTimeout and twice
// that, as a reflector does.
func (f *follower) openWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	timeout := int64(followerWatchTimeout.Seconds() * (1 + rand.Float64()))
	opts.AllowWatchBookmarks, opts.TimeoutSeconds = true, &timeout
	return f.watch(ctx, opts)
}

// receive is w's next event; open is false once w has ended, err set once
// ctx has.
func receive(ctx context.Context, w watch.Interface) (ev watch.Event, open bool, err error) {
	select {
	case <-ctx.Done():
		return ev, false, ctx.Err()
	case ev, open = <-w.ResultChan():
		return ev, open, nil
	}
}

// follow watches from rv until the watch ends, applying each event; it
// returns the last resourceVersion observed, or the error that ended it.
// It reads on streaming, the streaming list's watch, when not nil.
func (f *follower) follow(ctx context.Context, rv string, streaming watch.Interface) (string, error) {
	w := streaming
	if w == nil {
		var err error
		if w, err = f.openWatch(ctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
			return rv, err
		}
	}
	defer w.Stop()
	for {
		ev, open, err := receive(ctx, w)
		if err != nil {
			return rv, err
		}
		if !open {
			return rv, nil
		}
		if ev.Type == watch.Error {
			return rv, apierrors.FromObject(ev.Object)
		}
		m, err := meta.Accessor(ev.Object)
		if err != nil {
			return rv, err
		}
		if m.GetResourceVersion() != "" {
			rv = m.GetResourceVersion()
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		name := m.GetName()
		f.mu.Lock()
		c := modified
		if ev.Type == watch.Deleted {
			c = deleted
			delete(f.objects, name)
		} else {
			if _, ok := f.objects[name]; !ok {
				c = added
			}
			o := followed{resourceVersion: m.GetResourceVersion()}
			if f.value != nil {
				o.value = f.value(ev.Object)
			}
			f.objects[name] = o
		}
		f.mu.Unlock()
		f.on(c, name, lastChanged(m))
	}
}
