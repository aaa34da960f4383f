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

// Package policy holds the configuration the collector runs with: the spec of
// the `default` GCPolicy, or the built-in defaults when there is none. The
// GCPolicy controller publishes it to a Store; the engines subscribe.
package policy

import (
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Policy is an effective configuration. It is immutable once built.
type Policy struct {
	// Ignored lists the ignored resources; Resource "*" ignores a group.
	Ignored []schema.GroupResource
	// AttemptToDeleteWorkers and AttemptToOrphanWorkers size the pools.
	AttemptToDeleteWorkers int
	AttemptToOrphanWorkers int
	// DefaultPropagation is used to delete a dependent that carries neither
	// the orphan nor the foregroundDeletion finalizer.
	DefaultPropagation metav1.DeletionPropagation
	// PropagationOverrides replace DefaultPropagation for the resources
	// they name (Resource "*": every resource of the group); the first that
	// matches wins, exact resources before whole groups.
	PropagationOverrides []PropagationOverride
	// ProtectedNamespaces lists the namespaces whose objects the collector
	// never deletes.
	ProtectedNamespaces []string
	// DryRun: decide, count and log, but write nothing.
	DryRun bool
	// BlockedDeletionAfter is how long a foreground or orphaning deletion
	// may last before it is reported blocked.
	BlockedDeletionAfter time.Duration
	// ShadowGracePeriod is how long, in dry-run, a decision of the
	// collector may wait for another collector to carry it out before it
	// counts as a disagreement.
	ShadowGracePeriod time.Duration
	// Collectors configures the API-level collectors.
	Collectors Collectors
	// Generation is the GCPolicy generation this comes from; 0 for the
	// built-in defaults.
	Generation int64
	// FromPolicy is true when a GCPolicy is in force.
	FromPolicy bool
}

// Collectors configures the API-level collectors (spec.collectors).
type Collectors struct {
	TerminatedPods             TerminatedPods
	FinishedJobs               FinishedJobs
	CertificateSigningRequests CertificateSigningRequests
	Expiry                     Expiry
}

// TerminatedPods configures the terminated-Pod collector.
type TerminatedPods struct {
	Enabled bool
	// Threshold is the number of terminated Pods kept; 0 keeps them all.
	Threshold int
}

// FinishedJobs configures the finished-Job collector.
type FinishedJobs struct {
	Enabled bool
}

// CertificateSigningRequests configures the CertificateSigningRequest
// collector.
type CertificateSigningRequests struct {
	Enabled bool
	// ApprovedAfter, DeniedAfter and PendingAfter: how long an issued, a
	// denied or failed, and a pending (or approved but unissued) request
	// stays.
	ApprovedAfter, DeniedAfter, PendingAfter time.Duration
}

// Defaults returns the built-in configuration, the same values the CRD
// defaults to.
func Defaults() *Policy {
	p, _ := FromSpec(&ownergcv1alpha1.GCPolicySpec{IgnoredResources: ownergcv1alpha1.DefaultIgnoredResources()}, 0)
	p.FromPolicy = false
	return p
}

// FromSpec builds the configuration a GCPolicy spec describes. Zero values
// (a spec written before the API server defaulted it) take the defaults; a nil
// IgnoredResources means the default list, an empty one ignores nothing.
func FromSpec(spec *ownergcv1alpha1.GCPolicySpec, generation int64) (*Policy, error) {
	p := &Policy{
		AttemptToDeleteWorkers: int(orDefault(spec.Workers.AttemptToDelete, ownergcv1alpha1.DefaultAttemptToDeleteWorkers)),
		AttemptToOrphanWorkers: int(orDefault(spec.Workers.AttemptToOrphan, ownergcv1alpha1.DefaultAttemptToOrphanWorkers)),
		BlockedDeletionAfter:   DefaultBlockedDeletionAfter,
		ShadowGracePeriod:      DefaultShadowGracePeriod,
		Generation:             generation,
		FromPolicy:             true,
	}
	for _, w := range []int{p.AttemptToDeleteWorkers, p.AttemptToOrphanWorkers} {
		if w < int(ownergcv1alpha1.MinWorkers) || w > int(ownergcv1alpha1.MaxWorkers) {
			return nil, fmt.Errorf("worker count %d is outside %d..%d", w, ownergcv1alpha1.MinWorkers, ownergcv1alpha1.MaxWorkers)
		}
	}
	var err error
	if p.DefaultPropagation, err = propagation(spec.DefaultPropagation); err != nil {
		return nil, fmt.Errorf("defaultPropagation: %w", err)
	}
	for _, o := range spec.PropagationOverrides {
		if o.Propagation == "" {
			return nil, fmt.Errorf("propagationOverrides %s/%s: a propagation is required", o.Group, o.Resource)
		}
		prop, err := propagation(o.Propagation)
		if err != nil {
			return nil, fmt.Errorf("propagationOverrides %s/%s: %w", o.Group, o.Resource, err)
		}
		p.PropagationOverrides = append(p.PropagationOverrides, PropagationOverride{
			GroupResource: schema.GroupResource{Group: o.Group, Resource: o.Resource}, Propagation: prop})
	}
	switch spec.Mode {
	case "", ownergcv1alpha1.ModeEnforce:
	case ownergcv1alpha1.ModeDryRun:
		p.DryRun = true
	default:
		return nil, fmt.Errorf("unknown mode %q", spec.Mode)
	}
	for _, ns := range spec.Protection.Namespaces {
		p.ProtectedNamespaces = append(p.ProtectedNamespaces, string(ns))
	}
	if d := spec.Diagnostics.BlockedDeletionAfter; d != nil {
		p.BlockedDeletionAfter = d.Duration
	}
	if d := spec.Diagnostics.ShadowGracePeriod; d != nil {
		p.ShadowGracePeriod = d.Duration
	}
	for name, d := range map[string]time.Duration{"blockedDeletionAfter": p.BlockedDeletionAfter, "shadowGracePeriod": p.ShadowGracePeriod} {
		if d < time.Second || d > 24*time.Hour {
			return nil, fmt.Errorf("diagnostics.%s %s is outside 1s..24h", name, d)
		}
	}
	if err := collectorsFromSpec(&spec.Collectors, &p.Collectors); err != nil {
		return nil, err
	}
	ignored := spec.IgnoredResources
	if ignored == nil {
		ignored = ownergcv1alpha1.DefaultIgnoredResources()
	}
	for _, r := range ignored {
		if r.Resource == "" {
			return nil, fmt.Errorf("ignored resource in group %q has an empty resource name", r.Group)
		}
		p.Ignored = append(p.Ignored, schema.GroupResource{Group: r.Group, Resource: r.Resource})
	}
	return p, nil
}

// Defaults of the diagnostics durations.
const (
	DefaultBlockedDeletionAfter = ownergcv1alpha1.DefaultBlockedDeletionAfter
	DefaultShadowGracePeriod    = ownergcv1alpha1.DefaultShadowGracePeriod
)

// collectorsFromSpec fills out from spec.collectors: absent fields take
// their defaults; values out of bounds (which the schema refuses) are
// errors.
func collectorsFromSpec(spec *ownergcv1alpha1.Collectors, out *Collectors) error {
	out.TerminatedPods = TerminatedPods{Enabled: spec.TerminatedPods.Enabled, Threshold: int(ownergcv1alpha1.DefaultTerminatedPodThreshold)}
	if t := spec.TerminatedPods.Threshold; t != nil {
		if *t < 0 || *t > ownergcv1alpha1.MaxTerminatedPodThreshold {
			return fmt.Errorf("collectors.terminatedPods.threshold %d is outside 0..%d", *t, ownergcv1alpha1.MaxTerminatedPodThreshold)
		}
		out.TerminatedPods.Threshold = int(*t)
	}
	out.FinishedJobs = FinishedJobs{Enabled: spec.FinishedJobs.Enabled}
	csrs := &spec.CertificateSigningRequests
	out.CertificateSigningRequests = CertificateSigningRequests{Enabled: csrs.Enabled}
	for _, d := range []struct {
		name string
		in   *metav1.Duration
		def  time.Duration
		out  *time.Duration
	}{
		{"approvedAfter", csrs.ApprovedAfter, ownergcv1alpha1.DefaultCSRApprovedAfter, &out.CertificateSigningRequests.ApprovedAfter},
		{"deniedAfter", csrs.DeniedAfter, ownergcv1alpha1.DefaultCSRDeniedAfter, &out.CertificateSigningRequests.DeniedAfter},
		{"pendingAfter", csrs.PendingAfter, ownergcv1alpha1.DefaultCSRPendingAfter, &out.CertificateSigningRequests.PendingAfter},
	} {
		*d.out = d.def
		if d.in == nil {
			continue
		}
		if d.in.Duration < ownergcv1alpha1.MinCollectorDuration || d.in.Duration > ownergcv1alpha1.MaxCollectorDuration {
			return fmt.Errorf("collectors.certificateSigningRequests.%s %s is outside %s..%s", d.name, d.in.Duration,
				ownergcv1alpha1.MinCollectorDuration, ownergcv1alpha1.MaxCollectorDuration)
		}
		*d.out = d.in.Duration
	}
	var err error
	out.Expiry, err = expiryFromSpec(&spec.Expiry)
	return err
}

// PropagationOverride is the propagation to use for one resource (or a
// whole group, Resource "*").
type PropagationOverride struct {
	schema.GroupResource
	Propagation metav1.DeletionPropagation
}

// PropagationFor returns the propagation the collector uses to delete an
// object of resource gr that carries neither the orphan nor the
// foregroundDeletion finalizer.
func (p *Policy) PropagationFor(gr schema.GroupResource) metav1.DeletionPropagation {
	if o, ok := p.OverrideFor(gr); ok {
		return o
	}
	if p.DefaultPropagation == "" {
		return metav1.DeletePropagationBackground
	}
	return p.DefaultPropagation
}

// OverrideFor returns the propagation an override sets for resource gr,
// and false when none does (PropagationFor is then the default).
func (p *Policy) OverrideFor(gr schema.GroupResource) (metav1.DeletionPropagation, bool) {
	for _, exact := range []bool{true, false} {
		for _, o := range p.PropagationOverrides {
			if o.Group == gr.Group && ((exact && o.Resource == gr.Resource) || (!exact && o.Resource == "*")) {
				return o.Propagation, true
			}
		}
	}
	return "", false
}

// Protection says why the collectors must never delete an object.
type Protection string

const (
	// NotProtected: the policy lets the collectors delete it.
	NotProtected Protection = ""
	// ProtectedByAnnotation: it carries the ownergc.io/protected annotation
	// set to "true".
	ProtectedByAnnotation Protection = "Annotation"
	// ProtectedByNamespace: its namespace is one of the policy's protected
	// namespaces.
	ProtectedByNamespace Protection = "Namespace"
)

// Protection says whether, and why, the collectors must never delete the
// object in namespace with those annotations: the annotation is honoured
// whatever the policy, then the policy's protected namespaces.
func (p *Policy) Protection(namespace string, annotations map[string]string) Protection {
	switch {
	case annotations[ownergcv1alpha1.ProtectedAnnotation] == "true":
		return ProtectedByAnnotation
	case namespace != "" && slices.Contains(p.ProtectedNamespaces, namespace):
		return ProtectedByNamespace
	}
	return NotProtected
}

// Protects reports whether the collectors must never delete the object in
// namespace with those annotations (Protection).
func (p *Policy) Protects(namespace string, annotations map[string]string) bool {
	return p.Protection(namespace, annotations) != NotProtected
}

// propagation converts a propagation of the API; empty means the default.
func propagation(p ownergcv1alpha1.PropagationPolicy) (metav1.DeletionPropagation, error) {
	switch p {
	case "":
		return metav1.DeletionPropagation(ownergcv1alpha1.DefaultPropagationPolicy), nil
	case ownergcv1alpha1.PropagationBackground, ownergcv1alpha1.PropagationForeground, ownergcv1alpha1.PropagationOrphan:
		return metav1.DeletionPropagation(p), nil
	}
	return "", fmt.Errorf("unknown propagation %q", p)
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

// Ignores reports whether the collector must leave a resource alone.
func (p *Policy) Ignores(gr schema.GroupResource) bool {
	for _, r := range p.Ignored {
		if r.Group == gr.Group && (r.Resource == "*" || r.Resource == gr.Resource) {
			return true
		}
	}
	return false
}

// SameIgnored reports whether both policies ignore the same resources.
func (p *Policy) SameIgnored(o *Policy) bool {
	key := func(gr schema.GroupResource) string { return gr.Group + "/" + gr.Resource }
	a := make([]string, 0, len(p.Ignored))
	for _, r := range p.Ignored {
		a = append(a, key(r))
	}
	b := make([]string, 0, len(o.Ignored))
	for _, r := range o.Ignored {
		b = append(b, key(r))
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Store holds the policy in force and tells subscribers when it changes.
// It is safe for concurrent use; subscribers are called one at a time, in
// the order they subscribed, from the goroutine that calls Set.
//
// A store is settled once the policy in force is known to be the cluster's:
// a GCPolicy was read and put in force (Set), or the cluster was found to
// have none, or not to serve the kind, so that the defaults it holds are
// the cluster's (Settle). Until then the defaults it holds are only a
// placeholder, and nothing that writes may act on them: a cluster whose
// GCPolicy says DryRun would otherwise be collected in Enforce for the
// moment it takes to read it.
type Store struct {
	mu          sync.Mutex
	current     *Policy
	subscribers []func(old, new *Policy)
	settled     chan struct{}
	settle      sync.Once
}

// NewStore returns a settled store holding the defaults: for what has no
// GCPolicy to read (tests, tools).
func NewStore() *Store {
	s := NewPendingStore()
	s.Settle()
	return s
}

// NewPendingStore returns a store holding the defaults as a placeholder,
// settled by the first Set or Settle.
func NewPendingStore() *Store {
	return &Store{current: Defaults(), settled: make(chan struct{})}
}

// Settle marks the policy in force as the cluster's (its defaults, when
// nothing was Set).
func (s *Store) Settle() { s.settle.Do(func() { close(s.settled) }) }

// Settled is closed once the store is settled.
func (s *Store) Settled() <-chan struct{} { return s.settled }

// Get returns the policy in force.
func (s *Store) Get() *Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Subscribe registers f to be called after every change.
func (s *Store) Subscribe(f func(old, new *Policy)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscribers = append(s.subscribers, f)
}

// Set puts p in force and calls the subscribers.
func (s *Store) Set(p *Policy) {
	s.mu.Lock()
	old := s.current
	s.current = p
	subs := slices.Clone(s.subscribers)
	s.mu.Unlock()
	s.Settle()
	for _, f := range subs {
		f(old, p)
	}
}
