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

package install_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v3/pkg/strvals"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/test/framework"
)

// The documented installation steps, run as written: the tests read the
// fenced code blocks of a section of README.md or docs/, split them into
// commands as a shell would, and carry each command out against a control
// plane (or only record what it would apply). Only the commands the steps
// use are known; any other fails the test, so a step that changes in the
// documentation changes what the tests run, or makes them fail.

// docBlock is a fenced code block of a Markdown file.
type docBlock struct {
	// lang is the block's info string ("sh", "yaml", "" …).
	lang string
	// text is its content, without the indentation of its fence.
	text string
	// where is the file and line of its fence.
	where string
}

// docBlocks returns the fenced code blocks of the section of a Markdown
// file of the repository under the heading whose text is heading (up to the
// next heading of the same or a higher level), in order.
func docBlocks(t *testing.T, path, heading string) []docBlock {
	t.Helper()
	data := readRepoFile(t, path)
	lines := strings.Split(string(data), "\n")
	level, start := 0, -1
	for i, l := range lines {
		if hashes, text, ok := strings.Cut(l, " "); ok && strings.Trim(hashes, "#") == "" && text == heading {
			level, start = len(hashes), i+1
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	var blocks []docBlock
	var cur *docBlock
	indent := 0
	for i := start; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if cur == nil {
			if hashes, _, ok := strings.Cut(l, " "); ok && hashes != "" && strings.Trim(hashes, "#") == "" && len(hashes) <= level {
				break
			}
			if strings.HasPrefix(trimmed, "```") {
				indent = len(l) - len(trimmed)
				cur = &docBlock{lang: strings.TrimPrefix(trimmed, "```"), where: fmt.Sprintf("%s:%d", path, i+1)}
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		cut := min(indent, len(l)-len(trimmed))
		cur.text += l[cut:] + "\n"
	}
	return blocks
}

// shellCommand is one command of a block, split into words as a shell
// splits them.
type shellCommand struct {
	words []string
	// stdin is the here-document the command reads, if any.
	stdin string
	// text is the command as written, for messages.
	text string
}

func (c shellCommand) String() string { return c.text }

// parseCommands splits a script into commands: lines joined where they end
// with a backslash, comments dropped, words split at blanks outside single
// or double quotes, and a here-document (<<'EOF' … EOF) given to its
// command as its input. What a pasted script would do beyond that —
// expansions, pipes, several commands on a line — is refused.
func parseCommands(script string) ([]shellCommand, error) {
	lines := strings.Split(script, "\n")
	var out []shellCommand
	for i := 0; i < len(lines); i++ {
		text := lines[i]
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + "\n" + lines[i]
		}
		words, heredoc, err := splitWords(strings.ReplaceAll(text, "\\\n", ""))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", text, err)
		}
		if len(words) == 0 {
			continue
		}
		cmd := shellCommand{words: words, text: strings.TrimSpace(text)}
		if heredoc != "" {
			var body []string
			for i++; i < len(lines) && lines[i] != heredoc; i++ {
				body = append(body, lines[i])
			}
			if i == len(lines) {
				return nil, fmt.Errorf("%q: the here-document does not end with %q", text, heredoc)
			}
			cmd.stdin = strings.Join(body, "\n") + "\n"
		}
		out = append(out, cmd)
	}
	return out, nil
}

// splitWords splits a command line into words, and returns the delimiter of
// the here-document it opens, if any.
func splitWords(line string) (words []string, heredoc string, err error) {
	var word strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '#' && !inWord:
			i = len(line) // a comment
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, "", errors.New("unterminated single quote")
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			end := strings.IndexByte(line[i+1:], '"')
			if end < 0 {
				return nil, "", errors.New("unterminated double quote")
			}
			s := line[i+1 : i+1+end]
			if strings.ContainsAny(s, "$`\\") {
				return nil, "", fmt.Errorf("expansion in %q: not a step the tests can follow", s)
			}
			word.WriteString(s)
			inWord = true
			i += end + 1
		case c == '<' && strings.HasPrefix(line[i:], "<<"):
			flush()
			rest := strings.TrimLeft(line[i+2:], " ")
			end := strings.IndexAny(rest, " \t")
			if end < 0 {
				end = len(rest)
			}
			heredoc = strings.Trim(rest[:end], `'"`)
			i += 2 + (len(line[i+2:]) - len(rest)) + end - 1
		case strings.IndexByte("$`|&;<>()\\", c) >= 0:
			return nil, "", fmt.Errorf("%q: not a step the tests can follow", string(c))
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, heredoc, nil
}

// docRunner carries out documented commands.
type docRunner struct {
	t *testing.T
	// c is the control plane to run them against; nil to record only
	// (plan).
	c *cluster
	// deployed, when set, is called once the command that applied the
	// manager's Deployment has returned, before the next command: the test
	// starts the manager there, as the Deployment's pod would start. (A
	// pod takes longer to be scheduled and started than kubectl or Helm
	// take to create the objects that follow the Deployment in the same
	// command: Helm creates the chart's GCPolicy, a kind it does not know,
	// after it.)
	deployed func()
	// deploymentApplied is set once the Deployment has been applied,
	// started once deployed has been called.
	deploymentApplied, started bool
	// kcmGarbageCollectorOff is called for `kube-controller-manager
	// --controllers=*,-garbage-collector-controller …`.
	kcmGarbageCollectorOff func()
	// applied are the objects applied so far, in order, with the index of
	// the command that applied each.
	applied []appliedObject
	// commands counts the commands run.
	commands int
	// waits are the `kubectl wait` conditions run, in order.
	waits []string
}

type appliedObject struct {
	obj     *unstructured.Unstructured
	command int
	// helm is true for an object `helm install` created.
	helm bool
}

// run carries out every command of the blocks, in order.
func (r *docRunner) run(blocks ...docBlock) {
	r.t.Helper()
	for _, b := range blocks {
		cmds, err := parseCommands(b.text)
		if err != nil {
			r.t.Fatalf("%s: %v", b.where, err)
		}
		for _, cmd := range cmds {
			r.commands++
			r.t.Logf("%s: %s", b.where, cmd)
			if err := r.runCommand(cmd); err != nil {
				r.t.Fatalf("%s: %s: %v", b.where, cmd, err)
			}
			if r.deploymentApplied && !r.started {
				r.started = true
				if r.deployed != nil {
					r.deployed()
				}
			}
		}
	}
}

// flags splits the words after a command's name into arguments and flags
// (--name=value, or --name value for the flags that take one).
func flags(words []string, withValue ...string) (args []string, values map[string][]string, err error) {
	values = map[string][]string{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") || w == "-" {
			args = append(args, w)
			continue
		}
		name, value, hasValue := strings.Cut(w, "=")
		if !hasValue && slices.Contains(withValue, name) {
			if i+1 == len(words) {
				return nil, nil, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = words[i]
		}
		values[name] = append(values[name], value)
	}
	return args, values, nil
}

func (r *docRunner) runCommand(cmd shellCommand) error {
	switch cmd.words[0] {
	case "kubectl":
		return r.kubectl(cmd)
	case "helm":
		return r.helm(cmd)
	case "kube-controller-manager":
		_, f, err := flags(cmd.words[1:])
		if err != nil {
			return err
		}
		if c := f["--controllers"]; len(c) != 1 || !slices.Contains(strings.Split(c[0], ","), "-garbage-collector-controller") {
			return fmt.Errorf("the tests only know kube-controller-manager with its garbage collector disabled")
		}
		if r.kcmGarbageCollectorOff != nil {
			r.kcmGarbageCollectorOff()
		}
		return nil
	}
	return fmt.Errorf("the tests do not know the command %q", cmd.words[0])
}

func (r *docRunner) kubectl(cmd shellCommand) error {
	args, f, err := flags(cmd.words[1:], "-f", "-k", "-n", "--namespace", "-p", "--type", "-o", "--field-selector", "--for", "--timeout")
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return errors.New("no kubectl command")
	}
	known := func(names ...string) error {
		for name := range f {
			if !slices.Contains(names, name) {
				return fmt.Errorf("the tests do not know kubectl %s's flag %s", args[0], name)
			}
		}
		return nil
	}
	switch args[0] {
	case "get":
		// A read: it changes nothing.
		return known("-n", "--namespace", "-o", "-A", "--field-selector")
	case "apply":
		if err := known("-f", "-k"); err != nil {
			return err
		}
		switch {
		case len(f["-f"]) == 1 && len(f["-k"]) == 0 && len(args) == 1:
			if f["-f"][0] == "-" {
				if cmd.stdin == "" {
					return errors.New("kubectl apply -f - without a here-document")
				}
				return r.apply([]byte(cmd.stdin), false)
			}
			data, err := os.ReadFile(filepath.Join(repoRoot, f["-f"][0]))
			if err != nil {
				return err
			}
			return r.apply(data, false)
		case len(f["-k"]) == 1 && len(f["-f"]) == 0 && len(args) == 1:
			return r.apply(kustomizeBuild(r.t, f["-k"][0]), false)
		}
		return errors.New("the tests know kubectl apply with one -f or one -k")
	case "wait":
		if err := known("--for", "--timeout"); err != nil {
			return err
		}
		if len(args) != 2 || len(f["--for"]) != 1 {
			return errors.New("the tests know kubectl wait --for=… <kind>/<name>")
		}
		timeout := 30 * time.Second // kubectl's default
		if t := f["--timeout"]; len(t) == 1 {
			if timeout, err = time.ParseDuration(t[0]); err != nil {
				return err
			}
		}
		r.waits = append(r.waits, f["--for"][0]+" "+args[1])
		return r.wait(f["--for"][0], args[1], timeout)
	case "patch":
		if err := known("--type", "-p"); err != nil {
			return err
		}
		if len(args) != 3 || args[1] != "gcpolicy" || len(f["--type"]) != 1 || f["--type"][0] != "merge" || len(f["-p"]) != 1 {
			return errors.New("the tests know kubectl patch gcpolicy <name> --type merge -p <patch>")
		}
		if r.c == nil {
			return nil
		}
		return r.c.Client.Patch(framework.Context(r.t), &ownergcv1alpha1.GCPolicy{ObjectMeta: metav1.ObjectMeta{Name: args[2]}},
			client.RawPatch(types.MergePatchType, []byte(f["-p"][0])))
	}
	return fmt.Errorf("the tests do not know kubectl %s", args[0])
}

// helm carries out `helm install <release> dist/chart -n <namespace>
// --create-namespace --set …` as Helm does: the chart's CRDs, then its
// objects in Helm's install order, each created.
func (r *docRunner) helm(cmd shellCommand) error {
	args, f, err := flags(cmd.words[1:], "-n", "--namespace", "--set")
	if err != nil {
		return err
	}
	for name := range f {
		if !slices.Contains([]string{"-n", "--namespace", "--set", "--create-namespace"}, name) {
			return fmt.Errorf("the tests do not know helm's flag %s", name)
		}
	}
	if len(args) != 3 || args[0] != "install" || args[1] != "ownergc" || args[2] != "dist/chart" {
		return errors.New("the tests know helm install ownergc dist/chart")
	}
	ns := append(f["-n"], f["--namespace"]...)
	if len(ns) != 1 {
		return errors.New("helm install without -n")
	}
	vals := map[string]any{}
	for _, s := range f["--set"] {
		if err := strvals.ParseInto(s, vals); err != nil {
			return err
		}
	}
	if r.c != nil && len(f["--create-namespace"]) > 0 {
		if err := r.c.Client.Create(framework.Context(r.t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns[0]}}); err != nil {
			return err
		}
	}
	return r.apply(renderChart(r.t, ns[0], vals), true)
}

// apply applies (or, for helm, creates) each object of a YAML stream in
// order, as kubectl and Helm do.
func (r *docRunner) apply(manifests []byte, helm bool) error {
	var mapper *restmapper.DeferredDiscoveryRESTMapper
	if r.c != nil {
		mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(r.c.Clientset.Discovery()))
	}
	// Helm installs the chart's crds/ first and waits until the API server
	// serves them before it creates the templates' objects.
	var crds []string
	objs, err := framework.DecodeManifests(manifests)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		r.applied = append(r.applied, appliedObject{obj: obj, command: r.commands, helm: helm})
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj.GetName())
		} else if helm && len(crds) > 0 {
			for _, crd := range crds {
				if err := r.wait("condition=Established", "crd/"+crd, time.Minute); err != nil {
					return err
				}
			}
			crds = nil
		}
		if r.c != nil {
			if err := r.applyObject(mapper, obj, helm); err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		if obj.GetKind() == "Deployment" && obj.GetName() == "ownergc-controller-manager" {
			r.deploymentApplied = true
		}
	}
	return nil
}

func (r *docRunner) applyObject(mapper *restmapper.DeferredDiscoveryRESTMapper, obj *unstructured.Unstructured, helm bool) error {
	gvk := obj.GroupVersionKind()
	var mapping *apimeta.RESTMapping
	// A kind whose CRD was created a moment ago (the chart's crds/) is
	// discovered once the API server serves it.
	err := framework.Poll(30*time.Second, func() error {
		var err error
		if mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			mapper.Reset()
		}
		return err
	})
	if err != nil {
		return err
	}
	ri := r.c.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	if mapping.Scope.Name() != apimeta.RESTScopeNameNamespace {
		ri = r.c.Dynamic.Resource(mapping.Resource)
	}
	ctx := framework.Context(r.t)
	if helm {
		_, err = ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "helm"})
		return err
	}
	_, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
	return err
}

// wait carries out `kubectl wait --for=<what> <kind>/<name>`.
func (r *docRunner) wait(what, object string, timeout time.Duration) error {
	kind, name, ok := strings.Cut(object, "/")
	if !ok {
		return fmt.Errorf("%q: want <kind>/<name>", object)
	}
	var get func() (metav1.Object, []metav1.Condition, error)
	switch kind {
	case "crd", "customresourcedefinition":
		get = func() (metav1.Object, []metav1.Condition, error) {
			crd, err := r.c.Apix.ApiextensionsV1().CustomResourceDefinitions().Get(framework.Context(r.t), name, metav1.GetOptions{})
			if err != nil {
				return nil, nil, err
			}
			var conds []metav1.Condition
			for _, c := range crd.Status.Conditions {
				conds = append(conds, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status)})
			}
			return crd, conds, err
		}
	case "gcpolicy", "gcpolicies", "gcp":
		get = func() (metav1.Object, []metav1.Condition, error) {
			p := &ownergcv1alpha1.GCPolicy{}
			err := r.c.Client.Get(framework.Context(r.t), client.ObjectKey{Name: name}, p)
			return p, p.Status.Conditions, err
		}
	default:
		return fmt.Errorf("the tests do not know kubectl wait on %s", kind)
	}
	condition, isCondition := strings.CutPrefix(what, "condition=")
	if what != "create" && !isCondition {
		return fmt.Errorf("the tests do not know kubectl wait --for=%s", what)
	}
	if r.c == nil {
		return nil
	}
	// The tests wait at most 3 minutes, whatever the documentation allows.
	return framework.Poll(min(timeout, 3*time.Minute), func() error {
		_, conds, err := get()
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%s not found", object)
		case err != nil:
			return err
		case isCondition && !apimeta.IsStatusConditionTrue(conds, condition):
			return fmt.Errorf("%s: condition %s is not True", object, condition)
		}
		return nil
	})
}

// placeholder matches what a reader must replace before running a
// command: <registry>, <tag>, ….
var placeholder = regexp.MustCompile(`<[a-z][a-z-]*>`)
