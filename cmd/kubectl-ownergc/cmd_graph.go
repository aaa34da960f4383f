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
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// graphPath is where the manager serves its graph (internal/debug.GraphPath).
const graphPath = "/debug/graph"

// graphReaderRole is the ClusterRole that allows reading the graph.
const graphReaderRole = "ownergc-graph-reader"

// fleetMemberReaderRole is the Role, on a fleet's host in the manager's
// namespace, that grants /explain and /debug/graph about every member
// (config/fleet/host).
const fleetMemberReaderRole = "ownergc-fleet-member-reader"

func newGraphCommand(o *options) *cobra.Command {
	var mf managerFlags
	var output string
	cmd := &cobra.Command{
		Use:   "graph [KIND/NAME]",
		Short: "Print the ownergc manager's ownership graph (DOT, or JSON with -o json), whole or around one object",
		Long: `Print the ownership graph of the ownergc manager (its /debug/graph endpoint):
Graphviz DOT by default, in the layout of kube-controller-manager's collector,
or JSON with -o json (YAML with -o yaml). With KIND/NAME, only the objects
connected to that object (its owners and dependents, transitively).

The graph names every object in the cluster: reading it needs the ClusterRole
ownergc-graph-reader (kubectl create clusterrolebinding NAME
--clusterrole=ownergc-graph-reader --user=YOU). The manager is reached as
'why' reaches it (see kubectl ownergc why --help).

With --cluster, the graph of that member of an ownergc fleet: for a token of
the member, the member's ClusterRole ownergc-graph-reader decides; for a token
of the fleet's host (--manager-context), get on clustergcstatuses/graph of the
member on the host (the Role ownergc-fleet-member-reader grants it for every
member).`,
		Example: `  kubectl ownergc graph deploy/web | dot -Tsvg > web.svg
  kubectl ownergc graph -o json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			return o.graph(cmd.Context(), args, mf, output)
		},
	}
	mf.add(cmd.Flags())
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}

func (o *options) graph(ctx context.Context, args []string, mf managerFlags, output string) error {
	c, err := o.clients()
	if err != nil {
		return err
	}
	q := url.Values{}
	if len(args) > 0 {
		t, err := c.resolve(ctx, args, true)
		if err != nil {
			return err
		}
		q.Set("uid", string(t.obj.UID))
	}
	if output != "" {
		q.Set("format", "json")
	}
	mc, err := o.connectManager(ctx, c, mf)
	if err != nil {
		return fmt.Errorf("cannot reach the ownergc manager: %w", err)
	}
	defer mc.close()
	body, err := mc.get(ctx, graphPath, q)
	var se *managerStatusError
	switch {
	case errors.As(err, &se) && se.code == http.StatusForbidden && mf.cluster != "":
		return fmt.Errorf("%w\nReading a member's graph needs, at the member, the ClusterRole %s (config/fleet/member installs it: kubectl create clusterrolebinding NAME --clusterrole=%s --user=YOU), or, with --manager-context on the fleet's host, get on clustergcstatuses/graph of the member (the Role %s)", err, graphReaderRole, graphReaderRole, fleetMemberReaderRole)
	case errors.As(err, &se) && se.code == http.StatusForbidden:
		return fmt.Errorf("%w\nReading the graph needs the ClusterRole %s: kubectl create clusterrolebinding NAME --clusterrole=%s --user=YOU (or --serviceaccount=NS:NAME)", err, graphReaderRole, graphReaderRole)
	case errors.As(err, &se) && se.code == http.StatusUnauthorized && !hasBearerCredentials(c.config):
		return fmt.Errorf("%w (the manager authenticates bearer tokens only, and your kubeconfig has none: give --token or --token-file)", err)
	case err != nil:
		return err
	}
	switch output {
	case "json":
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("decoding the manager's graph: %w", err)
		}
		return printStructured(o.streams.Out, "json", v)
	case "yaml":
		y, err := yaml.JSONToYAML(body)
		if err != nil {
			return fmt.Errorf("decoding the manager's graph: %w", err)
		}
		_, err = o.streams.Out.Write(y)
		return err
	}
	// DOT quotes names as Go does, but the plugin does not count on the
	// manager for it: nothing in it reaches the terminal as a control
	// sequence.
	_, err = io.WriteString(o.streams.Out, escapeExcept(string(body), "\n\t"))
	return err
}
