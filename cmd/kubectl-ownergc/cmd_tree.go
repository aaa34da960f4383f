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
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
)

func newTreeCommand(o *options) *cobra.Command {
	var up bool
	var output string
	cmd := &cobra.Command{
		Use:   "tree KIND/NAME",
		Short: "Show the ownership tree below an object (its dependents), or above it with --up (its owners)",
		Long: `Show the ownership tree below an object: its dependents (the objects whose
metadata.ownerReferences name its UID), recursively. With --up, show the tree
above it: its owners, recursively.

Each object is marked with its state: being deleted (for how long), in the
foreground (waiting for its blocking dependents) or orphaning its dependents;
its finalizers; its reference to its parent in the tree (controller, and
blocking: blockOwnerDeletion); an owner that does not exist (dangling), whose
kind is not served (unverifiable) or that you may not read.

Everything comes from the API server, read with your own permissions: tree
works on any cluster, with or without ownergc. To find the dependents it lists
the metadata of every listable resource in the object's namespace and every
cluster-scoped resource (in every namespace for a cluster-scoped object); the
resources you may not list are named on stderr, since their objects are
missing from the tree (but for cluster-scoped resources below a namespaced
object: a cluster-scoped object cannot be the dependent of a namespaced one).`,
		Example: `  kubectl ownergc tree deploy/web
  kubectl ownergc tree -n shop replicasets.apps/web-7d4b9
  kubectl ownergc tree pod/web-7d4b9-x2x9q --up
  kubectl ownergc tree namespace/shop -o json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			c, err := o.clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			t, err := c.resolve(ctx, args, true)
			if err != nil {
				return err
			}
			tree := &Tree{Direction: DirectionDependents}
			if up {
				tree.Direction = DirectionOwners
				tree.Root = buildOwners(ctx, t.ref(), t.obj.ObjectMeta, c.lookupOwner)
			} else {
				ns := t.namespace
				if t.mapping.Scope.Name() != meta.RESTScopeNameNamespace {
					ns = "" // the dependents of a cluster-scoped object may be anywhere
				}
				l := c.listAround(ctx, ns)
				tree.Root = buildDependents(t.ref(), t.obj.ObjectMeta, l.objects)
				tree.Incomplete = l.incomplete()
			}
			if output != "" {
				return printStructured(o.streams.Out, output, tree)
			}
			if len(tree.Incomplete) > 0 {
				fmt.Fprintf(o.streams.ErrOut, "Warning: dependents in these resources are not shown, they could not be listed: %s\n", escapeText(strings.Join(tree.Incomplete, "; ")))
			}
			return renderTree(o.streams.Out, tree, time.Now(), painter(o.colors(o.streams.Out)))
		},
	}
	cmd.Flags().BoolVar(&up, "up", false, "Show the owners above the object instead of the dependents below it")
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}
