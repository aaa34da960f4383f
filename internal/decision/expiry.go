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

package decision

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
	"github.com/ownergc/ownergc/internal/policy"
)

// Expiry: a time to live for any object. An object expires at the time its
// annotations give — ownergc.io/ttl, a duration after its creation, and
// ownergc.io/expires, a time; the earlier of the two — or, when it carries
// neither, at the time the first rule of the GCPolicy's
// spec.collectors.expiry that selects it gives. DecideExpiry says when,
// and what the expiry collector (internal/expiry) does then; the
// collector acts on it, /explain and `kubectl ownergc why` say it
// (Decision.Expiry), and `kubectl ownergc expiring` lists by it.
//
// An annotation that cannot be read is never a reason to delete: an object
// whose expiry annotations are all unreadable does not expire, by them or
// by a rule. Protection wins over expiry; an ignored resource never
// expires; in DryRun the deletion is decided and not made.

// The forms the expiry annotations accept, in the words of the
// InvalidExpiry event and of explanations.
const (
	AcceptedTTL     = "a duration after the object's creation, such as 36h, 90m, 7d or 2w (units s, m, h, d for 24h and w for 7d, combined as 1d12h)"
	AcceptedExpires = "an RFC 3339 time such as 2026-07-01T18:00:00Z or 2026-07-01T20:00:00+02:00, or a date such as 2026-07-01 (its midnight UTC)"
)

// maxTTL bounds a ttl annotation: beyond, it is an error, not an overflow.
const maxTTL = 100 * 365 * 24 * time.Hour

// ttlUnits are the units of a ttl annotation.
var ttlUnits = []struct {
	name string
	d    time.Duration
}{
	{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"ms", time.Millisecond},
	{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour},
}

// ParseTTL reads an ownergc.io/ttl annotation: a positive Go duration
// ("36h", "1h30m") whose units may also be d (24 hours) and w (7 days):
// "7d", "2w", "1w2d", "1d12h". Decimal numbers are accepted ("1.5d"), as
// Go durations accept them; signs and spaces are not.
func ParseTTL(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("it is empty")
	}
	rest := s
	var total float64
	for rest != "" {
		i := 0
		for i < len(rest) && isNumeral(rest[i]) {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("%q does not start with a number", rest)
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", rest[:i])
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && !isNumeral(rest[j]) {
			j++
		}
		var unit time.Duration
		for _, u := range ttlUnits {
			if rest[:j] == u.name {
				unit = u.d
				break
			}
		}
		switch {
		case j == 0:
			return 0, fmt.Errorf("%s has no unit", s)
		case unit == 0:
			return 0, fmt.Errorf("unknown unit %q", rest[:j])
		}
		rest = rest[j:]
		total += n * float64(unit)
		if total > float64(maxTTL) {
			return 0, fmt.Errorf("it is longer than %d years", int(maxTTL/(365*24*time.Hour)))
		}
	}
	if total < float64(time.Second) {
		return 0, errors.New("it is shorter than one second")
	}
	return time.Duration(total), nil
}

// isNumeral reports whether c is part of a number: a digit or a point.
func isNumeral(c byte) bool { return c >= '0' && c <= '9' || c == '.' }

// ParseExpires reads an ownergc.io/expires annotation: an RFC 3339 time
// ("2026-07-01T18:00:00Z", fractional seconds allowed), or a date
// ("2026-07-01"), which means its midnight UTC.
func ParseExpires(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if s == "" {
		return time.Time{}, errors.New("it is empty")
	}
	return time.Time{}, errors.New("it is neither an RFC 3339 time nor a date")
}

// ExpiryState is what expiry does with an object.
type ExpiryState string

const (
	// ExpiryScheduled: it expires later, at At.
	ExpiryScheduled ExpiryState = "Scheduled"
	// ExpiryDue: its time has come: the expiry collector deletes it, with
	// Propagation (in DryRun it only logs and counts it).
	ExpiryDue ExpiryState = "Due"
	// ExpiryInvalid: it carries expiry annotations and none can be read:
	// it does not expire (a Warning event InvalidExpiry says why).
	ExpiryInvalid ExpiryState = "Invalid"
	// ExpiryDisabled: it would expire, and the GCPolicy does not enable
	// the expiry collector.
	ExpiryDisabled ExpiryState = "Disabled"
	// ExpiryIgnored: it would expire, and its resource is ignored by the
	// GCPolicy: it is never written.
	ExpiryIgnored ExpiryState = "Ignored"
	// ExpiryProtected: it would expire, and the GCPolicy protects it: it
	// is never deleted.
	ExpiryProtected ExpiryState = "Protected"
	// ExpiryDeleting: it is being deleted already.
	ExpiryDeleting ExpiryState = "Deleting"
	// ExpiryUnknown: whether a rule selects it depends on the labels of
	// its namespace, which could not be read.
	ExpiryUnknown ExpiryState = "Unknown"
)

// ExpirySource says what gives an object its expiry time.
type ExpirySource string

const (
	// ByTTL: the ownergc.io/ttl annotation; ByExpires:
	// ownergc.io/expires; ByRule: a rule of the GCPolicy.
	ByTTL     ExpirySource = "TTLAnnotation"
	ByExpires ExpirySource = "ExpiresAnnotation"
	ByRule    ExpirySource = "Rule"
)

// InvalidAnnotation is an expiry annotation that cannot be read.
type InvalidAnnotation struct {
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
	// Error says why; Accepted the forms it accepts.
	Error    string `json:"error"`
	Accepted string `json:"accepted"`
}

// Expiry is when an object expires, and what the expiry collector does
// then.
type Expiry struct {
	State ExpiryState `json:"state"`
	// At is when it expires (none for Invalid and Unknown); By what gives
	// it: the annotation's Value, or the Rule's number (from 1).
	At    *metav1.Time `json:"at,omitempty"`
	By    ExpirySource `json:"by,omitempty"`
	Value string       `json:"value,omitempty"`
	Rule  int          `json:"rule,omitempty"`
	// Invalid are its expiry annotations that cannot be read: never a
	// reason to delete.
	Invalid []InvalidAnnotation `json:"invalid,omitempty"`
	// Propagation is the deletion's (Due, Scheduled); PropagationFrom says
	// why.
	Propagation     metav1.DeletionPropagation `json:"propagation,omitempty"`
	PropagationFrom Source                     `json:"propagationFrom,omitempty"`
	// Protection says why a Protected object is (ProtectedByNamespace,
	// ProtectedByAnnotation).
	Protection Permission `json:"protection,omitempty"`
	// DryRun: the policy's mode is DryRun: the deletion is logged and
	// counted, not made.
	DryRun bool `json:"dryRun,omitempty"`
	// PolicyUnknown: the policy in force was not known: the defaults
	// (expiry disabled) were assumed.
	PolicyUnknown bool `json:"policyUnknown,omitempty"`

	// What the words say; an Expiry decoded from JSON has none of it.
	now       time.Time
	rule      *policy.ExpiryRule
	object    Object
	labelsErr error
}

// ExpiryContext is what the expiry part of a decision needs besides the
// object and the policy.
type ExpiryContext struct {
	// NamespaceLabels returns the labels of the object's namespace, when a
	// rule selects namespaces by their labels (a Namespace's own labels are
	// Object.Labels); called at most once, and only then. nil, or an
	// error: not known.
	NamespaceLabels func() (map[string]string, error)
	// Now is when the decision is made; zero: time.Now().
	Now time.Time
}

// Due reports whether the expiry collector deletes the object now (in
// DryRun: would).
func (e *Expiry) Due() bool { return e != nil && e.State == ExpiryDue }

// When returns when the object expires, zero when it has no time.
func (e *Expiry) When() time.Time {
	if e == nil || e.At == nil {
		return time.Time{}
	}
	return e.At.Time
}

// ExpiryOf says when the object in o expires by its annotations or the
// policy's rules, and what the expiry collector does then: its rules, in
// order (the first that applies decides), are
//
//   - neither a readable annotation nor a rule: it does not expire (nil);
//     an annotation that cannot be read means it does not expire at all
//     (Invalid), not even by a rule;
//   - its resource is ignored: never (Ignored);
//   - the policy does not enable expiry: never (Disabled);
//   - being deleted already: nothing to do (Deleting);
//   - protected (Permit): never (Protected);
//   - a rule might select it, by the labels of a namespace that could not
//     be read: nothing (Unknown);
//   - its time has passed: deleted now, with the propagation the
//     collector would use (Due; in DryRun logged and counted);
//   - otherwise later (Scheduled).
//
// p nil means the policy is not known: the defaults (expiry disabled).
func ExpiryOf(o Object, p *policy.Policy, c ExpiryContext) *Expiry {
	e := &Expiry{now: c.Now, object: o}
	if e.now.IsZero() {
		e.now = time.Now()
	}
	if p == nil {
		p, e.PolicyUnknown = policy.Defaults(), true
	}
	if !e.fromAnnotations(o) {
		switch {
		case len(e.Invalid) > 0:
		case !e.fromRules(o, p, c):
			return nil
		}
	}
	switch {
	case p.Ignores(o.Resource):
		e.State = ExpiryIgnored
	case !p.Collectors.Expiry.Enabled:
		e.State = ExpiryDisabled
	case len(e.Invalid) > 0 && e.At == nil:
		e.State = ExpiryInvalid
	case o.Deleting:
		e.State = ExpiryDeleting
	case e.labelsErr != nil:
		e.State = ExpiryUnknown
	default:
		if perm := Permit(p, o.Namespace, o.Annotations); perm.Protected() {
			e.State, e.Protection = ExpiryProtected, perm
			break
		}
		e.Propagation, e.PropagationFrom = Propagation(o.Finalizers, p, o.Resource)
		e.State = ExpiryScheduled
		if !e.At.After(e.now) {
			e.State, e.DryRun = ExpiryDue, p.DryRun
		}
	}
	return e
}

// fromAnnotations sets the expiry time its annotations give, the earlier
// of the two; it reports whether one could be read, and records those
// that cannot.
func (e *Expiry) fromAnnotations(o Object) bool {
	found := false
	set := func(at time.Time, by ExpirySource, value string) {
		if !found || at.Before(e.At.Time) {
			t := metav1.NewTime(at)
			e.At, e.By, e.Value = &t, by, value
		}
		found = true
	}
	if v, ok := o.Annotations[ownergcv1alpha1.TTLAnnotation]; ok {
		if d, err := ParseTTL(v); err != nil {
			e.Invalid = append(e.Invalid, InvalidAnnotation{Annotation: ownergcv1alpha1.TTLAnnotation, Value: v, Error: err.Error(), Accepted: AcceptedTTL})
		} else {
			set(o.Created.Add(d), ByTTL, v)
		}
	}
	if v, ok := o.Annotations[ownergcv1alpha1.ExpiresAnnotation]; ok {
		if t, err := ParseExpires(v); err != nil {
			e.Invalid = append(e.Invalid, InvalidAnnotation{Annotation: ownergcv1alpha1.ExpiresAnnotation, Value: v, Error: err.Error(), Accepted: AcceptedExpires})
		} else {
			set(t, ByExpires, v)
		}
	}
	return found
}

// fromRules sets the expiry time the first rule that selects the object
// gives; it reports whether one does, or might (its namespace's labels
// could not be read: labelsErr).
func (e *Expiry) fromRules(o Object, p *policy.Policy, c ExpiryContext) bool {
	namespace, nsLabels, known := o.Namespace, map[string]string(nil), false
	if o.Namespace == "" {
		if o.Resource != namespacesResource {
			return false // a rule selects no other cluster-scoped object
		}
		namespace, nsLabels, known = o.Name, o.Labels, true
	}
	rules := p.Collectors.Expiry.Rules
	for i := range rules {
		r := &rules[i]
		if !r.Matches(o.Resource) || !r.SelectsName(namespace) {
			continue
		}
		if r.NeedsLabels() {
			if !known {
				known = true
				if c.NamespaceLabels == nil {
					e.labelsErr = errors.New("not read")
				} else if nsLabels, e.labelsErr = c.NamespaceLabels(); e.labelsErr != nil {
					nsLabels = nil
				}
			}
			if e.labelsErr != nil {
				e.By, e.Rule, e.rule = ByRule, i+1, r
				return true
			}
			if !r.Selector.Matches(labels.Set(nsLabels)) {
				continue
			}
		}
		t := metav1.NewTime(o.Created.Add(r.After))
		e.At, e.By, e.Rule, e.rule = &t, ByRule, i+1, r
		return true
	}
	return false
}

var namespacesResource = schema.GroupResource{Resource: "namespaces"}
