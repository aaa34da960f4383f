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

// Command kubectl-ownergc is a kubectl plugin that shows why Kubernetes
// objects are (still) there: the ownership tree around an object, and the
// garbage collector's explanation of it.
//
//	kubectl ownergc tree KIND/NAME [--up]   ownership tree, from the API server alone (any cluster)
//	kubectl ownergc why KIND/NAME           the ownergc manager's explanation, or one from API reads
//	kubectl ownergc graph [KIND/NAME]       the manager's ownership graph (DOT or JSON)
//	kubectl ownergc expiring [-A]           what expires next (ownergc.io/ttl, ownergc.io/expires, the GCPolicy's rules)
//
// Install it with `go install github.com/ownergc/ownergc/cmd/kubectl-ownergc@latest`
// (or `make plugin`, which writes bin/kubectl-ownergc) and put it on your
// PATH: kubectl finds it as `kubectl ownergc`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}).ExecuteContext(ctx)
	stop()
	if err != nil {
		// Errors quote names from the API server and the manager's answers:
		// no control character of theirs reaches the terminal.
		fmt.Fprintln(os.Stderr, "error:", escapeExcept(err.Error(), "\n"))
		os.Exit(1)
	}
}

// options are the flags every command shares.
type options struct {
	streams genericiooptions.IOStreams
	config  *genericclioptions.ConfigFlags
	// tokenFile replaces the kubeconfig's credentials with the bearer token
	// in this file (read at each request, like a kubeconfig's tokenFile).
	tokenFile string
	noColor   bool
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{streams: streams, config: genericclioptions.NewConfigFlags(true)}
	o.config.WrapConfigFn = func(c *rest.Config) *rest.Config {
		if o.tokenFile != "" {
			c.BearerToken, c.BearerTokenFile = "", o.tokenFile
		}
		return c
	}
	root := &cobra.Command{
		Use:   "kubectl-ownergc",
		Short: "See the ownership of Kubernetes objects, and why the garbage collector keeps or deletes them",
		Long: `kubectl ownergc shows ownership (metadata.ownerReferences) and garbage collection:

  tree KIND/NAME    the dependents below an object (with --up, its owners above),
                    each with its deletion state, finalizers and references,
                    read from the API server alone: it works on any cluster
  why KIND/NAME     why the object is still there, or what will happen to it:
                    the explanation of the ownergc manager (its /explain endpoint),
                    or, when the manager cannot be reached, one from API reads
                    that says what it could not know
  graph [KIND/NAME] the ownergc manager's ownership graph, in DOT or JSON
                    (needs the ClusterRole ownergc-graph-reader)
  expiring [-A]     the objects that expire (ownergc.io/ttl, ownergc.io/expires,
                    the GCPolicy's expiry rules), the next first, read from the
                    API server with your permissions

KIND/NAME is resolved as kubectl does: deploy/web, configmap/x,
replicasets.apps/web-7d4b9, or KIND NAME.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ownergc"},
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags := root.PersistentFlags()
	o.config.AddFlags(flags)
	if f := flags.Lookup("insecure-skip-tls-verify"); f != nil {
		f.Usage = "If true, the API server's certificate will not be checked for validity. This will make your HTTPS connections insecure. It does not apply to the ownergc manager: see --manager-ca-file and --manager-insecure-skip-tls-verify"
	}
	if f := flags.Lookup("token"); f != nil {
		f.Usage = "Bearer token for authentication to the API server and to the ownergc manager"
	}
	flags.StringVar(&o.tokenFile, "token-file", "", "Read the bearer token for the API server and the ownergc manager from this file")
	flags.BoolVar(&o.noColor, "no-color", false, "Never colour the output (it is coloured only on a terminal, and never when NO_COLOR is set)")
	root.AddCommand(newTreeCommand(o), newWhyCommand(o), newGraphCommand(o), newExpiringCommand(o))
	return root
}

// addOutputFlag adds -o/--output: json or yaml (checkOutput checks it).
func addOutputFlag(flags *pflag.FlagSet, p *string) {
	flags.StringVarP(p, "output", "o", "", "Output format: json|yaml (default: text)")
}

// colors reports whether w gets colours.
func (o *options) colors(w io.Writer) bool {
	return !o.noColor && useColor(w)
}
