package monitor

import (
	"strconv"
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Compact is how a listed object waits in a monitor's reflector's
// temporary store until the graph observes it, and how the monitor reads a
// watched one: exactly what the collector reads of an object (name,
// namespace, UID, the exact resourceVersion, the deletion timestamp,
// finalizers, owner references, whether it is protected) and nothing else.
// The store's transformer turns every PartialObjectMetadata of a list into
// one, so a list of many objects is not held in full while it arrives.
//
// The common object (one owner or none, not being deleted, no finalizers, a
// numeric resourceVersion) is 64 bytes plus its name and UID strings and a
// 48-byte owner reference: namespaces, owner kinds, apiVersions and UIDs and
// finalizer sets are interned, a resourceVersion that is a number in
// canonical decimal form is kept as one (any other is kept as sent: it is
// opaque), and the rest sits behind a pointer only the objects that need it
// allocate.
//
// A Compact is immutable, and so safe to share between goroutines: its
// setters (it implements metav1.Object, which the store's key function
// needs) do nothing. PartialObjectMetadata returns a fresh copy in the usual
// form.
type Compact struct {
	name      string
	uid       types.UID
	namespace unique.Handle[string]
	// rv is the resourceVersion when it is a number in canonical decimal
	// form; zero when it is not (more.resourceVersion has it then).
	rv uint64
	// owner is the owner reference of an object with exactly one.
	owner *compactRef
	// more holds what few objects have; nil for most.
	more *compactMore
}

// compactMore is the part of a Compact that most objects do without.
type compactMore struct {
	// resourceVersion, when the Compact's rv is zero, exactly as sent.
	resourceVersion string
	// deletion is the deletionTimestamp in Unix nanoseconds, when
	// compactDeleting is set.
	deletion int64
	// finalizers, when compactFinalizers is set, is the finalizers joined
	// by NUL (which a finalizer name cannot contain).
	finalizers unique.Handle[string]
	// owners are the owner references of an object with more than one.
	owners []compactRef
	flags  uint8
}

// compactMore flags.
const (
	compactDeleting uint8 = 1 << iota
	compactFinalizers
	compactProtected
)

// compactRef is an owner reference: UID, name, interned apiVersion and
// kind, and the two optional booleans as bits.
type compactRef struct {
	uid   types.UID
	name  string
	kind  unique.Handle[refKind]
	flags uint8
}

// refKind is the apiVersion and kind an owner reference names.
type refKind struct{ apiVersion, kind string }

// compactRef flags: whether controller and blockOwnerDeletion are set, and
// their values.
const (
	refControllerSet uint8 = 1 << iota
	refController
	refBlockSet
	refBlock
)

// finalizerSeparator joins finalizers: a finalizer is a qualified name,
// which cannot contain it.
const finalizerSeparator = "\x00"

// compact returns the compact form of o, sharing its strings.
func compact(o *metav1.PartialObjectMetadata) *Compact {
	c := &Compact{name: o.Name, uid: o.UID, namespace: unique.Make(o.Namespace)}
	var more compactMore
	if c.rv = numericRV(o.ResourceVersion); c.rv == 0 {
		more.resourceVersion = o.ResourceVersion
	}
	if o.DeletionTimestamp != nil {
		more.flags |= compactDeleting
		more.deletion = o.DeletionTimestamp.UnixNano()
	}
	if len(o.Finalizers) > 0 {
		more.flags |= compactFinalizers
		more.finalizers = unique.Make(strings.Join(o.Finalizers, finalizerSeparator))
	}
	if o.Annotations[ownergcv1alpha1.ProtectedAnnotation] == trueValue {
		more.flags |= compactProtected
	}
	switch refs := o.OwnerReferences; {
	case len(refs) == 1:
		r := compactRefOf(&refs[0])
		c.owner = &r
	case len(refs) > 1:
		more.owners = make([]compactRef, len(refs))
		for i := range refs {
			more.owners[i] = compactRefOf(&refs[i])
		}
	}
	if more.resourceVersion != "" || more.flags != 0 || more.owners != nil {
		c.more = &more
	}
	return c
}

func compactRefOf(r *metav1.OwnerReference) compactRef {
	cr := compactRef{uid: types.UID(intern(string(r.UID))), name: r.Name,
		kind: unique.Make(refKind{apiVersion: r.APIVersion, kind: r.Kind})}
	if r.Controller != nil {
		cr.flags |= refControllerSet
		if *r.Controller {
			cr.flags |= refController
		}
	}
	if r.BlockOwnerDeletion != nil {
		cr.flags |= refBlockSet
		if *r.BlockOwnerDeletion {
			cr.flags |= refBlock
		}
	}
	return cr
}

// numericRV returns rv as a number if it is one in canonical decimal form
// (so that formatting the number gives rv back exactly), zero otherwise.
func numericRV(rv string) uint64 {
	if rv == "" || rv[0] == '0' || len(rv) > 20 {
		return 0
	}
	for i := 0; i < len(rv); i++ {
		if rv[i] < '0' || rv[i] > '9' {
			return 0
		}
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func (c *Compact) flags() uint8 {
	if c.more == nil {
		return 0
	}
	return c.more.flags
}

// PartialObjectMetadata returns the object as the collector reads it: a new
// PartialObjectMetadata of kind gvk with the compact object's fields, the
// caller's to keep or modify.
func (c *Compact) PartialObjectMetadata(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name:              c.name,
		Namespace:         c.GetNamespace(),
		UID:               c.uid,
		ResourceVersion:   c.GetResourceVersion(),
		DeletionTimestamp: c.GetDeletionTimestamp(),
		Finalizers:        c.GetFinalizers(),
		OwnerReferences:   c.appendOwnerReferences(nil, true),
		Annotations:       c.GetAnnotations(),
	}}
	o.SetGroupVersionKind(gvk)
	return o
}

// appendOwnerReferences appends the owner references to refs. With fresh,
// each optional boolean is a new variable; otherwise they point to shared
// ones that must not be modified.
func (c *Compact) appendOwnerReferences(refs []metav1.OwnerReference, fresh bool) []metav1.OwnerReference {
	if c.owner != nil {
		return append(refs, c.owner.ownerReference(fresh))
	}
	if c.more == nil {
		return refs
	}
	for i := range c.more.owners {
		refs = append(refs, c.more.owners[i].ownerReference(fresh))
	}
	return refs
}

func (r *compactRef) ownerReference(fresh bool) metav1.OwnerReference {
	boolPtr := func(v bool) *bool {
		switch {
		case fresh:
			return &v
		case v:
			return &sharedTrue
		default:
			return &sharedFalse
		}
	}
	k := r.kind.Value()
	ref := metav1.OwnerReference{APIVersion: k.apiVersion, Kind: k.kind, Name: r.name, UID: r.uid}
	if r.flags&refControllerSet != 0 {
		ref.Controller = boolPtr(r.flags&refController != 0)
	}
	if r.flags&refBlockSet != 0 {
		ref.BlockOwnerDeletion = boolPtr(r.flags&refBlock != 0)
	}
	return ref
}

// sharedTrue and sharedFalse back the owner references handed to the graph,
// which only reads them.
var sharedTrue, sharedFalse = true, false

// deleting reports whether the object has a deletionTimestamp.
func (c *Compact) deleting() bool { return c.flags()&compactDeleting != 0 }

// The metav1.Object getters.

func (c *Compact) GetName() string                               { return c.name }
func (c *Compact) GetGenerateName() string                       { return "" }
func (c *Compact) GetUID() types.UID                             { return c.uid }
func (c *Compact) GetGeneration() int64                          { return 0 }
func (c *Compact) GetSelfLink() string                           { return "" }
func (c *Compact) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (c *Compact) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (c *Compact) GetLabels() map[string]string                  { return nil }
func (c *Compact) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// GetNamespace returns the interned namespace.
func (c *Compact) GetNamespace() string {
	if c.namespace == (unique.Handle[string]{}) {
		return ""
	}
	return c.namespace.Value()
}

// GetResourceVersion returns the resourceVersion exactly as the API server
// sent it.
func (c *Compact) GetResourceVersion() string {
	if c.rv != 0 {
		return strconv.FormatUint(c.rv, 10)
	}
	if c.more == nil {
		return ""
	}
	return c.more.resourceVersion
}

// GetDeletionTimestamp returns a new copy of the deletion timestamp.
func (c *Compact) GetDeletionTimestamp() *metav1.Time {
	if !c.deleting() {
		return nil
	}
	t := metav1.NewTime(time.Unix(0, c.more.deletion))
	return &t
}

// GetAnnotations returns the protected annotation of a protected object (a
// map shared by all: never modify it), nil otherwise.
func (c *Compact) GetAnnotations() map[string]string {
	if c.flags()&compactProtected != 0 {
		return protected
	}
	return nil
}

// GetFinalizers returns a new slice of the finalizers.
func (c *Compact) GetFinalizers() []string {
	if c.flags()&compactFinalizers == 0 {
		return nil
	}
	return strings.Split(c.more.finalizers.Value(), finalizerSeparator)
}

// GetOwnerReferences returns a new slice of the owner references.
func (c *Compact) GetOwnerReferences() []metav1.OwnerReference {
	return c.appendOwnerReferences(nil, true)
}

// The metav1.Object setters do nothing: a Compact is immutable.

func (c *Compact) SetNamespace(string)                          {}
func (c *Compact) SetName(string)                               {}
func (c *Compact) SetGenerateName(string)                       {}
func (c *Compact) SetUID(types.UID)                             {}
func (c *Compact) SetResourceVersion(string)                    {}
func (c *Compact) SetGeneration(int64)                          {}
func (c *Compact) SetSelfLink(string)                           {}
func (c *Compact) SetCreationTimestamp(metav1.Time)             {}
func (c *Compact) SetDeletionTimestamp(*metav1.Time)            {}
func (c *Compact) SetDeletionGracePeriodSeconds(*int64)         {}
func (c *Compact) SetLabels(map[string]string)                  {}
func (c *Compact) SetAnnotations(map[string]string)             {}
func (c *Compact) SetFinalizers([]string)                       {}
func (c *Compact) SetOwnerReferences([]metav1.OwnerReference)   {}
func (c *Compact) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// GetObjectKind implements runtime.Object: a Compact has no type metadata.
func (c *Compact) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: an immutable object is its own
// copy.
func (c *Compact) DeepCopyObject() runtime.Object { return c }

var (
	_ metav1.Object  = (*Compact)(nil)
	_ runtime.Object = (*Compact)(nil)
)
