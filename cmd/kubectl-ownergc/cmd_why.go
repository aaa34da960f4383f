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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ownergc/ownergc/internal/explain"
)

func newWhyCommand(o *options) *cobra.Command {
	var mf managerFlags
	var output string
	cmd := &cobra.Command{
		Use:   "why KIND/NAME",
		Short: "Explain why an object is still there, or what the garbage collector will do with it",
		Long: `Explain an object from the garbage collector's point of view: its state in
the collector's graph, its deletion, each owner with its status (Solid,
Dangling, WaitingForDependents, Unverifiable) and why, its dependents and why
each remains, the collector's queue, and the decision in words.

The explanation comes from the ownergc manager's /explain endpoint, which
answers with your own permissions: only if you may get the object, naming only
the owners and dependents you may get. The plugin reaches the manager through a
port-forward to its pod, or at --server-url (https:// only).

It sends your kubeconfig's bearer token (or --token, --token-file) to the
manager, and only to it: the manager accepts bearer tokens, not client
certificates. Impersonation (--as) applies to the API reads only: the manager
answers for the identity of the token. For the port-forward, the plugin reads
ownergc's ClusterRoleBinding (ownergc-manager-rolebinding, which binds the
manager's ClusterRole: see --manager-clusterrolebinding) to learn the
ServiceAccount the manager runs as; it then picks a ready pod of the Deployment
ownergc-controller-manager in that ServiceAccount's namespace (the leader,
when it may read the leader election Lease) and refuses a pod that does not run
as that ServiceAccount. You need get and list on clusterrolebindings, and
in the manager's namespace get on the Deployment and on Leases, list on pods
and create on pods/portforward: the roles ownergc-plugin-user grant them.

The manager's certificate is self-signed unless its installation gives it one.
Through the port-forward it is not verified unless you give --manager-ca-file:
the connection goes through the API server, verified, to the pod it names, which
runs as the manager. At --server-url it is verified against --manager-ca-file or
the system's roots; --manager-insecure-skip-tls-verify skips that, and then your
token goes to whoever answers at that address. kubectl's
--insecure-skip-tls-verify applies to the API server alone.

Names and namespaces are checked before they go into a request path: a name is
one path segment, a namespace a DNS-1123 label. An owner reference whose name
cannot be an object's name (.., a/b) names no object: it is never looked up, and
counts as an owner that is gone, as the collector counts it. Characters of
names and texts that are not printable are escaped in the output.

When the manager cannot be reached, or refuses (401, 403), why explains the
object from API reads alone — its owners, whether they exist and are being
deleted, its finalizers, its dependents and what holds them — and lists what it
could not know: the collector's graph and queue, and how it classifies owners
it cannot verify. The decision is then made by the collector's own rules, from
what the plugin could read: the object, its owners, its dependents and the
GCPolicy (which needs get on gcpolicies; without it the decision assumes the
defaults, and says so).

In an ownergc fleet, --cluster names the member to ask about (the name of its
kubeconfig Secret on the fleet's host), and the current context is the
member's: the object is read there. The fleet's manager runs on the host: reach
it at --server-url, or through --manager-context, a context of the host. The
manager reviews a token the host does not know at the member (TokenReview and
SubjectAccessReview there) and answers as the member's RBAC allows; it answers
a host identity, never sending its token to the member, only if the host
grants it get on clustergcstatuses/explain of the member (the Role
ownergc-fleet-member-reader grants it for every member). Through the
port-forward, the plugin learns the manager's ServiceAccount from the host's
ownergc-metrics-auth-rolebinding and picks the replica that collects the member,
as its ClusterGCStatus says, when you may get it (ownergc-fleet-member-reader
grants that too): a sharded host's replicas are a StatefulSet, with no
Deployment; otherwise the Deployment's leader, as without --cluster.`,
		Example: `  kubectl ownergc why deploy/web
  kubectl ownergc why -n shop configmap/settings -o yaml
  kubectl ownergc why pod/web-7d4b9-x2x9q --server-url https://localhost:8443 --manager-ca-file manager-ca.crt
  kubectl ownergc why --context tenant-a --cluster tenant-a --manager-context host deploy/web`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			r, err := o.why(cmd.Context(), args, mf)
			if err != nil {
				return err
			}
			if output != "" {
				return printStructured(o.streams.Out, output, r)
			}
			return renderWhy(o.streams.Out, r, time.Now(), painter(o.colors(o.streams.Out)))
		},
	}
	mf.add(cmd.Flags())
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}

// why explains the object the arguments name: by the manager, or from API
// reads alone.
func (o *options) why(ctx context.Context, args []string, mf managerFlags) (*WhyResult, error) {
	c, err := o.clients()
	if err != nil {
		return nil, err
	}
	t, err := c.resolve(ctx, args, false)
	if err != nil {
		return nil, err
	}
	r, managerErr := o.askManager(ctx, c, t, mf)
	if managerErr == nil {
		return r, nil
	}
	if t.obj == nil {
		return nil, fmt.Errorf("%s %q not found (and the ownergc manager could not answer: %v)", t.mapping.Resource.GroupResource(), t.name, managerErr)
	}
	r = c.explainFromAPI(ctx, t)
	r.ManagerError = managerErr.Error()
	return r, nil
}

// askManager asks the manager to explain the target.
func (o *options) askManager(ctx context.Context, c *clients, t target, mf managerFlags) (*WhyResult, error) {
	mc, err := o.connectManager(ctx, c, mf)
	if err != nil {
		return nil, err
	}
	defer mc.close()
	body, err := mc.get(ctx, explain.Path, explain.Query(t.mapping.Resource, t.namespace, t.name))
	if err != nil {
		var se *managerStatusError
		if errors.As(err, &se) && se.code == http.StatusUnauthorized && !hasBearerCredentials(c.config) {
			err = fmt.Errorf("%w (the manager authenticates bearer tokens only, and your kubeconfig has none: give --token or --token-file)", err)
		}
		return nil, err
	}
	r := &WhyResult{Source: SourceManager, Manager: mc.via}
	if err := json.Unmarshal(body, &r.Explanation); err != nil {
		return nil, fmt.Errorf("decoding the manager's explanation: %w", err)
	}
	if r.HiddenOwners > 0 && t.obj != nil {
		r.UnclassifiedOwners = unclassifiedOwners(t.obj.OwnerReferences, r.Owners)
	}
	return r, nil
}

// unclassifiedOwners returns the references to owners the manager did not
// name.
func unclassifiedOwners(refs []metav1.OwnerReference, named []explain.Owner) []explain.Object {
	shown := map[types.UID]bool{}
	for _, o := range named {
		shown[o.UID] = true
	}
	var out []explain.Object
	for _, r := range refs {
		if !shown[r.UID] {
			shown[r.UID] = true
			out = append(out, explain.Object{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID})
		}
	}
	return out
}

// explainFromAPI gathers the API reads of an explanation without the
// manager: the owners, the dependents and the GCPolicy.
func (c *clients) explainFromAPI(ctx context.Context, t target) *WhyResult {
	f := apiFacts{target: t.ref(), resource: t.mapping.Resource.GroupResource(), obj: t.obj}
	for _, ref := range t.obj.OwnerReferences {
		f.owners = append(f.owners, c.lookupOwner(ctx, t.namespace, ref))
	}
	ns := t.namespace
	if t.mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	l := c.listAround(ctx, ns)
	f.dependents = indexDependents(l.objects)[t.obj.UID]
	f.incomplete = l.incomplete()
	f.policy = c.readPolicy(ctx)
	f.namespaceLabels = func() (map[string]string, error) { return c.namespaceLabels(ctx, t.namespace) }
	r := explainFromAPI(f)
	return &r
}
