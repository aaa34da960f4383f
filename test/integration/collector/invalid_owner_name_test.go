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

package collector_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ownergc/ownergc/internal/explain"
	"github.com/ownergc/ownergc/test/framework"
)

// An owner reference whose name cannot be one path segment names no
// object: ownergc never reads it and treats the owner as absent. The first
// reference here leads, once client-go cleans its request path, to a
// Secret of another namespace, and names that Secret's UID: read, it would
// look like a live owner and keep its dependent forever. A dependent whose
// only owner reference is such a name is collected (in the background); one
// that also has a live owner keeps it and loses the other reference.
func TestOwnerReferenceThatIsNotOnePathSegmentIsDangling(t *testing.T) {
	t.Parallel()
	ns, other := framework.CreateNamespace(t, cp.Client), framework.CreateNamespace(t, cp.Client)
	secret := cp.Create(t, framework.Secrets, other, "token")
	traversal := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "../../" + other + "/secrets/" + secret.Name, UID: secret.UID}

	alone := []framework.Object{cp.Create(t, framework.ConfigMaps, ns, "traversal", framework.OwnedBy(traversal))}
	for i, name := range []string{"..", "x/../../../" + other + "/secrets/" + secret.Name, "a/b", "x%2Fy", strings.Repeat("a", explain.MaxNameLength+1)} {
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uuid.NewUUID()}
		alone = append(alone, cp.Create(t, framework.ConfigMaps, ns, "alone-"+string(rune('a'+i)), framework.OwnedBy(ref)))
	}
	owner := cp.Create(t, framework.ConfigMaps, ns, "owner")
	kept := cp.Create(t, framework.ConfigMaps, ns, "kept", framework.OwnedBy(owner.Ref(false), traversal))

	cp.WaitGone(t, "their only owner reference names no object", alone...)
	cp.WaitOwners(t, kept, "its reference that names no object should be removed, its live owner kept", owner.UID)
	cp.MustExist(t, "nothing names them as a dependent", owner, secret)
}
