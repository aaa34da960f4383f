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

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// PolicyName is the only name a GCPolicy may have: the policy is a
// cluster-wide singleton.
const PolicyName = "default"

// Defaults. The CRD schema applies the same values through
// +kubebuilder:default markers, and the manager uses them when no GCPolicy
// exists.
const (
	// DefaultAttemptToDeleteWorkers is the default size of the pool that
	// drains the attempt-to-delete queue.
	DefaultAttemptToDeleteWorkers int32 = 20
	// DefaultAttemptToOrphanWorkers is the default size of the pool that
	// drains the attempt-to-orphan queue.
	DefaultAttemptToOrphanWorkers int32 = 20
	// DefaultPropagationPolicy is the propagation the collector uses when it
	// deletes a dependent that carries neither the orphan nor the
	// foregroundDeletion finalizer.
	DefaultPropagationPolicy = PropagationBackground
	// MinWorkers and MaxWorkers bound each worker pool.
	MinWorkers int32 = 1
	MaxWorkers int32 = 500
)

// DefaultIgnoredResources returns the resources ignored when
// spec.ignoredResources is omitted: events in the core group and in
// events.k8s.io, as the collector in kube-controller-manager does.
func DefaultIgnoredResources() []GroupResource {
	return []GroupResource{
		{Group: "", Resource: "events"},
		{Group: "events.k8s.io", Resource: "events"},
	}
}

// ProtectedAnnotation set to "true" on an object protects it: the collector
// never deletes it; when it would (its owners are gone) it removes the
// references to the absent owners instead, as an orphaning deletion of
// those owners would.
const ProtectedAnnotation = "ownergc.io/protected"

// Expiry annotations: a time to live for any object of a watched resource,
// which the expiry collector (spec.collectors.expiry) deletes once it has
// passed. When both are set, the earlier time wins.
const (
	// TTLAnnotation is a duration after the object's creation: a Go
	// duration ("36h", "90m") or one with the units d (24h) and w (7d) too
	// ("7d", "2w", "1d12h").
	TTLAnnotation = "ownergc.io/ttl"
	// ExpiresAnnotation is a time: RFC 3339 ("2026-07-01T18:00:00Z",
	// "2026-07-01T20:00:00+02:00"), or a date ("2026-07-01"), which means
	// its midnight UTC.
	ExpiresAnnotation = "ownergc.io/expires"
)

// DefaultSpec returns the spec with every field at its default: what the API
// server defaults an empty spec to, and what the manager creates the
// GCPolicy "default" with when none exists.
func DefaultSpec() GCPolicySpec {
	return GCPolicySpec{
		IgnoredResources: DefaultIgnoredResources(),
		Workers: Workers{
			AttemptToDelete: DefaultAttemptToDeleteWorkers,
			AttemptToOrphan: DefaultAttemptToOrphanWorkers,
		},
		DefaultPropagation: DefaultPropagationPolicy,
		Mode:               ModeEnforce,
		Diagnostics: Diagnostics{
			BlockedDeletionAfter: &metav1.Duration{Duration: DefaultBlockedDeletionAfter},
			ShadowGracePeriod:    &metav1.Duration{Duration: DefaultShadowGracePeriod},
		},
		Collectors: Collectors{
			TerminatedPods: TerminatedPodsCollector{Threshold: ptr.To(DefaultTerminatedPodThreshold)},
			CertificateSigningRequests: CertificateSigningRequestsCollector{
				ApprovedAfter: &metav1.Duration{Duration: DefaultCSRApprovedAfter},
				DeniedAfter:   &metav1.Duration{Duration: DefaultCSRDeniedAfter},
				PendingAfter:  &metav1.Duration{Duration: DefaultCSRPendingAfter},
			},
		},
	}
}

// Defaults of the durations (the +kubebuilder:default markers of
// Diagnostics and CertificateSigningRequestsCollector say the same).
const (
	DefaultBlockedDeletionAfter = 5 * time.Minute
	DefaultShadowGracePeriod    = 2 * time.Minute
	// DefaultCSRApprovedAfter, DefaultCSRDeniedAfter and
	// DefaultCSRPendingAfter are kube-controller-manager's (constants of its
	// certificatesigningrequest-cleaner-controller).
	DefaultCSRApprovedAfter = time.Hour
	DefaultCSRDeniedAfter   = time.Hour
	DefaultCSRPendingAfter  = 24 * time.Hour
	// MinCollectorDuration and MaxCollectorDuration bound the durations of
	// spec.collectors.certificateSigningRequests and of
	// spec.collectors.expiry.warnBefore.
	MinCollectorDuration = time.Second
	MaxCollectorDuration = 8760 * time.Hour
	// MaxExpiryAfter bounds the after of an expiry rule (ten years).
	MaxExpiryAfter = 87600 * time.Hour
	// MaxExpiryRules bounds spec.collectors.expiry.rules.
	MaxExpiryRules = 100
)

// PropagationPolicy is the deletion propagation the collector asks for when it
// deletes an object whose owners are all gone.
// +kubebuilder:validation:Enum=Background;Foreground;Orphan
type PropagationPolicy string

const (
	// PropagationBackground deletes the object at once and its dependents
	// afterwards.
	PropagationBackground PropagationPolicy = "Background"
	// PropagationForeground keeps the object, with the foregroundDeletion
	// finalizer, until its blocking dependents are deleted.
	PropagationForeground PropagationPolicy = "Foreground"
	// PropagationOrphan removes the object and leaves its dependents without
	// it as an owner.
	PropagationOrphan PropagationPolicy = "Orphan"
)

// GroupResource names a resource of the API, for example
// {group: "apps", resource: "replicasets"}. Resource "*" means every resource
// of the group.
type GroupResource struct {
	// Group is the API group: a DNS subdomain such as "apps" or
	// "example.com", or empty for the core group. Defaults to "" (the core
	// group); at most 253 characters.
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="group must be a DNS subdomain (lowercase letters, digits, '-' and '.', such as 'apps' or 'example.com') or empty for the core group"
	// +optional
	Group string `json:"group"`
	// Resource is the plural resource name as the API serves it and
	// `kubectl api-resources` lists it (for example "configmaps", not
	// "configmap" or "ConfigMap"), or "*" for every resource of the group.
	// Required; 1 to 253 characters. An entry that matches no served resource
	// ignores nothing: the IgnoredResourcesResolved condition names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == '*' || self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="resource must be a lowercase plural resource name such as 'configmaps', or '*' for every resource of the group"
	Resource string `json:"resource"`
}

// Workers sizes the collector's worker pools.
type Workers struct {
	// AttemptToDelete is the number of workers that decide whether an object
	// whose owners changed must be deleted, and delete it. Defaults to 20;
	// 1 to 500.
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=500
	// +optional
	AttemptToDelete int32 `json:"attemptToDelete,omitempty"`
	// AttemptToOrphan is the number of workers that remove an owner deleted
	// with propagationPolicy=Orphan from its dependents' ownerReferences.
	// Defaults to 20; 1 to 500.
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=500
	// +optional
	AttemptToOrphan int32 `json:"attemptToOrphan,omitempty"`
}

// GCPolicySpec configures the collector.
type GCPolicySpec struct {
	// IgnoredResources are resources the collector neither watches nor ever
	// deletes, patches or orphans. Defaults to events in the core group and
	// in events.k8s.io when the field is omitted; an explicit empty list
	// ignores nothing. At most 1000 entries, no two alike.
	// +kubebuilder:default={{group:"",resource:"events"},{group:"events.k8s.io",resource:"events"}}
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	IgnoredResources []GroupResource `json:"ignoredResources"`

	// Workers sizes the attempt-to-delete and attempt-to-orphan worker pools.
	// Defaults to 20 workers each.
	// +kubebuilder:default={}
	// +optional
	Workers Workers `json:"workers,omitempty"`

	// DefaultPropagation is the propagation policy the collector uses when it
	// deletes a dependent whose owners are all gone and that carries neither
	// the orphan nor the foregroundDeletion finalizer: Background, Foreground
	// or Orphan. Defaults to Background.
	// +kubebuilder:default=Background
	// +optional
	DefaultPropagation PropagationPolicy `json:"defaultPropagation,omitempty"`

	// PropagationOverrides replace defaultPropagation for the resources they
	// name (resource "*": every resource of the group; an exact resource wins
	// over its group's "*"), for example Foreground for apps/replicasets so
	// that a Deployment's Pods are gone before its ReplicaSet is. An object's
	// own orphan or foregroundDeletion finalizer still wins. At most 100
	// entries, no two for one group and resource.
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=100
	// +optional
	PropagationOverrides []PropagationOverride `json:"propagationOverrides,omitempty"`

	// Mode is Enforce (the collector deletes, patches and orphans) or DryRun
	// (it decides, logs and counts every decision, writes nothing, and
	// compares its decisions with what another collector does: see
	// status.shadow). Defaults to Enforce. Switching takes effect at once.
	// +kubebuilder:default=Enforce
	// +optional
	Mode Mode `json:"mode,omitempty"`

	// Protection keeps objects from ever being deleted by the collector.
	// +optional
	Protection Protection `json:"protection,omitempty"`

	// Diagnostics tunes what the collector reports. Defaults to {}: every
	// field at its default.
	// +kubebuilder:default={}
	// +optional
	Diagnostics Diagnostics `json:"diagnostics,omitempty"`

	// Collectors enables the API-level collectors besides the owner-reference
	// collector: terminated Pods, finished Jobs and stale
	// CertificateSigningRequests, each with kube-controller-manager's
	// semantics. Defaults to {}: every collector disabled. Enable one only
	// where kube-controller-manager does not run the corresponding controller.
	// +kubebuilder:default={}
	// +optional
	Collectors Collectors `json:"collectors,omitempty"`
}

// Collectors enables and configures the API-level collectors. Each is off
// unless enabled, and costs nothing while off: it watches the objects it
// needs (with a cache of its own, trimmed to the fields it reads) only while
// it is enabled, and only on the leader. DryRun and protection apply to
// them as to the owner-reference collector.
type Collectors struct {
	// TerminatedPods deletes terminated Pods beyond a threshold, Pods bound to
	// Nodes that no longer exist and terminating Pods that were never
	// scheduled or whose Node is out of service, as kube-controller-manager's
	// pod-garbage-collector-controller does. Defaults to {}: disabled, with
	// a threshold of 12500.
	// +kubebuilder:default={}
	// +optional
	TerminatedPods TerminatedPodsCollector `json:"terminatedPods,omitempty"`
	// FinishedJobs deletes Jobs whose ttlSecondsAfterFinished has passed since
	// they finished, as kube-controller-manager's
	// ttl-after-finished-controller does. Defaults to {}: disabled.
	// +kubebuilder:default={}
	// +optional
	FinishedJobs FinishedJobsCollector `json:"finishedJobs,omitempty"`
	// CertificateSigningRequests deletes approved, denied, failed, pending and
	// expired CertificateSigningRequests once they are old enough, as
	// kube-controller-manager's certificatesigningrequest-cleaner-controller
	// does. Defaults to {}: disabled, with kube-controller-manager's
	// durations (1h, 1h, 24h).
	// +kubebuilder:default={}
	// +optional
	CertificateSigningRequests CertificateSigningRequestsCollector `json:"certificateSigningRequests,omitempty"`
	// Expiry deletes objects of any watched resource once their time to
	// live has passed: the annotations ownergc.io/ttl (a duration after
	// creation: 36h, 7d, 2w) and ownergc.io/expires (an RFC 3339 time, or
	// a date meaning its midnight UTC), the earlier of the two, and for
	// objects that carry neither, its rules. Unlike the other collectors it
	// watches nothing of its own: it works from the graph ownergc keeps.
	// Defaults to {}: disabled.
	// +kubebuilder:default={}
	// +optional
	Expiry ExpiryCollector `json:"expiry,omitempty"`
}

// Defaults and bounds of the API-level collectors.
const (
	// DefaultTerminatedPodThreshold is kube-controller-manager's default
	// --terminated-pod-gc-threshold.
	DefaultTerminatedPodThreshold int32 = 12500
	// MaxTerminatedPodThreshold bounds terminatedPods.threshold.
	MaxTerminatedPodThreshold int32 = 500000
)

// TerminatedPodsCollector configures the terminated-Pod collector.
type TerminatedPodsCollector struct {
	// Enabled turns the collector on. Defaults to false.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled"`
	// Threshold is the number of terminated Pods (phase Succeeded or Failed)
	// the cluster keeps: beyond it the oldest are deleted, evicted Pods
	// first, then by creation time, as kube-controller-manager's
	// --terminated-pod-gc-threshold. 0 keeps every terminated Pod (the other
	// rules still apply). Defaults to 12500; 0 to 500000.
	// +kubebuilder:default=12500
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=500000
	// +optional
	Threshold *int32 `json:"threshold,omitempty"`
}

// FinishedJobsCollector configures the finished-Job collector.
type FinishedJobsCollector struct {
	// Enabled turns the collector on. Defaults to false.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled"`
}

// CertificateSigningRequestsCollector configures the
// CertificateSigningRequest collector. Each duration is "1h", "90m" or the
// like, from 1s to 8760h (365 days).
type CertificateSigningRequestsCollector struct {
	// Enabled turns the collector on. Defaults to false.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled"`
	// ApprovedAfter is how long a request stays once approved and issued a
	// certificate (counted from its Approved condition's lastUpdateTime); a
	// request whose certificate has expired is deleted at once.
	// Defaults to 1h; 1s to 8760h.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="approvedAfter must be a duration from 1s to 8760h (365 days), such as 1h"
	// +optional
	ApprovedAfter *metav1.Duration `json:"approvedAfter,omitempty"`
	// DeniedAfter is how long a request stays once denied or failed (counted
	// from its Denied or Failed condition's lastUpdateTime). Defaults to 1h;
	// 1s to 8760h.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="deniedAfter must be a duration from 1s to 8760h (365 days), such as 1h"
	// +optional
	DeniedAfter *metav1.Duration `json:"deniedAfter,omitempty"`
	// PendingAfter is how long a request stays pending (no condition,
	// counted from its creation), and how long it stays approved without a
	// certificate (counted from its Approved condition's lastUpdateTime).
	// Defaults to 24h; 1s to 8760h.
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="pendingAfter must be a duration from 1s to 8760h (365 days), such as 24h"
	// +optional
	PendingAfter *metav1.Duration `json:"pendingAfter,omitempty"`
}

// ExpiryCollector configures the expiry collector.
type ExpiryCollector struct {
	// Enabled turns the collector on. Defaults to false: the annotations
	// and rules are then read and explained, and nothing expires.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled"`
	// WarnBefore, when set, is how long before an object expires the
	// collector records a Warning event ExpiresSoon on it (once). A
	// duration such as "1h"; 1s to 8760h. Unset: no warning.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="warnBefore must be a duration from 1s to 8760h (365 days), such as 1h"
	// +optional
	WarnBefore *metav1.Duration `json:"warnBefore,omitempty"`
	// Rules give a time to live to the objects that carry neither
	// expiry annotation: an object of the rule's resource, in a namespace
	// the rule selects, expires after the rule's duration from its
	// creation. The first rule that matches an object decides.
	// At most 100 rules. A rule whose resource matches no served resource
	// expires nothing: the ExpiryRulesResolved condition names it.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Rules []ExpiryRule `json:"rules,omitempty"`
}

// ExpiryRule gives a time to live to the objects of a resource in some
// namespaces. A rule selects namespaces by name, by label, or both (both:
// a namespace must be named and match the selector); an empty
// namespaceSelector ({}) selects every namespace. A rule for namespaces
// selects Namespaces by their own name and labels. Cluster-scoped objects
// of any other resource are never selected by a rule: give them an
// annotation.
// +kubebuilder:validation:XValidation:rule="has(self.namespaces) || has(self.namespaceSelector)",message="a rule selects namespaces: give namespaces, a namespaceSelector, or both (namespaceSelector: {} selects every namespace)",fieldPath=".namespaces",reason=FieldValueRequired
type ExpiryRule struct {
	// Group and Resource name the resource whose objects the rule expires
	// (resource "*": every resource of the group), as in ignoredResources.
	GroupResource `json:",inline"`
	// Namespaces lists the namespaces whose objects the rule selects.
	// At most 100 names (select more by label), at least one when given.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Namespaces []NamespaceName `json:"namespaces,omitempty"`
	// NamespaceSelector selects the namespaces whose objects the rule
	// selects, by their labels ({matchLabels: {env: preview}}); {} selects
	// every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// After is how long after its creation an object the rule selects
	// expires: a duration such as "168h" (7 days); 1s to 87600h (ten
	// years). Required.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('87600h')",message="after must be a duration from 1s to 87600h (ten years), such as 168h for 7 days"
	After metav1.Duration `json:"after"`
}

// Mode says whether the collector writes.
// +kubebuilder:validation:Enum=Enforce;DryRun
type Mode string

const (
	// ModeEnforce: the collector deletes, patches and orphans.
	ModeEnforce Mode = "Enforce"
	// ModeDryRun: the collector decides but writes nothing.
	ModeDryRun Mode = "DryRun"
)

// PropagationOverride is the propagation to use for one resource, or for
// every resource of a group.
type PropagationOverride struct {
	GroupResource `json:",inline"`
	// Propagation is Background, Foreground or Orphan. Required.
	Propagation PropagationPolicy `json:"propagation"`
}

// Protection keeps objects from ever being deleted by the collector: when it
// would delete one (its owners are gone, or it blocks an owner's foreground
// deletion) it removes the references to those owners instead, so that the
// object stays without them — as if they had been deleted with
// propagationPolicy=Orphan — and records a Normal event Protected. Objects
// annotated ownergc.io/protected: "true" are protected too.
type Protection struct {
	// Namespaces lists the namespaces whose objects are protected.
	// At most 1000 names, each a DNS label (at most 63 lowercase letters,
	// digits and '-').
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Namespaces []NamespaceName `json:"namespaces,omitempty"`
}

// NamespaceName is the name of a namespace: a DNS label, 1 to 63 characters
// (lowercase letters, digits and '-', starting and ending with a letter or
// digit).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a namespace name must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
type NamespaceName string

// Diagnostics tunes what the collector reports.
type Diagnostics struct {
	// BlockedDeletionAfter is how long a foreground or orphaning deletion may
	// last before the collector reports it blocked (a Warning event
	// DeletionBlocked on the owner, status.blockedDeletions, the metrics).
	// A duration such as "5m" or "90s". Defaults to 5m; 1s to 24h.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="blockedDeletionAfter must be a duration from 1s to 24h, such as 5m"
	// +optional
	BlockedDeletionAfter *metav1.Duration `json:"blockedDeletionAfter,omitempty"`
	// ShadowGracePeriod is how long, in DryRun, a decision of the collector
	// may wait for another collector to carry it out before it counts as a
	// disagreement. Defaults to 2m; 1s to 24h.
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="shadowGracePeriod must be a duration from 1s to 24h, such as 2m"
	// +optional
	ShadowGracePeriod *metav1.Duration `json:"shadowGracePeriod,omitempty"`
}

// Condition types of a GCPolicy.
const (
	// ConditionReady is True when the policy is in force, every monitored
	// resource has synced into the graph and every enabled API-level
	// collector has synced its cache.
	ConditionReady = "Ready"
	// ConditionDegraded is True while some resources cannot be watched; they
	// are listed in status.failedResources. Collection of every other
	// resource goes on meanwhile.
	ConditionDegraded = "Degraded"
	// ConditionIgnoredResourcesResolved is True when every entry of
	// spec.ignoredResources matches a resource the API server serves
	// (deletable or not; resource "*" matches when the group is served), and
	// False while some entries match none: those ignore nothing, and the
	// message names them. Entries of a group whose discovery fails are not
	// reported, since it cannot be told what the group serves.
	ConditionIgnoredResourcesResolved = "IgnoredResourcesResolved"
	// ConditionExpiryRulesResolved is True when every rule of
	// spec.collectors.expiry.rules matches a resource the API server
	// serves (or there is none), and False while some match none: those
	// expire nothing, and the message names them.
	ConditionExpiryRulesResolved = "ExpiryRulesResolved"
)

// Condition reasons of a GCPolicy.
const (
	// ReasonSynced (Ready=True): the policy is in force and the graph has
	// synced every monitored resource.
	ReasonSynced = "Synced"
	// ReasonSyncing (Ready=False): the policy is being put in force or some
	// monitored resources, or the caches of some enabled API-level
	// collectors, have not synced yet.
	ReasonSyncing = "Syncing"
	// ReasonApplyFailed (Ready=False): the policy cannot be put in force.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonResourcesUnavailable (Degraded=True): some resources cannot be
	// discovered or watched.
	ReasonResourcesUnavailable = "ResourcesUnavailable"
	// ReasonAllResourcesAvailable (Degraded=False): every resource that should
	// be watched is watched.
	ReasonAllResourcesAvailable = "AllResourcesAvailable"
	// ReasonAllEntriesMatched (IgnoredResourcesResolved=True): every entry of
	// spec.ignoredResources matches a served resource.
	ReasonAllEntriesMatched = "AllEntriesMatched"
	// ReasonUnmatchedEntries (IgnoredResourcesResolved=False): some entries of
	// spec.ignoredResources match no served resource; the message names them.
	ReasonUnmatchedEntries = "UnmatchedEntries"
	// ReasonDiscovering (IgnoredResourcesResolved=Unknown,
	// ExpiryRulesResolved=Unknown): the manager has not discovered the
	// served resources yet.
	ReasonDiscovering = "Discovering"
	// ReasonAllRulesMatched (ExpiryRulesResolved=True): every rule of
	// spec.collectors.expiry.rules matches a served resource.
	ReasonAllRulesMatched = "AllRulesMatched"
	// ReasonUnmatchedRules (ExpiryRulesResolved=False): some rules match
	// no served resource; the message names them.
	ReasonUnmatchedRules = "UnmatchedRules"
)

// The manager creates the GCPolicy "default" with the defaults when none
// exists (and again when it is deleted), and marks it with this label and
// annotation.
const (
	// LabelManagedBy is the well-known label naming the tool that manages an
	// object; ManagedByOwnergc is its value on a GCPolicy the manager
	// created.
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedByOwnergc = "ownergc"
	// AnnotationDescription is the well-known annotation describing an
	// object; CreatedWithDefaultsDescription is its value on a GCPolicy the
	// manager created.
	AnnotationDescription          = "kubernetes.io/description"
	CreatedWithDefaultsDescription = "Created by the ownergc manager with the built-in defaults because no GCPolicy existed. " +
		"Edit it to configure ownergc; delete it to restore the defaults (the manager creates it again)."
)

// FailedResource is a resource the collector cannot watch, with the reason.
type FailedResource struct {
	// Group of the resource; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// Version of the resource, when known.
	// +optional
	Version string `json:"version,omitempty"`
	// Resource is the plural resource name; empty when discovery of the whole
	// group-version failed.
	// +optional
	Resource string `json:"resource,omitempty"`
	// Message says what went wrong.
	Message string `json:"message"`
}

// GraphStatus summarises the ownership graph.
type GraphStatus struct {
	// Nodes is the number of objects in the graph, virtual ones included.
	// +optional
	Nodes int64 `json:"nodes"`
	// VirtualNodes is the number of owners referenced by some object that the
	// collector has not observed yet.
	// +optional
	VirtualNodes int64 `json:"virtualNodes"`
}

// GCPolicyStatus is what the manager reports about the policy in force.
type GCPolicyStatus struct {
	// ObservedGeneration is the generation of the spec the manager has put in
	// force.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Degraded and IgnoredResourcesResolved.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// MonitoredResources is the number of resources the collector watches.
	// +optional
	MonitoredResources int32 `json:"monitoredResources"`

	// FailedResources lists the resources that cannot be discovered or
	// watched, with the error.
	// +optional
	FailedResources []FailedResource `json:"failedResources,omitempty"`

	// Graph summarises the ownership graph.
	// +optional
	Graph GraphStatus `json:"graph"`

	// BlockedDeletions is the number of foreground and orphaning deletions
	// that have lasted longer than spec.diagnostics.blockedDeletionAfter.
	// +optional
	BlockedDeletions int32 `json:"blockedDeletions"`

	// OldestBlockedDeletion is the one of those that has lasted longest.
	// +optional
	OldestBlockedDeletion *BlockedDeletion `json:"oldestBlockedDeletion,omitempty"`

	// Shadow reports, in DryRun, how the collector's decisions compare with
	// what another collector did.
	// +optional
	Shadow *ShadowStatus `json:"shadow,omitempty"`

	// Collectors reports the API-level collectors (spec.collectors), as
	// the leader runs them.
	// +optional
	Collectors *CollectorsStatus `json:"collectors,omitempty"`

	// LastSyncTime is when the status was last refreshed from the engine.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
}

// CollectorsStatus reports each API-level collector.
type CollectorsStatus struct {
	// TerminatedPods reports the terminated-Pod collector.
	TerminatedPods CollectorStatus `json:"terminatedPods"`
	// FinishedJobs reports the finished-Job collector.
	FinishedJobs CollectorStatus `json:"finishedJobs"`
	// CertificateSigningRequests reports the CertificateSigningRequest
	// collector.
	CertificateSigningRequests CollectorStatus `json:"certificateSigningRequests"`
	// Expiry reports the expiry collector.
	// +optional
	Expiry ExpiryCollectorStatus `json:"expiry"`
}

// ExpiryCollectorStatus reports the expiry collector.
type ExpiryCollectorStatus struct {
	CollectorStatus `json:",inline"`
	// Scheduled is the number of objects whose expiry is scheduled: they
	// carry an annotation or match a rule, and expire later.
	// +optional
	Scheduled int64 `json:"scheduled"`
	// Invalid is the number of objects whose expiry annotations cannot be
	// read (each has a Warning event InvalidExpiry): they do not expire.
	// +optional
	Invalid int64 `json:"invalid"`
}

// CollectorStatus reports one API-level collector.
type CollectorStatus struct {
	// Enabled is whether the policy in force enables it.
	Enabled bool `json:"enabled"`
	// Synced is whether its cache has listed the objects it watches (the
	// Ready condition waits for it).
	// +optional
	Synced bool `json:"synced,omitempty"`
	// LastRun is when it last examined the objects it collects.
	// +optional
	LastRun *metav1.Time `json:"lastRun,omitempty"`
	// Deleted is the number of objects it deleted since this manager became
	// the leader.
	Deleted int64 `json:"deleted"`
	// DryRunDeletions is the number of deletions it decided but did not make
	// because the mode is DryRun, since this manager became the leader.
	// +optional
	DryRunDeletions int64 `json:"dryRunDeletions,omitempty"`
}

// ObjectReference names an object.
type ObjectReference struct {
	// Group of the object's resource; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// Resource is the plural resource name, when known.
	// +optional
	Resource string `json:"resource,omitempty"`
	// Kind of the object.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Namespace of the object; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
}

// BlockedDeletion is a deletion that lasts.
type BlockedDeletion struct {
	ObjectReference `json:",inline"`
	// Since is when the deletion started (the object's deletionTimestamp).
	Since metav1.Time `json:"since"`
}

// ShadowStatus compares the collector's DryRun decisions with what another
// collector did.
type ShadowStatus struct {
	// Since is when DryRun started.
	Since metav1.Time `json:"since"`
	// Agreed counts the decisions another collector carried out, and the
	// deletions it made that the collector would have made too.
	Agreed int64 `json:"agreed"`
	// Disagreed counts the decisions nobody carried out within
	// spec.diagnostics.shadowGracePeriod, and the deletions another
	// collector made that the collector would not have.
	Disagreed int64 `json:"disagreed"`
	// Agreement is agreed / (agreed + disagreed), as a percentage ("100%"),
	// or "-" before any decision.
	Agreement string `json:"agreement"`
	// LastDisagreement is the latest disagreement.
	// +optional
	LastDisagreement *ShadowDisagreement `json:"lastDisagreement,omitempty"`
}

// ShadowDisagreement is one decision on which another collector and the
// collector differ.
type ShadowDisagreement struct {
	ObjectReference `json:",inline"`
	// Action is what the decision was about: delete, orphan,
	// removeReferences or removeFinalizer.
	Action string `json:"action"`
	// Message says what happened and what the collector would have done.
	Message string `json:"message"`
	// Time is when it was found.
	Time metav1.Time `json:"time"`
}

// GCPolicy configures ownergc, the garbage collector. It is a cluster-wide
// singleton named "default"; the manager creates it with the defaults when
// none exists, so deleting it restores the defaults.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gcp,categories=ownergc
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Monitored",type=integer,JSONPath=`.status.monitoredResources`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.graph.nodes`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.blockedDeletions`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Agreement",type=string,JSONPath=`.status.shadow.agreement`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'default'",message="GCPolicy is a singleton: its name must be 'default'",fieldPath=".metadata.name",reason=FieldValueInvalid
type GCPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec configures the collector. Defaults to {}: every field at its
	// default.
	// +kubebuilder:default={}
	// +optional
	Spec   GCPolicySpec   `json:"spec,omitempty"`
	Status GCPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GCPolicyList contains a list of GCPolicy.
type GCPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GCPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GCPolicy{}, &GCPolicyList{})
}
