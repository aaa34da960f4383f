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

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	ogdiscovery "github.com/ownergc/ownergc/internal/discovery"
	"github.com/ownergc/ownergc/internal/fleet"
	"github.com/ownergc/ownergc/internal/monitor"
	"github.com/ownergc/ownergc/internal/policy"
)

// listStreaming is the members' list-streaming time, the allowance the
// engagement storm's target makes beside 1.5 times one member alone: how
// long the members' API servers take to stream the initial lists an engine
// starts with when every member is asked at once — a streaming list (the
// metadata of every object, then the bookmark that ends them) of every
// kind the engine monitors under the default policy (monitor.Desired),
// fleet.DefaultConcurrentLists at a time across
// all members, as the fleet's monitors share their list slots — sent by a
// plain client that does nothing with what it reads. On this machine the
// members' API servers and etcds share the collector's CPUs, and their
// answers take most of what they do in a storm; a platform's members run
// elsewhere. What each member serves is discovered before the clock
// starts.
//
// It returns the time, and the CPU seconds the control planes (every
// kube-apiserver and etcd) and this process used over it.
func listStreaming(members []*member) (took time.Duration, planes, client float64, _ error) {
	type list struct {
		mc  metadata.Interface
		gvr schema.GroupVersionResource
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lists []list
	for _, m := range members {
		cfg := rest.CopyConfig(m.cp.Config)
		cfg.QPS, cfg.Burst = -1, 0 // the bound is the slots', not a rate
		dc, err := ogdiscovery.NewClientForConfig(cfg)
		if err != nil {
			return 0, 0, 0, err
		}
		d := ogdiscovery.New(ogdiscovery.Options{Client: dc})
		d.RunOnce(ctx)
		s := d.Snapshot()
		if s == nil {
			return 0, 0, 0, fmt.Errorf("discovering what member %s serves failed", m.name)
		}
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return 0, 0, 0, err
		}
		for _, r := range monitor.Desired(s, policy.Defaults()) {
			lists = append(lists, list{mc: mc, gvr: r.GroupVersionResource})
		}
	}
	slots := make(chan struct{}, fleet.DefaultConcurrentLists)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	_, _, client0, err := procStat(os.Getpid())
	if err != nil {
		return 0, 0, 0, err
	}
	planes0, t0 := controlPlanesCPU(), time.Now()
	for _, l := range lists {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := streamList(ctx, l.mc.Resource(l.gvr)); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", l.gvr, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took, planes = time.Since(t0), controlPlanesCPU()-planes0
	_, _, client1, err := procStat(os.Getpid())
	if err != nil {
		return 0, 0, 0, err
	}
	return took, planes, client1 - client0, errors.Join(errs...)
}

// streamList reads a streaming list of r to the bookmark that ends its
// initial events.
func streamList(ctx context.Context, r metadata.ResourceInterface) error {
	yes := true
	w, err := r.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return fmt.Errorf("the streaming list failed: %v", ev.Object)
		case watch.Bookmark:
			if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				return nil
			}
		}
	}
	return errors.New("the streaming list ended before its initial events did")
}
