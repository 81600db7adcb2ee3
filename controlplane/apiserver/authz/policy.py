"""The API server's authorization, wired to its watch caches: informer-backed, never the store per request.

Upstream's RBAC authorizer reads Roles and bindings through informers (in-memory caches kept up to date
by a watch), and the Node authorizer's graph is fed by pod and volume informers: authorizing a request
never costs a read from etcd. Here the API server's own watch caches play the informers' part:

- :class:`CachedPolicy` is RBAC's :class:`~.rbac.PolicySource` over the Role, RoleBinding, ClusterRole
  and ClusterRoleBinding caches (lists re-sorted only when a cache has moved on);
- :class:`PodGraphFeed` keeps the Node authorizer's :class:`~.node.NodeGraph` in step with the pod
  cache, applying the cache's recent events since it last looked (or rebuilding from the cached pods
  if the cache re-listed or its event window has moved past);
- :class:`Authorization` builds the chain (Node, then RBAC), creates and reconciles the bootstrap
  policy when the API server starts (upstream's ``rbac/bootstrap-roles`` post-start hook), runs the
  ClusterRole aggregation loop, and puts the escalation guard on the RBAC registries.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from controlplane.api.resources import ResourceRegistry
from controlplane.apiserver import errors
from controlplane.apiserver.authz import bootstrap
from controlplane.apiserver.authz.aggregation import Aggregator, stale_roles
from controlplane.apiserver.authz.authorizer import Attributes, Chain, Decision
from controlplane.apiserver.authz.escalation import EscalationGuard
from controlplane.apiserver.authz.node import NodeAuthorizer, NodeGraph
from controlplane.apiserver.authz.rbac import RBACAuthorizer
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import Cached, WatchCache
from controlplane.store import Compare, Put, StoreError, Txn

logger = logging.getLogger(__name__)

Object = Mapping[str, Any]
GROUP = bootstrap.GROUP
#: Seconds the bootstrap waits for the RBAC caches to see its own writes.
CACHE_CATCH_UP = 10.0
#: Seconds a refusal waits at most for the caches to reach the store's revision.
CONSISTENT_WAIT = 1.0
RBAC_PLURALS = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")
#: Bootstrap objects created per store transaction.
BOOTSTRAP_TXN_OBJECTS = 50
#: The bootstrap policy's writes: the API server's own, not admitted (upstream's post-start hook writes
#: them through its loopback client as system:masters, whom no admission plugin stops).
BOOTSTRAP_SCOPE = RequestScope.unadmitted(reason="rbac/bootstrap-roles: the server's own bootstrap policy")


def cache_of(
    types: ResourceRegistry, caches: Mapping[str, WatchCache], group: str, plural: str
) -> WatchCache | None:
    """The watch cache serving ``group``/``plural`` (any version), if the server has one."""
    for rtype in types:
        if rtype.group == group and rtype.plural == plural and rtype.cache_key is not None:
            cache = caches.get(rtype.cache_key)
            if cache is not None:
                return cache
    return None


def registry_of(
    types: ResourceRegistry, registries: Mapping[tuple[str, str, str], Registry], group: str, plural: str
) -> Registry | None:
    for rtype in types:
        if rtype.group == group and rtype.plural == plural:
            registry = registries.get((rtype.group, rtype.version, rtype.plural))
            if registry is not None:
                return registry
    return None


def cache_version(cache: WatchCache | None) -> tuple[int, int, int]:
    """What changes when the cache's objects do. Its revision also moves with other resources' writes
    (progress notifications): the last change it applied (or a re-list, which replaces its dict of
    objects) says more."""
    if cache is None:
        return (0, -1, -1)
    return (id(cache.objects), cache.events[-1].revision if cache.events else -1, len(cache.objects))


class _Sorted:
    """A cache's objects in name order, recomputed only when the cache's objects have changed."""

    def __init__(self, cache: WatchCache | None) -> None:
        self.cache = cache
        self._version: tuple[int, int, int] = (0, -1, -1)
        self._by_namespace: dict[str, list[Object]] = {}

    def items(self, namespace: str = "") -> Sequence[Object]:
        cache = self.cache
        if cache is None:
            return ()
        version = cache_version(cache)
        if version != self._version:
            grouped: dict[str, list[Object]] = {}
            for cached in cache.list(None, None):  # sorted by (namespace, name)
                grouped.setdefault(str(cached.obj["metadata"].get("namespace") or ""), []).append(cached.obj)
            self._by_namespace, self._version = grouped, version
        return self._by_namespace.get(namespace, ())


class CachedPolicy:
    """RBAC's objects, read from the API server's watch caches."""

    def __init__(self, types: ResourceRegistry, caches: Mapping[str, WatchCache]) -> None:
        self._roles = cache_of(types, caches, GROUP, "roles")
        self._cluster_roles = cache_of(types, caches, GROUP, "clusterroles")
        self._role_bindings = _Sorted(cache_of(types, caches, GROUP, "rolebindings"))
        self._cluster_role_bindings = _Sorted(cache_of(types, caches, GROUP, "clusterrolebindings"))

    def cluster_role_bindings(self) -> Sequence[Object]:
        return self._cluster_role_bindings.items()

    def generation(self) -> Hashable:
        return (
            cache_version(self._roles),
            cache_version(self._cluster_roles),
            cache_version(self._role_bindings.cache),
            cache_version(self._cluster_role_bindings.cache),
        )

    def role_bindings(self, namespace: str) -> Sequence[Object]:
        return self._role_bindings.items(namespace)

    def cluster_role(self, name: str) -> Object | None:
        return self._get(self._cluster_roles, "", name)

    def role(self, namespace: str, name: str) -> Object | None:
        return self._get(self._roles, namespace, name)

    @staticmethod
    def _get(cache: WatchCache | None, namespace: str, name: str) -> Object | None:
        if cache is None or not name:
            return None
        cached = cache.get(cache.rtype.key(namespace or None, name))
        return cached.obj if cached is not None else None


def _node_of(cached: Cached) -> str:
    """The node a cached pod is bound to ("" if none), from its kept fields when it has them."""
    if cached.fields is not None:
        return cached.fields.get("spec.nodeName", "")
    return str((cached.obj.get("spec") or {}).get("nodeName") or "")


class PodGraphFeed:
    """The Node authorizer's graph, brought up to date from the pod cache whenever it is read."""

    def __init__(self, cache: WatchCache | None) -> None:
        self.cache = cache
        self._graph = NodeGraph()
        self._revision = -1

    def graph(self) -> NodeGraph:
        cache = self.cache
        if cache is None or not cache.ready or cache.revision == self._revision:
            return self._graph
        if self._revision < cache.oldest or self._revision < 0:
            self._rebuild(cache)
        else:
            newer = []
            for event in reversed(cache.events):
                if event.revision <= self._revision:
                    break
                newer.append(event)
            for event in reversed(newer):
                if event.type == "DELETED":
                    meta = event.object.obj.get("metadata") or {}
                    self._graph.delete_pod(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                    continue
                # graph_populator.go: a pod not bound to a node links nothing yet, and a change that
                # leaves its node (and uid: a MODIFIED pod is the same pod) alone leaves its edges:
                # the references in a pod's spec cannot change. Neither needs the pod decoded.
                node = _node_of(event.object)
                if event.previous is None and not node:
                    continue
                if event.previous is not None and node == _node_of(event.previous):
                    continue
                self._graph.set_pod(event.object.obj)
        self._revision = cache.revision
        return self._graph

    def _rebuild(self, cache: WatchCache) -> None:
        graph = NodeGraph()
        for cached in cache.objects.values():
            graph.set_pod(cached.obj)
        self._graph = graph


def node_rules() -> list[dict[str, Any]]:
    """The rules every kubelet has (upstream ``bootstrappolicy.NodeRules()``: the system:node role's)."""
    role = next(r for r in bootstrap.cluster_roles() if r["metadata"]["name"] == "system:node")
    rules: list[dict[str, Any]] = role["rules"]
    return rules


class Authorization:
    """One API server's authorizers (Node, then RBAC), bootstrap policy and aggregation."""

    def __init__(
        self,
        types: ResourceRegistry,
        caches: Mapping[str, WatchCache],
        registries: Mapping[tuple[str, str, str], Registry],
    ) -> None:
        self.types = types
        self.caches = caches
        self.registries = registries
        self.policy = CachedPolicy(types, caches)
        self.rbac = RBACAuthorizer(self.policy)
        self.node = NodeAuthorizer(PodGraphFeed(cache_of(types, caches, "", "pods")).graph, node_rules())
        self.chain = Chain(self.node, self.rbac)
        #: The caches decisions read (RBAC's objects and the pods of the Node authorizer's graph).
        self._watched = [
            cache
            for cache in (
                *(cache_of(types, caches, GROUP, plural) for plural in RBAC_PLURALS),
                cache_of(types, caches, "", "pods"),
            )
            if cache is not None
        ]
        cluster_roles = cache_of(types, caches, GROUP, "clusterroles")
        cluster_role_registry = registry_of(types, registries, GROUP, "clusterroles")
        self.aggregator = (
            Aggregator(cluster_roles, cluster_role_registry)
            if cluster_roles is not None and cluster_role_registry is not None
            else None
        )
        for plural in RBAC_PLURALS:
            registry = registry_of(types, registries, GROUP, plural)
            if registry is not None:
                registry.guard = EscalationGuard(plural, self.chain, self.policy)

    def authorize(self, attrs: Attributes) -> Decision:
        """The chain's decision from the caches as they are (what the escalation check uses)."""
        return self.chain.authorize(attrs)

    async def authorize_consistently(self, attrs: Attributes) -> Decision:
        """The chain's decision; a refusal only once the caches have caught up with the store.

        The caches follow the store a moment behind: a RoleBinding created a millisecond ago may
        not be in them yet (upstream's informers lag the same way). Before refusing, Kubelab waits
        (briefly) for them to reach the store's current revision and asks again, as a consistent read
        from the cache does; allowed requests, the vast majority, never wait.
        """
        decision = self.chain.authorize(attrs)
        if decision.allowed or not self._watched:
            return decision
        try:
            revision = await self._watched[0].store.current_revision()
        except StoreError:  # the store is away: the caches are all there is
            return decision
        if all(cache.revision >= revision for cache in self._watched):
            return decision
        await asyncio.gather(*(cache.wait_for(revision, CONSISTENT_WAIT) for cache in self._watched))
        return self.chain.authorize(attrs)

    async def start(self) -> None:
        """Create or reconcile the bootstrap policy, then aggregate and keep aggregating."""
        await self.ensure_bootstrap_policy()
        if self._watched:
            revision = await self._watched[0].store.current_revision()
            for cache in self._watched:
                await cache.start()
                await cache.wait_for(revision, CACHE_CATCH_UP)
        if self.aggregator is not None:
            await self.aggregator.sync()
            self.aggregator.start()

    async def stop(self) -> None:
        if self.aggregator is not None:
            await self.aggregator.stop()

    async def ensure_bootstrap_policy(self) -> None:
        """Upstream's ``EnsureRBACPolicy``: create what is missing, add back what was removed.

        A new cluster gets the policy in a few store transactions (``BOOTSTRAP_TXN_OBJECTS`` objects
        each, well under etcd's 128 operations), with the aggregated roles already filled in; objects
        that exist already are reconciled one by one.
        """
        roles, bindings = bootstrap.policy()
        for name, rules in stale_roles(roles).items():
            next(r for r in roles if r["metadata"]["name"] == name)["rules"] = rules
        batch: list[tuple[Registry, dict[str, Any]]] = []
        for plural, objects in (("clusterroles", roles), ("clusterrolebindings", bindings)):
            registry = registry_of(self.types, self.registries, GROUP, plural)
            if registry is not None:
                batch.extend((registry, obj) for obj in objects)
        for start in range(0, len(batch), BOOTSTRAP_TXN_OBJECTS):
            chunk = batch[start : start + BOOTSTRAP_TXN_OBJECTS]
            prepared = [
                (registry, await registry.prepare_create(copy.deepcopy(obj), "", scope=BOOTSTRAP_SCOPE))
                for registry, obj in chunk
            ]
            keys = [registry.key("", obj["metadata"]["name"]) for registry, obj in prepared]
            # One transaction for many objects of two kinds, which no registry method writes: each
            # object was prepared by its registry (``prepare_create``), exactly as ``create`` would.
            result = await chunk[0][0].store.txn(
                Txn(
                    compares=tuple(Compare.absent(key) for key in keys),
                    success=tuple(
                        Put(key, registry.encode(obj))
                        for key, (registry, obj) in zip(keys, prepared, strict=True)
                    ),
                )
            )
            if not result.succeeded:
                for registry, expected in chunk:
                    await _ensure(registry, expected)


async def _ensure(registry: Registry, expected: dict[str, Any]) -> None:
    name = expected["metadata"]["name"]
    try:
        await registry.create(copy.deepcopy(expected), "", scope=BOOTSTRAP_SCOPE)
        return
    except errors.StatusError as error:
        if error.code != 409:
            logger.warning("bootstrap policy: creating %s: %s", name, error.message)
            return

    def mutate(current: dict[str, Any]) -> dict[str, Any]:
        return bootstrap.reconcile(current, expected) or current

    with contextlib.suppress(errors.StatusError):  # deleted meanwhile: the next start creates it
        await registry.update("", name, mutate, scope=BOOTSTRAP_SCOPE)


__all__ = ["Authorization", "CachedPolicy", "PodGraphFeed", "cache_of"]
