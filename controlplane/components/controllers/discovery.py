"""Discovery for controllers: which resources does this API server serve, and what may be done to them?

Most controllers know their kinds in advance (the ReplicaSet controller works on ReplicaSets and
pods). Two cannot: the **garbage collector** must watch *every* kind that can own or be owned, and the
**namespace controller** must empty a namespace of *every* kind that lives in one, including kinds it
has never heard of (a CustomResourceDefinition added yesterday). Both ask the API server, the way
kubectl does, through **discovery**::

    GET /api                         -> APIVersions     {"versions": ["v1"]}
    GET /api/v1                      -> APIResourceList {"resources": [{"name": "pods", "kind": "Pod",
                                                          "namespaced": true, "verbs": [...]}, ...]}
    GET /apis                        -> APIGroupList    {"groups": [{"name": "apps",
                                                          "preferredVersion": {"version": "v1"}}, ...]}
    GET /apis/apps/v1                -> APIResourceList

Each ``APIResource`` names a resource (``pods``; ``pods/log`` is a subresource and is skipped here),
its ``kind``, whether it is namespaced, and its **verbs**. The verbs are what matter: the garbage
collector can only watch what supports ``list`` and ``watch``, and only collect what supports
``delete``; the namespace controller uses ``deletecollection`` where it can (one request for every
pod in the namespace) and falls back to ``list`` and one ``delete`` per object.

Only each group's *preferred* version is used (client-go ``ServerPreferredResources``): the same
objects served at two versions are one set of objects, and must not be deleted or counted twice.

A group-version whose list fails does not fail the whole discovery: what was found is returned with
the failures beside it (client-go's ``ErrGroupDiscoveryFailed``), and the caller decides. The
namespace controller, for one, carries on with what it found and reports the failure in the
``NamespaceDeletionDiscoveryFailure`` condition.

Upstream: client-go ``discovery/discovery_client.go`` (``ServerPreferredResources``),
``discovery/helper.go`` (``FilteredBy``, ``SupportsAllVerbs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.client.errors import APIError, TransportError
from controlplane.client.manager import Kind
from controlplane.client.rest import RESTClient


@dataclass(frozen=True)
class APIResource:
    """One resource of one group-version, as discovery publishes it (``metav1.APIResource``)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``pods`` or ``deployments.apps``, as upstream names a resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def supports(self, *verbs: str) -> bool:
        """Every one of ``verbs`` is served (client-go ``SupportsAllVerbs``)."""
        return all(verb in self.verbs for verb in verbs)

    def as_kind(self) -> Kind:
        """The ``Kind`` a manager's informers are asked for."""
        return Kind(self.group, self.version, self.plural, self.kind)


@dataclass(frozen=True)
class Discovery:
    """What discovery found, and the group-versions it could not read (``ErrGroupDiscoveryFailed``)."""

    resources: tuple[APIResource, ...]
    failed: Mapping[str, str] = field(default_factory=dict)

    def filtered_by(self, *verbs: str, namespaced: bool | None = None) -> list[APIResource]:
        """The resources supporting all of ``verbs`` (and of the given scope, if one is given)."""
        return [
            r
            for r in self.resources
            if r.supports(*verbs) and (namespaced is None or r.namespaced == namespaced)
        ]

    def for_kind(self, api_version: str, kind: str) -> APIResource | None:
        """The resource serving ``kind`` in ``api_version`` (the REST mapping an ownerReference needs).

        An ownerReference names an apiVersion and a kind; to GET the owner we need the resource's
        plural and scope. A version the server does not prefer still maps, by group and kind.
        """
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        same_group = [r for r in self.resources if r.group == group and r.kind == kind]
        exact = [r for r in same_group if r.api_version == api_version]
        found = exact or same_group
        return found[0] if found else None

    def error_message(self) -> str:
        """client-go's ``ErrGroupDiscoveryFailed`` text for the failures ("" when there are none)."""
        if not self.failed:
            return ""
        parts = ", ".join(f"{gv}: {why}" for gv, why in sorted(self.failed.items()))
        return f"unable to retrieve the complete list of server APIs: {parts}"


def parse_resource_list(document: Mapping[str, Any]) -> list[APIResource]:
    """The resources of one ``APIResourceList`` (subresources such as ``pods/log`` left out)."""
    group_version = str(document.get("groupVersion") or "")
    group, _, version = group_version.rpartition("/")
    resources = []
    for entry in document.get("resources") or []:
        name = str(entry.get("name") or "")
        if not name or "/" in name:
            continue
        resources.append(
            APIResource(
                group=group,
                version=version,
                plural=name,
                kind=str(entry.get("kind") or ""),
                namespaced=bool(entry.get("namespaced")),
                verbs=frozenset(str(v) for v in entry.get("verbs") or []),
            )
        )
    return resources


def preferred_group_versions(api_versions: Mapping[str, Any], groups: Mapping[str, Any]) -> list[str]:
    """The group-versions to read: the core group's first version, then each group's preferred one."""
    versions = [str(v) for v in api_versions.get("versions") or []]
    result = versions[:1]
    for group in groups.get("groups") or []:
        preferred = group.get("preferredVersion") or (group.get("versions") or [{}])[0]
        group_version = preferred.get("groupVersion")
        if group_version:
            result.append(str(group_version))
    return result


def _path(group_version: str) -> str:
    return f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"


async def discover(client: RESTClient) -> Discovery:
    """Ask the server for every resource of every preferred group-version (``ServerPreferredResources``).

    Failing to read ``/api`` or ``/apis`` raises; failing to read one group-version is recorded in
    ``failed`` and the rest is returned.
    """
    api_versions = await client.request_json("GET", "/api")
    groups = await client.request_json("GET", "/apis")
    resources: list[APIResource] = []
    failed: dict[str, str] = {}
    for group_version in preferred_group_versions(api_versions, groups):
        try:
            document = await client.request_json("GET", _path(group_version))
        except (APIError, TransportError) as error:
            failed[group_version] = str(error)
            continue
        resources.extend(parse_resource_list(document))
    return Discovery(tuple(resources), failed)


def without(resources: Iterable[APIResource], ignored: Iterable[tuple[str, str]]) -> list[APIResource]:
    """``resources`` minus those whose (group, plural) is in ``ignored``."""
    skip = set(ignored)
    return [r for r in resources if (r.group, r.plural) not in skip]


__all__ = [
    "APIResource",
    "Discovery",
    "discover",
    "parse_resource_list",
    "preferred_group_versions",
    "without",
]
