"""From a manifest's ``apiVersion`` and ``kind`` to the URL of its resource: kubectl's RESTMapper.

A manifest says *what* an object is (``apiVersion: apps/v1``, ``kind: Deployment``), but the API is
addressed by *resource*: ``/apis/apps/v1/namespaces/default/deployments/web``. Nothing in the kind
says that its resource is ``deployments`` or that it lives in a namespace; kubectl learns both from
**discovery** (client-go ``restmapper``), and so does the form:

    GET /api/v1          -> APIResourceList: {"name": "configmaps", "kind": "ConfigMap", "namespaced": true}
    GET /apis/apps/v1    -> APIResourceList: {"name": "deployments", "kind": "Deployment", ...}

A group-version's list is asked only when a manifest uses it, and kept for ``TTL`` seconds per
cluster (kubectl keeps its discovery cache for hours, and throws it away when a kind is not found;
here a miss in a list older than ``REFRESH_AFTER`` asks again). When the kind is not there, the whole
discovery (``/api``, ``/apis`` and every list) is read once more to say where it is served
("Deployment is served as apps/v1"), or what it is probably called ("did you mean ConfigMap?").

The requests go through the API server's pipeline as the student, like every other request of the
form: discovery is open to every signed-in user (the ``system:discovery`` role).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import httpx

#: How long a group-version's resource list is kept, per cluster.
TTL: Final = 30.0
#: A kind missing from a list at least this old sends for the list again (it may have just appeared).
REFRESH_AFTER: Final = 1.0


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource of the API (``metav1.APIResource``), as discovery publishes it."""

    group: str
    version: str
    #: The resource's name in URLs: ``deployments``.
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, name: str, namespace: str | None) -> str:
        """The object's URL path: ``/apis/apps/v1/namespaces/default/deployments/web``."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced:
            base += f"/namespaces/{quote(namespace or 'default', safe='')}"
        return f"{base}/{self.plural}/{quote(name, safe='')}"


class MappingError(Exception):
    """A manifest's apiVersion and kind name no resource the server has."""


class InvalidAPIVersion(MappingError):
    """An apiVersion that is not ``version`` or ``group/version``."""

    def __init__(self, api_version: str) -> None:
        super().__init__(f"invalid apiVersion {api_version!r}")
        self.api_version = api_version


class UnknownAPIVersion(MappingError):
    """No group-version by that name is served; ``served``: the versions its group does serve, and
    ``elsewhere``: the apiVersions serving the kind."""

    def __init__(
        self, api_version: str, kind: str, *, served: tuple[str, ...], elsewhere: tuple[str, ...]
    ) -> None:
        super().__init__(f"the server does not serve {api_version}")
        self.api_version = api_version
        self.kind = kind
        self.served = served
        self.elsewhere = elsewhere


class UnknownKind(MappingError):
    """The group-version is served, without that kind; ``elsewhere``: the apiVersions that serve it;
    ``similar``: a served kind spelled the same but for case."""

    def __init__(
        self, api_version: str, kind: str, *, elsewhere: tuple[str, ...], similar: str | None
    ) -> None:
        super().__init__(f'no matches for kind "{kind}" in version "{api_version}"')
        self.api_version = api_version
        self.kind = kind
        self.elsewhere = elsewhere
        self.similar = similar


class DiscoveryFailed(MappingError):
    """Discovery itself was refused or failed: ``response`` is the API server's answer."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"discovery failed: {response.status_code}")
        self.response = response


#: (cluster, groupVersion) -> (when it was read, its resources by kind; None: not served).
_lists: dict[tuple[str, str], tuple[float, dict[str, Resource] | None]] = {}


def forget(cluster: str | None = None) -> None:
    """Drop what was learned about ``cluster`` (every cluster: None), as after a reset."""
    for key in [key for key in _lists if cluster is None or key[0] == cluster]:
        del _lists[key]


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``). Raises ``InvalidAPIVersion``."""
    parts = api_version.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise InvalidAPIVersion(api_version)


class RESTMapper:
    """Resources by apiVersion and kind, for one cluster, asked through ``client``."""

    def __init__(
        self, client: httpx.AsyncClient, *, cluster: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.clock = clock

    async def resource_for(self, api_version: str, kind: str) -> Resource:
        """The resource of ``kind`` in ``api_version``; raises a ``MappingError`` saying what is wrong."""
        group, version = split_api_version(api_version)
        resources, age = await self._list(group, version)
        if resources is not None and kind in resources:
            return resources[kind]
        if resources is not None and age >= REFRESH_AFTER:
            resources, _ = await self._list(group, version, fresh=True)
            if resources is not None and kind in resources:
                return resources[kind]
        everything = await self._everything()
        elsewhere = tuple(sorted({r.api_version for r in everything if r.kind == kind} - {api_version}))
        if resources is None:
            served = tuple(sorted(r.api_version for r in _one_per_version(everything) if r.group == group))
            raise UnknownAPIVersion(api_version, kind, served=served, elsewhere=elsewhere)
        lowered = kind.lower()
        similar = next((r.kind for r in everything if r.kind.lower() == lowered and r.kind != kind), None)
        raise UnknownKind(api_version, kind, elsewhere=elsewhere, similar=similar)

    async def _list(
        self, group: str, version: str, *, fresh: bool = False
    ) -> tuple[dict[str, Resource] | None, float]:
        """The group-version's resources by kind (None: not served), and how old that answer is."""
        key = (self.cluster, f"{group}/{version}" if group else version)
        now = self.clock()
        cached = _lists.get(key)
        if cached is not None and not fresh and now - cached[0] < TTL:
            return cached[1], now - cached[0]
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        response = await self.client.get(path, headers={"Accept": "application/json"})
        if response.status_code == 404:
            resources = None
        elif response.status_code != 200:
            raise DiscoveryFailed(response)
        else:
            resources = _resources(group, version, response.json())
        _lists[key] = (now, resources)
        return resources, 0.0

    async def _everything(self) -> list[Resource]:
        """Every resource of every group-version served (for saying where a kind is)."""
        found: list[Resource] = []
        versions: list[tuple[str, str]] = []
        core = await self.client.get("/api", headers={"Accept": "application/json"})
        if core.status_code == 200:
            versions += [("", str(v)) for v in _field(core.json(), "versions", list)]
        groups = await self.client.get("/apis", headers={"Accept": "application/json"})
        if groups.status_code == 200:
            for entry in _field(groups.json(), "groups", list):
                name = _field(entry, "name", str)
                versions += [(name, _field(v, "version", str)) for v in _field(entry, "versions", list)]
        for group, version in versions:
            if not version:
                continue
            try:
                resources, _ = await self._list(group, version)
            except DiscoveryFailed:  # only a hint is lost: say what else is known
                continue
            found += (resources or {}).values()
        return found


def _field(data: Any, name: str, kind: type) -> Any:
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, kind) else kind()


def _resources(group: str, version: str, document: Any) -> dict[str, Resource]:
    resources: dict[str, Resource] = {}
    for entry in _field(document, "resources", list):
        plural, kind = _field(entry, "name", str), _field(entry, "kind", str)
        if not plural or not kind or "/" in plural:  # pods/log and the like are subresources
            continue
        namespaced = bool(entry.get("namespaced"))
        resources.setdefault(kind, Resource(group, version, plural, kind, namespaced))
    return resources


def _one_per_version(resources: list[Resource]) -> list[Resource]:
    seen: dict[str, Resource] = {}
    for resource in resources:
        seen.setdefault(resource.api_version, resource)
    return list(seen.values())


__all__ = [
    "REFRESH_AFTER",
    "TTL",
    "DiscoveryFailed",
    "InvalidAPIVersion",
    "MappingError",
    "RESTMapper",
    "Resource",
    "UnknownAPIVersion",
    "UnknownKind",
    "forget",
    "split_api_version",
]
