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

package fleet

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
)

// Event reasons recorded on kubeconfig Secrets.
const (
	// EventKubeconfigRefused (Warning): the Secret's kubeconfig asks for
	// what the manager refuses (an exec plugin, a file, a proxy, an
	// unverified server); no cluster is engaged for it.
	EventKubeconfigRefused = "KubeconfigRefused"
	// EventSecretInvalid (Warning): the Secret holds no usable kubeconfig;
	// no cluster is engaged for it.
	EventSecretInvalid = "SecretInvalid"
	// EventKubeconfigAccepted (Normal): a Secret refused before now
	// engages its cluster.
	EventKubeconfigAccepted = "KubeconfigAccepted"
)

// gate stands between the kubeconfig Secrets and multicluster-runtime's
// kubeconfig provider, which turns any Secret it reads into a REST
// configuration (running exec plugins and reading files on the way) and
// engages it. The provider reads Secrets only through the client of the
// manager it is set up with: the gate hands it a manager whose client
// answers NotFound for a Secret that may not engage a cluster — one without
// the label, or whose kubeconfig the policy refuses — so the provider never
// builds anything from it, and drops the cluster it engaged from an earlier
// version of the Secret. The gate's own controller keeps the verdict of
// every Secret for the ClusterGCStatus controller, records an event on a
// refused Secret, and asks the provider to look again at a Secret whose
// label was removed (its controller sees only labelled Secrets).
//
// Concurrency: mu guards verdicts; the rest is set before the manager starts.
type gate struct {
	policy            KubeconfigPolicy
	namespace         string
	label             string
	key               string
	client            client.Client
	reconcileProvider func(context.Context, ctrl.Request) (ctrl.Result, error)
	providerHas       func(context.Context, string) bool
	recorder          recorder.EventRecorder
	changed           func(name string)

	mu       sync.Mutex
	verdicts map[string]error
}

// verdict returns why Secret s engages no cluster, nil when it may.
func (g *gate) verdict(s *corev1.Secret) error {
	data := s.Data[g.key]
	if len(data) == 0 {
		return &KubeconfigError{Field: "data." + g.key, Reason: "the Secret holds no kubeconfig under this key"}
	}
	return g.policy.Check(data)
}

// member reports whether s is a kubeconfig Secret of the fleet: in its
// namespace, labelled.
func (g *gate) member(s *corev1.Secret) bool {
	return s.Namespace == g.namespace && s.Labels[g.label] == "true"
}

// Refusal returns why the Secret named cluster engages no cluster, nil when
// it does or is no kubeconfig Secret.
func (g *gate) Refusal(cluster string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.verdicts[cluster]
}

// setVerdict records the verdict of a Secret and reports whether it
// changed.
func (g *gate) setVerdict(name string, v error) (changed bool, was error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	was = g.verdicts[name]
	switch {
	case v == nil && was == nil:
		return false, nil
	case v == nil:
		delete(g.verdicts, name)
	case was != nil && was.Error() == v.Error():
		return false, was
	default:
		g.verdicts[name] = v
	}
	return true, was
}

// Reconcile keeps one Secret's verdict.
func (g *gate) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s corev1.Secret
	err := g.client.Get(ctx, req.NamespacedName, &s)
	switch {
	case apierrors.IsNotFound(err):
		if changed, _ := g.setVerdict(req.Name, nil); changed {
			g.changed(req.Name)
		}
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", req.NamespacedName, err)
	}
	if !g.member(&s) {
		if changed, _ := g.setVerdict(req.Name, nil); changed {
			g.changed(req.Name)
		}
		// The provider's controller does not see a Secret that lost its
		// label; asked again, it reads NotFound and drops the cluster.
		if g.providerHas(ctx, req.Name) {
			ctrl.LoggerFrom(ctx).Info("The Secret lost its label: disengaging its cluster", "label", g.label)
			if _, err := g.reconcileProvider(ctx, req); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	v := g.verdict(&s)
	changed, was := g.setVerdict(req.Name, v)
	if !changed {
		return ctrl.Result{}, nil
	}
	switch ke := AsKubeconfigError(v); {
	case ke != nil && ke.Refused:
		ctrl.LoggerFrom(ctx).Info("Refusing a kubeconfig Secret", "secret", req.NamespacedName, "why", v.Error())
		g.recorder.Eventf(&s, nil, corev1.EventTypeWarning, EventKubeconfigRefused, "Engage",
			"No cluster is engaged for this Secret: its kubeconfig's %s", v.Error())
	case v != nil:
		ctrl.LoggerFrom(ctx).Info("A kubeconfig Secret cannot engage a cluster", "secret", req.NamespacedName, "why", v.Error())
		g.recorder.Eventf(&s, nil, corev1.EventTypeWarning, EventSecretInvalid, "Engage",
			"No cluster is engaged for this Secret: %s", v.Error())
	case was != nil:
		g.recorder.Eventf(&s, nil, corev1.EventTypeNormal, EventKubeconfigAccepted, "Engage",
			"The Secret's kubeconfig is accepted now: its cluster is engaged")
	}
	g.changed(req.Name)
	return ctrl.Result{}, nil
}

// setup registers the gate's controller on the host manager: every Secret
// of the namespace, labelled or not (a label removed is a change too).
func (g *gate) setup(mgr manager.Manager) error {
	g.client = mgr.GetClient()
	no := false
	return ctrl.NewControllerManagedBy(mgr).
		Named("kubeconfig-gate").
		For(&corev1.Secret{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == g.namespace
		}))).
		WithOptions(controller.Options{NeedLeaderElection: &no}).
		Complete(g)
}

// guardedManager is the multicluster manager the provider is set up with:
// everything is the real manager's but the local manager's client.
type guardedManager struct {
	mcmanager.Manager
	local manager.Manager
}

func (m guardedManager) GetLocalManager() manager.Manager { return m.local }

// guardedLocal is the host manager with the gate's client.
type guardedLocal struct {
	manager.Manager
	client client.Client
}

func (m guardedLocal) GetClient() client.Client { return m.client }

// guardedClient answers NotFound for the Secrets that may not engage a
// cluster; everything else is the host client's.
type guardedClient struct {
	client.Client
	g *gate
}

func (c guardedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil
	}
	if !c.g.member(s) || c.g.verdict(s) != nil {
		*s = corev1.Secret{}
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return nil
}
