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
	objs := []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	switch {
	case len(rules) == 0:
	case clusterWide:
		meta := metav1.ObjectMeta{Name: ns + "-" + name}
		objs = append(objs, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: meta.Name}})
	default:
		meta := metav1.ObjectMeta{Namespace: ns, Name: name}
		objs = append(objs, &rbacv1.Role{ObjectMeta: meta, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}})
	}
	for _, o := range objs {
		if err := cp.Client.Create(Context(t), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	tr, err := cp.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(Context(t), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token for %s/%s: %v", ns, name, err)
	}
	return Identity{Namespace: ns, Name: name, Token: tr.Status.Token}
}
