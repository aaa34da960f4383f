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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// leaseName is the manager's leader election Lease: its holder is the
// replica that runs the collector's queues.
const leaseName = "garbage-collector.ownergc.io"

// managerPod picks the manager pod to ask: the leader when the Lease can be
// read (a standby has the graph but not the queues), otherwise any ready
// pod of the Deployment.
func (c *clients) managerPod(ctx context.Context, namespace, deployment string) (string, error) {
	d, err := c.kube.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
	switch {
	case isNotFound(err):
		return "", fmt.Errorf("deployment %s/%s not found: is ownergc installed there? (name it with --manager-namespace and --manager-deployment, or give --server-url)", namespace, deployment)
	case isForbidden(err):
		return "", fmt.Errorf("you may not get deployment %s/%s to find the manager's pod (give --server-url, or ask for get on deployments, list on pods and create on pods/portforward there)", namespace, deployment)
	case err != nil:
		return "", fmt.Errorf("reading deployment %s/%s: %w", namespace, deployment, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("deployment %s/%s: %w", namespace, deployment, err)
	}
	pods, err := c.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", fmt.Errorf("listing the pods of deployment %s/%s: %w", namespace, deployment, err)
	}
	leader := ""
	if l, err := c.kube.CoordinationV1().Leases(namespace).Get(ctx, leaseName, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
		leader, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_") // controller-runtime's identity: <hostname>_<uuid>
	}
	var ready []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
			if p.Name == leader {
				return p.Name, nil
			}
			ready = append(ready, p.Name)
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("deployment %s/%s has no ready pod (%d pods)", namespace, deployment, len(pods.Items))
	}
	return ready[0], nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

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
