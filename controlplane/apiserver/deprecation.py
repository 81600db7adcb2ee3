"""Deprecated APIs: the warning every request to a deprecated kind carries.

Kubernetes retires an API slowly. First it is marked deprecated: it keeps working, but every
request to it (get, list, watch, create, update, patch, delete) is answered with a ``Warning``
header naming the release that deprecated it and what to use instead, and kubectl prints it as
``Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice``. Much
later, if ever, it is removed. A type says so with its ``APILifecycleDeprecated``,
``APILifecycleRemoved`` and ``APILifecycleReplacement`` methods, and the API server's installer
adds the warning to each of the resource's routes
(k8s.io/apiserver/pkg/endpoints/installer.go; the text is
k8s.io/apiserver/pkg/endpoints/deprecation/deprecation.go ``WarningMessage``).

The kinds this server serves that are deprecated in 1.37, and why:

- core/v1 ``Endpoints`` (1.33, KEP-4974): EndpointSlices hold what Endpoints cannot (dual stack,
  more than 1000 endpoints, topology); the endpoints controller still fills them in.
- core/v1 ``ComponentStatus`` (1.19): it assumes the components run beside the API server.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What a deprecated kind's ``APILifecycle*`` methods return."""

    deprecated: tuple[int, int]
    #: The release that no longer serves it, if one is set.
    removed: tuple[int, int] | None = None
    #: What to use instead: (group, version, kind).
    replacement: tuple[str, str, str] | None = None


#: Deprecated kinds by (group, version, kind).
DEPRECATED: dict[tuple[str, str, str], Lifecycle] = {
    ("", "v1", "Endpoints"): Lifecycle((1, 33), replacement=("discovery.k8s.io", "v1", "EndpointSlice")),
    ("", "v1", "ComponentStatus"): Lifecycle((1, 19)),
}


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def warning(group: str, version: str, kind: str) -> str | None:
    """The warning a request to ``kind`` carries, or None if it is not deprecated (``WarningMessage``)."""
    lifecycle = DEPRECATED.get((group, version, kind))
    if lifecycle is None:
        return None
    major, minor = lifecycle.deprecated
    text = f"{_group_version(group, version)} {kind} is deprecated in v{major}.{minor}+"
    if lifecycle.removed is not None:
        text += f", unavailable in v{lifecycle.removed[0]}.{lifecycle.removed[1]}+"
    if lifecycle.replacement is not None:
        replaced_group, replaced_version, replaced_kind = lifecycle.replacement
        text += f"; use {_group_version(replaced_group, replaced_version)} {replaced_kind}"
    return text


__all__ = ["DEPRECATED", "Lifecycle", "warning"]
