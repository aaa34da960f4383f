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

package framework

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Identity is a ServiceAccount tests act as, with a bearer token.
type Identity struct {
	Namespace, Name string
	Token           string
}

// NewIdentity creates a ServiceAccount in ns, grants it the rules — in ns
// with a Role, or cluster-wide with a ClusterRole when clusterWide is set —
// and returns it with a token.
func (cp *ControlPlane) NewIdentity(t testing.TB, ns, name string, clusterWide bool, rules ...rbacv1.PolicyRule) Identity {
	t.Helper()
	var grants []client.Object
	switch {
	case len(rules) == 0:
	case clusterWide:
		meta := metav1.ObjectMeta{Name: ns + "-" + name}
		grants = append(grants, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, clusterRoleBinding(meta.Name, ns, name))
	default:
		meta := metav1.ObjectMeta{Namespace: ns, Name: name}
		grants = append(grants, &rbacv1.Role{ObjectMeta: meta, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: meta, Subjects: serviceAccountSubject(ns, name),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}})
	}
	return cp.identity(t, ns, name, grants...)
}

// NewIdentityWithClusterRole creates a ServiceAccount in ns bound to an
// existing ClusterRole (none when clusterRole is empty), and returns it with
// a token.
func (cp *ControlPlane) NewIdentityWithClusterRole(t testing.TB, ns, name, clusterRole string) Identity {
	t.Helper()
	var grants []client.Object
	if clusterRole != "" {
		binding := clusterRoleBinding(ns+"-"+name, ns, name)
		binding.RoleRef.Name = clusterRole
		grants = append(grants, binding)
	}
	return cp.identity(t, ns, name, grants...)
}

// identity creates the ServiceAccount ns/name and the objects that grant it
// rights (those that exist already are kept), and returns it with a token.
func (cp *ControlPlane) identity(t testing.TB, ns, name string, grants ...client.Object) Identity {
	t.Helper()
	objs := append([]client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}, grants...)
	for _, o := range objs {
		if err := cp.Client.Create(Context(t), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	return Identity{Namespace: ns, Name: name, Token: cp.Token(t, ns, name)}
}

// Token returns a new token of the ServiceAccount ns/name.
func (cp *ControlPlane) Token(t testing.TB, ns, name string) string {
	t.Helper()
	tr, err := cp.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(Context(t), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

func serviceAccountSubject(ns, name string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
}

// clusterRoleBinding binds the ClusterRole of its own name to the
// ServiceAccount ns/name.
func clusterRoleBinding(bindingName, ns, name string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindingName}, Subjects: serviceAccountSubject(ns, name),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bindingName}}
}
