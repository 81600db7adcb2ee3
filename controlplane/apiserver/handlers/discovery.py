"""Discovery: how a client learns which groups, versions and resources this server has.

kubectl knows nothing about ``pods`` or ``deployments`` in advance. It asks ``/api`` (the legacy core
group's versions), ``/apis`` (every other group), then each group-version's resource list, and
caches the answer for hours under ``~/.kube/cache/discovery``. From it, ``kubectl get deploy`` learns
that ``deploy`` is a short name of ``deployments`` in ``apps/v1``, namespaced, and that it supports
``list``. Shapes: apimachinery ``pkg/apis/meta/v1/types.go`` (APIVersions, APIGroupList, APIGroup,
APIResourceList).

kubectl first asks for *aggregated* discovery (one document for everything); a server that answers
with plain ``application/json`` gets the classic requests instead, which is what this module serves.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.resources import ResourceRegistry, ResourceType

#: The Kubernetes version this server speaks (kubectl warns when it is more than one minor apart).
MAJOR, MINOR = "1", "37"
GIT_VERSION = "v1.37.0-kubelab"


def version() -> dict[str, Any]:
    return {
        "major": MAJOR,
        "minor": MINOR,
        "emulationMajor": MAJOR,
        "emulationMinor": MINOR,
        "minCompatibilityMajor": MAJOR,
        "minCompatibilityMinor": "36",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-11-30T00:00:00Z",
        "goVersion": "python3.11",
        "compiler": "cpython",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: ResourceRegistry) -> dict[str, Any]:
    groups = [_group(name, versions) for name, versions in registry.groups().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: ResourceRegistry, name: str) -> dict[str, Any] | None:
    versions = registry.groups().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource_entry(t: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": sorted(t.verbs),
    }
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    return entry


def api_resource_list(registry: ResourceRegistry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for t in types:
        resources.append(_resource_entry(t))
        for sub in t.subresources:
            entry: dict[str, Any] = {
                "name": f"{t.plural}/{sub.name}",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": sub.kind or t.kind,
                "verbs": sorted(sub.verbs),
            }
            if sub.group is not None:
                entry["group"] = sub.group
            if sub.version is not None:
                entry["version"] = sub.version
            resources.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
