"""State reads: which API request answers a state leaf, and which store writes make its answer old.

A state leaf reads what ``kubectl get`` would, as a checker identity that may only read. The pure
core does not send anything: it says what to read as a ``Read`` (method, path below the cluster,
query), the runner sends it through the API server and hands the answer back as a ``ReadResult``.
The request goes through the whole pipeline (authentication, RBAC, the watch cache), so the check
sees the cluster exactly as a client does, never the store behind the API server's back.

Reading on every trace event would cost a request per event. Instead a read is repeated only when
something it covers was written: every committed write shows up in the trace as a ``store.txn``
event listing its keys (``writes``), and the API server stores objects under keys built the same way
for every kind (``k8s.io/apiserver/pkg/registry/generic/registry/store.go``: ``KeyFunc`` is
``<prefix>/<namespace>/<name>``, ``KeyRootFunc`` ``<prefix>/<namespace>``). So a read of Deployment
``default/web`` is old once a write touches ``/registry/deployments/default/web``, and a list of pods
in ``default`` once one touches a key under ``/registry/pods/default/``. The prefixes come from the
lab's own table of kinds (``controlplane.api.kinds``), which says ``/registry/services/specs`` for
Services and ``/registry/minions`` for Nodes, as upstream does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from controlplane.api.kinds import builtin_types
from controlplane.api.resources import ResourceRegistry, ResourceType
from courses.engine.checks.spec import Target


@functools.cache
def _registry() -> ResourceRegistry:
    return builtin_types()


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> ``("apps", "v1")``; ``v1`` -> ``("", "v1")`` (the core group)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def lookup_kind(api_version: str, kind: str) -> ResourceType | None:
    """The resource the lab serves for ``kind`` in ``api_version``, if it serves one."""
    group, version = split_api_version(api_version)
    return _registry().by_kind(group, version, kind)


def kinds_in(api_version: str) -> list[str]:
    """The kinds the lab serves in ``api_version`` (for a message naming the right spelling)."""
    group, version = split_api_version(api_version)
    return [t.kind for t in _registry().in_group_version(group, version)]


@dataclass(frozen=True, slots=True)
class Read:
    """One API request a check needs answered: ``GET path?query``, as the checker identity.

    ``key`` is the store key (``exact``) or key prefix it covers, for telling when it is old.
    Reads are values: two leaves reading the same object share one ``Read``.
    """

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    key: str
    exact: bool

    @property
    def url(self) -> str:
        """The path with its query, as an HTTP client would send it."""
        if not self.query:
            return self.path
        return self.path + "?" + "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in self.query)

    def covers(self, key: str) -> bool:
        """Whether a write to store ``key`` may change this read's answer."""
        return key == self.key if self.exact else key.startswith(self.key)


def read_for(target: Target) -> Read:
    """The request that reads ``target`` (bound to a student already)."""
    base = f"/api/{target.version}" if not target.group else f"/apis/{target.group}/{target.version}"
    collection = f"{base}/{target.resource}"
    key_root = target.storage_prefix
    if target.namespace is not None:
        collection = f"{base}/namespaces/{quote(target.namespace, safe='')}/{target.resource}"
        key_root = f"{target.storage_prefix}/{target.namespace}"
    if target.name is not None:
        return Read(
            "GET", f"{collection}/{quote(target.name, safe='')}", (), f"{key_root}/{target.name}", True
        )
    query: list[tuple[str, str]] = []
    if target.label_selector:
        query.append(("labelSelector", target.label_selector))
    if target.field_selector:
        query.append(("fieldSelector", target.field_selector))
    return Read("GET", collection, tuple(query), f"{key_root}/", False)


def index_keys(key: str) -> tuple[str, str]:
    """The two prefixes of a store key that a read's storage prefix can be: ``/registry/pods`` and
    ``/registry/pods/default`` for ``/registry/pods/default/web`` (Services live one level deeper,
    under ``/registry/services/specs``). The evaluator looks reads up by these instead of testing
    every read against every written key."""
    parts = key.split("/", 4)
    if len(parts) < 3:
        return key, key
    two = "/".join(parts[:3])
    return two, "/".join(parts[:4]) if len(parts) > 3 else two


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The API server's answer to a ``Read``: its HTTP ``status`` (0 when none came: a timeout, a
    refused connection) and the decoded JSON ``body``."""

    status: int
    body: Any = None
    message: str = ""

    @classmethod
    def ok(cls, body: Any) -> ReadResult:
        return cls(200, body)

    @classmethod
    def not_found(cls) -> ReadResult:
        return cls(404, None, "not found")

    @classmethod
    def error(cls, status: int, message: str = "") -> ReadResult:
        return cls(status, None, message)

    @classmethod
    def timed_out(cls) -> ReadResult:
        return cls(0, None, "timeout")


__all__ = [
    "Read",
    "ReadResult",
    "index_keys",
    "kinds_in",
    "lookup_kind",
    "read_for",
    "split_api_version",
]
