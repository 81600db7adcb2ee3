"""Who is asking: the user that authentication finds behind a request, as Kubernetes describes it.

Kubernetes has no user database. Every request carries a *credential* (a bearer token, a client
certificate, a ServiceAccount token) and an *authenticator* turns it into **user info**: a user name, a
uid, a list of groups and some extra fields. Nothing else is known about a user; authorization (RBAC)
then decides by name and groups alone. That is why the groups matter so much: a client certificate with
``O=system:masters`` is a cluster admin, whatever its name (the group is hard-wired to every permission
in kube-apiserver, which is why upstream's ``kubernetes-admin`` kubeconfig carries it).

``UserInfo`` is upstream's ``user.Info`` (k8s.io/apiserver ``pkg/authentication/user``); its JSON form
is the ``userInfo`` of a TokenReview or a SelfSubjectReview. The names below are the well-known users
and groups of upstream (same package, ``user.go``), so the authenticators, RBAC and the components all
spell them the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

#: The group every user is in for kube-apiserver's authorizer: it bypasses RBAC (cluster-admin).
SYSTEM_MASTERS = "system:masters"
#: Added by kube-apiserver to every authenticated request's groups (by the authenticator chain).
AUTHENTICATED = "system:authenticated"
#: The group of a request that no authenticator recognised, when anonymous requests are allowed.
UNAUTHENTICATED = "system:unauthenticated"
#: The user name of such a request.
ANONYMOUS = "system:anonymous"

#: The components' users (their client certificates' common names).
KUBE_SCHEDULER = "system:kube-scheduler"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
#: kube-proxy's user (its client certificate's CN in "Kubernetes the hard way"; kubeadm gives the
#: kube-proxies one ServiceAccount instead: either way, one user for all of them).
KUBE_PROXY = "system:kube-proxy"
#: Every kubelet's group; its user is ``node_user(name)``.
NODES = "system:nodes"
NODE_USER_PREFIX = "system:node:"

#: ServiceAccounts: ``system:serviceaccount:<namespace>:<name>`` in ``system:serviceaccounts`` and
#: ``system:serviceaccounts:<namespace>``.
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"


def node_user(node: str) -> str:
    """The user name of the kubelet of ``node``: ``system:node:<node>`` (the node authorizer reads it)."""
    return f"{NODE_USER_PREFIX}{node}"


def service_account_user(namespace: str, name: str) -> str:
    """The user name of a ServiceAccount: ``system:serviceaccount:<namespace>:<name>``."""
    return f"{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}"


def _frozen_extra(extra: Mapping[str, Iterable[str]] | None) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({key: tuple(values) for key, values in (extra or {}).items()})


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user: what every later stage (audit, impersonation, RBAC, admission) sees."""

    username: str
    #: Unique across time (a user deleted and re-created under the same name gets a new uid); may be "".
    uid: str = ""
    groups: tuple[str, ...] = ()
    #: Extra attributes, e.g. ``authentication.kubernetes.io/credential-id`` for a token.
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def create(
        cls,
        username: str,
        *,
        uid: str = "",
        groups: Iterable[str] = (),
        extra: Mapping[str, Iterable[str]] | None = None,
    ) -> UserInfo:
        """A ``UserInfo`` from any iterables (groups keep their order, duplicates dropped)."""
        return cls(username, uid, tuple(dict.fromkeys(groups)), _frozen_extra(extra))

    def with_groups(self, *groups: str) -> UserInfo:
        """This user with ``groups`` added (as the authenticator chain adds ``system:authenticated``)."""
        return UserInfo(self.username, self.uid, tuple(dict.fromkeys((*self.groups, *groups))), self.extra)

    def to_json(self) -> dict[str, Any]:
        """Upstream's JSON ``userInfo`` (TokenReview, SelfSubjectReview): empty fields left out."""
        document: dict[str, Any] = {"username": self.username}
        if self.uid:
            document["uid"] = self.uid
        if self.groups:
            document["groups"] = list(self.groups)
        if self.extra:
            document["extra"] = {key: list(values) for key, values in self.extra.items()}
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> UserInfo:
        """The inverse of ``to_json``; ``ValueError`` for a document of the wrong shape."""
        username = document.get("username")
        uid = document.get("uid", "")
        groups = document.get("groups", [])
        extra = document.get("extra", {})
        if not isinstance(username, str) or not username:
            raise ValueError("userInfo.username must be a non-empty string")
        if not isinstance(uid, str):
            raise ValueError("userInfo.uid must be a string")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise ValueError("userInfo.groups must be a list of strings")
        if not isinstance(extra, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
            for k, v in extra.items()
        ):
            raise ValueError("userInfo.extra must map strings to lists of strings")
        return cls.create(username, uid=uid, groups=groups, extra=extra)
