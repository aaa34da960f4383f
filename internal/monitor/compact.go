package monitor

import (
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	ownergcv1alpha1 "github.com/ownergc/ownergc/api/v1alpha1"
)

// Compact is how the informer store holds a watched object: exactly what the
// collector reads from "the cached object" (name, namespace, UID, the exact
// resourceVersion string, the deletion timestamp, finalizers, owner
// references, whether it is protected) and nothing else, in about a third of
// a PartialObjectMetadata's memory: namespaces, owner kinds and apiVersions,
// owner UIDs and finalizer sets are interned, flags are bits. Transform turns
// every PartialObjectMetadata the informers receive into one, so each object
// is held once in this form; the graph's node shares its strings.
//
// A Compact is immutable, and so safe to share between goroutines: its
// setters (it implements metav1.Object, which the informer's key function
// and stores need) do nothing. PartialObjectMetadata returns a fresh copy in
// the usual form for the collector.
type Compact struct {
	name      string
	namespace string
	uid       types.UID
	// resourceVersion is kept as the API server sent it: it is opaque.
	resourceVersion string
	// deletion is the deletionTimestamp in Unix nanoseconds, when
	// compactDeleting is set.
	deletion int64
	// finalizers, when compactFinalizers is set, is the finalizers joined
	// by NUL (which a finalizer name cannot contain).
	finalizers unique.Handle[string]
	owners     []compactRef
	flags      uint8
}

// Compact flags.
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
	c := &Compact{
		name:            o.Name,
		namespace:       intern(o.Namespace),
		uid:             o.UID,
		resourceVersion: o.ResourceVersion,
	}
	if o.DeletionTimestamp != nil {
		c.flags |= compactDeleting
		c.deletion = o.DeletionTimestamp.UnixNano()
	}
	if len(o.Finalizers) > 0 {
		c.flags |= compactFinalizers
		c.finalizers = unique.Make(strings.Join(o.Finalizers, finalizerSeparator))
	}
	if o.Annotations[ownergcv1alpha1.ProtectedAnnotation] == trueValue {
		c.flags |= compactProtected
	}
	if len(o.OwnerReferences) > 0 {
		c.owners = make([]compactRef, len(o.OwnerReferences))
		for i := range o.OwnerReferences {
			r := &o.OwnerReferences[i]
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
			c.owners[i] = cr
		}
	}
	return c
}

// PartialObjectMetadata returns the object as the collector reads it: a new
// PartialObjectMetadata of kind gvk with the compact object's fields, the
// caller's to keep or modify.
func (c *Compact) PartialObjectMetadata(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name:              c.name,
		Namespace:         c.namespace,
		UID:               c.uid,
		ResourceVersion:   c.resourceVersion,
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
	for _, r := range c.owners {
		k := r.kind.Value()
		ref := metav1.OwnerReference{APIVersion: k.apiVersion, Kind: k.kind, Name: r.name, UID: r.uid}
		if r.flags&refControllerSet != 0 {
			ref.Controller = boolPtr(r.flags&refController != 0)
		}
		if r.flags&refBlockSet != 0 {
			ref.BlockOwnerDeletion = boolPtr(r.flags&refBlock != 0)
		}
		refs = append(refs, ref)
	}
	return refs
}

// sharedTrue and sharedFalse back the owner references handed to the graph,
// which only reads them.
var sharedTrue, sharedFalse = true, false

// deleting reports whether the object has a deletionTimestamp.
func (c *Compact) deleting() bool { return c.flags&compactDeleting != 0 }

// hasFinalizer reports whether the object carries finalizer f.
func (c *Compact) hasFinalizer(f string) bool {
	if c.flags&compactFinalizers == 0 {
		return false
	}
	for _, g := range strings.Split(c.finalizers.Value(), finalizerSeparator) {
		if g == f {
			return true
		}
	}
	return false
}

// The metav1.Object getters.

func (c *Compact) GetNamespace() string       { return c.namespace }
func (c *Compact) GetName() string            { return c.name }
func (c *Compact) GetGenerateName() string    { return "" }
func (c *Compact) GetUID() types.UID          { return c.uid }
func (c *Compact) GetResourceVersion() string { return c.resourceVersion }
func (c *Compact) GetGeneration() int64       { return 0 }
func (c *Compact) GetSelfLink() string        { return "" }
func (c *Compact) GetCreationTimestamp() metav1.Time {
	return metav1.Time{}
}
func (c *Compact) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (c *Compact) GetLabels() map[string]string          { return nil }
func (c *Compact) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}

// GetDeletionTimestamp returns a new copy of the deletion timestamp.
func (c *Compact) GetDeletionTimestamp() *metav1.Time {
	if !c.deleting() {
		return nil
	}
	t := metav1.NewTime(time.Unix(0, c.deletion))
	return &t
}

// GetAnnotations returns the protected annotation of a protected object (a
// map shared by all: never modify it), nil otherwise.
func (c *Compact) GetAnnotations() map[string]string {
	if c.flags&compactProtected != 0 {
		return protected
	}
	return nil
}

// GetFinalizers returns a new slice of the finalizers.
func (c *Compact) GetFinalizers() []string {
	if c.flags&compactFinalizers == 0 {
		return nil
	}
	return strings.Split(c.finalizers.Value(), finalizerSeparator)
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
