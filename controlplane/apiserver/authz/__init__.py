"""Authorization: once the API server knows *who* is asking, may they do *this*?

Authentication gives a user (name and groups); request info turns the URL into Kubernetes' words (verb,
API group, resource, subresource, namespace, name, or a non-resource path such as ``/version``). The
**authorizers** then vote, in kube-apiserver's order (``--authorization-mode=Node,RBAC``):

1. the **Node authorizer** (:mod:`.node`) answers only for kubelets (``system:node:<name>`` in
   ``system:nodes``): a kubelet may read the Secrets and ConfigMaps of the pods bound to its node,
   its own Node and Lease, and a few things every kubelet needs;
2. **RBAC** (:mod:`.rbac`): Roles and ClusterRoles list rules, RoleBindings and ClusterRoleBindings
   grant them to users, groups and ServiceAccounts.

The first authorizer that says *allow* wins; if none does, the request is refused with 403 Forbidden
(there are no *deny* rules in RBAC: permissions only add up). Every decision is explained: which
binding, which role and which rule allowed it, or, for a refusal, the bindings that name the user and
why none of their rules fit (:mod:`.rbac`); it goes on the trace as ``rbac.decision``.

The other modules: :mod:`.authorizer` (attributes, decisions, the chain, the 403 message),
:mod:`.bootstrap` (the default roles), :mod:`.aggregation` (admin/edit/view gather labelled roles),
:mod:`.escalation` (no granting what you do not hold), :mod:`.policy` (all of it wired to the API
server's watch caches).

Upstream: ``staging/src/k8s.io/apiserver/pkg/authorization/authorizer`` (the interfaces),
``.../authorization/union`` (the chain), ``plugin/pkg/auth/authorizer/{node,rbac}``.
"""
