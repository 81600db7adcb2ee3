"""The cluster as admission plugins see it: the API server's watch caches, and the store behind them.

Upstream's plugins read through informers (a lister per resource, kept current by a watch) and fall
back to a live GET when the cache may be behind: NamespaceLifecycle looks a namespace up in storage
before saying it does not exist, ServiceAccount retries for the ``default`` account the controller is
about to create. The API server here already keeps a watch cache per resource (``watchcache.py``), so
the "informers" are those caches, read without copying: plugins must not change what they get.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import Object
from controlplane.identity import UserInfo

if TYPE_CHECKING:
    from controlplane.apiserver.registry import Registry
    from controlplane.apiserver.watchcache import WatchCache

#: ``(user, verb, group, resource, namespace, name) -> allowed``: the server's authorizer, as a plugin
#: may ask it (CertificateApproval: "may this user approve requests for that signer?").
Authorize = Callable[[UserInfo, str, str, str, str, str], Awaitable[bool]]


async def allow_everything(
    user: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str
) -> bool:
    """The authorizer while Kubelab's authorization is the placeholder that allows every request."""
    return True


class CachedCluster:
    """``ClusterView`` over one API server's registries and watch caches."""

    def __init__(
        self,
        registries: Mapping[tuple[str, str, str], Registry],
        caches: Mapping[str, WatchCache],
        authorize: Authorize = allow_everything,
    ) -> None:
        self._registries = registries
        self._caches = caches
        self._authorize = authorize
        self._by_resource: dict[tuple[str, str], Registry] = {}
        for (group, _version, plural), registry in registries.items():
            # One registry per resource (the first version listed serves the stored form).
            self._by_resource.setdefault((group, plural), registry)

    def _cache(self, registry: Registry) -> WatchCache | None:
        rtype = registry.rtype
        cache = self._caches.get(rtype.cache_key or rtype.storage_prefix or "")
        return cache if cache is not None and cache.ready else None

    def cached(self, group: str, resource: str, namespace: str, name: str) -> Object | None:
        registry = self._by_resource.get((group, resource))
        if registry is None:
            return None
        cache = self._cache(registry)
        if cache is None:
            return None
        found = cache.get(registry.key(namespace if registry.rtype.namespaced else "", name))
        return None if found is None else found.obj

    def cached_list(self, group: str, resource: str, namespace: str | None) -> list[Object]:
        registry = self._by_resource.get((group, resource))
        if registry is None:
            return []
        cache = self._cache(registry)
        if cache is None:
            return []
        return [c.obj for c in cache.list(namespace if registry.rtype.namespaced else None, None)]

    async def get(self, group: str, resource: str, namespace: str, name: str) -> Object | None:
        found = self.cached(group, resource, namespace, name)
        if found is not None:
            return found
        registry = self._by_resource.get((group, resource))
        if registry is None or not name:
            return None
        try:
            obj, _ = await registry.read(namespace if registry.rtype.namespaced else "", name)
        except errors.StatusError as error:
            if error.code == 404:
                return None
            raise
        return obj

    async def authorize(
        self, user: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str
    ) -> bool:
        return await self._authorize(user, verb, group, resource, namespace, name)


__all__ = ["Authorize", "CachedCluster", "allow_everything"]
