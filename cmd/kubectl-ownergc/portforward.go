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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// portForward forwards a free local port on 127.0.0.1 to port of the pod,
// through the API server over SPDY, as kubectl port-forward does. stop
// ends it.
func (c *clients) portForward(ctx context.Context, namespace, pod string, port int) (local int, stop func(), err error) {
	rt, upgrader, err := spdy.RoundTripperFor(c.config)
	if err != nil {
		return 0, nil, err
	}
	u := c.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	pctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	errOut := &lockedBuffer{}
	pf, err := portforward.NewOnAddressesWithContext(pctx, dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, ready, io.Discard, errOut)
	if err != nil {
		cancel()
		return 0, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	stop = func() {
		cancel()
		select {
		case err := <-done:
			_ = err // stopping: the forwarding ends with an error when cancelled
		case <-time.After(5 * time.Second):
		}
	}
	select {
	case <-ready:
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("the port-forward ended at once")
		}
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return 0, nil, err
	case <-ctx.Done():
		stop()
		return 0, nil, ctx.Err()
	case <-time.After(30 * time.Second):
		stop()
		return 0, nil, errors.New("the port-forward was not ready after 30s")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return 0, nil, fmt.Errorf("the port-forward has no local port: %v", err)
	}
	return int(ports[0].Local), stop, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
