"""The request scope: every registry write is made for a request, and admitted as it.

The registry's write methods are found by looking at the class, not listed by hand: a write method
added without a driver below fails ``test_every_write_method_is_driven``, and one that forgets the
scope, or admits nothing, fails a test named after it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.kinds import builtin_types
from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.apiserver.admission import Admission, Attributes, Chain, Scope
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Tracer
from controlplane.apiserver.handlers.finalize import NamespaceRegistry
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import MissingRequestScope, RequestScope
from controlplane.clock import SYSTEM_CLOCK
from controlplane.identity import AUTHENTICATED, UserInfo
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import NULL_SINK, ListSink

ALICE = UserInfo.create("alice", groups=[AUTHENTICATED])


def served(plural: str) -> ResourceType:
    rtype = builtin_types().lookup("", "v1", plural)
    assert rtype is not None
    return rtype


PODS, NAMESPACES = served("pods"), served("namespaces")
#: What no test writes: the registry's reads and helpers.
READS = frozenset({"claim_record", "claims", "decode", "encode", "invalid", "key", "not_found", "read"})
#: A write made to set a test up.
SETUP = RequestScope.unadmitted(reason="the test's own setup")


class Recording(Plugin):
    """A plugin with both halves that notes every write it is asked about."""

    name = "Recording"
    mutating = True
    validating = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[dict[str, Any]]:
        self.seen.append(("mutating", a.operation))
        return []

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        self.seen.append(("validating", a.operation))


class NoCluster:
    """A ``ClusterView`` over nothing: the recording plugin reads nothing."""

    def cached(self, group: str, resource: str, namespace: str, name: str) -> Object | None:
        return None

    def cached_list(self, group: str, resource: str, namespace: str | None) -> list[Object]:
        return []

    async def get(self, group: str, resource: str, namespace: str, name: str) -> Object | None:
        return None

    async def authorize(
        self, user: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str
    ) -> bool:
        return False


def recording_scope(plugin: Recording, rtype: ResourceType, *, audit_id: str = "req-1") -> RequestScope:
    chain = Chain([plugin], cluster=NoCluster(), tracer=Tracer(NULL_SINK, "test"))
    base = Attributes(
        user=ALICE,
        operation="",
        group=rtype.group,
        version=rtype.version,
        resource=rtype.plural,
        subresource="",
        kind=rtype.kind,
        kind_group=rtype.group,
        kind_version=rtype.version,
        namespace="default" if rtype.namespaced else "",
        name="",
        namespaced=rtype.namespaced,
    )
    return RequestScope(
        user=ALICE, admission=Admission(chain, base, Scope(audit_id=audit_id)), audit_id=audit_id, written=[]
    )


def pod(name: str = "web", **meta: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


def namespace(name: str = "team") -> Object:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def labelled(obj: Object) -> Object:
    obj["metadata"].setdefault("labels", {})["changed"] = "yes"
    return obj


def running(obj: Object) -> Object:
    obj.setdefault("status", {})["phase"] = "Running"
    return obj


# -- the write paths ---------------------------------------------------------------------------------

Drive = Callable[[Registry, Any], Awaitable[object]]


@dataclass(frozen=True)
class WritePath:
    """One way of calling a registry write method, and the admission upstream runs for it."""

    label: str
    registry: type[Registry]
    method: str
    drive: Drive
    admitted: tuple[tuple[str, str], ...]


def both(operation: str) -> tuple[tuple[str, str], ...]:
    return (("mutating", operation), ("validating", operation))


PATHS = (
    WritePath(
        "Registry.prepare_create",
        Registry,
        "prepare_create",
        lambda r, scope: r.prepare_create(pod("new"), "default", scope=scope),
        both("CREATE"),
    ),
    WritePath(
        "Registry.create",
        Registry,
        "create",
        lambda r, scope: r.create(pod("new"), "default", scope=scope),
        both("CREATE"),
    ),
    WritePath(
        "Registry.update",
        Registry,
        "update",
        lambda r, scope: r.update("default", "web", labelled, scope=scope),
        both("UPDATE"),
    ),
    WritePath(
        "Registry.update(subresource='status')",
        Registry,
        "update",
        lambda r, scope: r.update("default", "web", running, scope=scope, subresource="status"),
        both("UPDATE"),
    ),
    WritePath(
        "Registry.update(create_if_missing=True) of a missing object",
        Registry,
        "update",
        lambda r, scope: r.update(
            "default", "new", lambda _: pod("new"), scope=scope, create_if_missing=True
        ),
        both("CREATE"),
    ),
    WritePath(
        "Registry.delete (a pod: marked, with its grace period)",
        Registry,
        "delete",
        lambda r, scope: r.delete("default", "web", scope=scope),
        both("DELETE"),
    ),
    WritePath(
        "Registry.delete(grace_period=0) (removed at once)",
        Registry,
        "delete",
        lambda r, scope: r.delete("default", "web", scope=scope, grace_period=0),
        both("DELETE"),
    ),
    WritePath(
        "NamespaceRegistry.prepare_create",
        NamespaceRegistry,
        "prepare_create",
        lambda r, scope: r.prepare_create(namespace("new"), "", scope=scope),
        both("CREATE"),
    ),
    WritePath(
        "NamespaceRegistry.create",
        NamespaceRegistry,
        "create",
        lambda r, scope: r.create(namespace("new"), "", scope=scope),
        both("CREATE"),
    ),
    WritePath(
        "NamespaceRegistry.update",
        NamespaceRegistry,
        "update",
        lambda r, scope: r.update("", "team", labelled, scope=scope),
        both("UPDATE"),
    ),
    WritePath(
        "NamespaceRegistry.delete (marked Terminating)",
        NamespaceRegistry,
        "delete",
        lambda r, scope: r.delete("", "team", scope=scope),
        both("DELETE"),
    ),
)


def write_methods(registry: type[Registry]) -> set[str]:
    """The public methods of ``registry`` that are not reads: the ones that write, or admit a write."""
    return {
        name
        for name, member in inspect.getmembers(registry, inspect.isfunction)
        if not name.startswith("_") and name not in READS
    }


@pytest.mark.parametrize("registry", [Registry, NamespaceRegistry], ids=lambda r: r.__name__)
def test_every_write_method_is_driven(registry: type[Registry]) -> None:
    driven = {path.method for path in PATHS if path.registry is registry}
    undriven = write_methods(registry) - driven
    assert not undriven, (
        f"{registry.__name__} has write methods no test drives: add a WritePath for {undriven}"
    )


@pytest.mark.parametrize("registry", [Registry, NamespaceRegistry], ids=lambda r: r.__name__)
def test_every_write_method_requires_a_scope(registry: type[Registry]) -> None:
    for name in write_methods(registry):
        parameter = inspect.signature(getattr(registry, name)).parameters.get("scope")
        assert parameter is not None, f"{registry.__name__}.{name} takes no scope"
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, f"{registry.__name__}.{name}: scope="
        assert parameter.default is inspect.Parameter.empty, (
            f"{registry.__name__}.{name}'s scope has a default"
        )


async def registry_for(path: WritePath, tmp_path: Path) -> tuple[SqliteStore, Registry]:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=ListSink())
    await store.start()
    if path.registry is NamespaceRegistry:
        registry: Registry = NamespaceRegistry(store, NAMESPACES, SYSTEM_CLOCK)
        await registry.create(namespace(), "", scope=SETUP)
    else:
        registry = Registry(store, PODS, SYSTEM_CLOCK)
        await registry.create(pod(), "default", scope=SETUP)
    return store, registry


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.label)
async def test_a_write_without_a_scope_is_refused_and_writes_nothing(path: WritePath, tmp_path: Path) -> None:
    store, registry = await registry_for(path, tmp_path)
    try:
        before = await store.current_revision()
        with pytest.raises(MissingRequestScope, match=rf"Registry\.{path.method} needs a RequestScope"):
            await path.drive(registry, None)
        assert await store.current_revision() == before, f"{path.label} wrote without a scope"
    finally:
        await store.close()


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.label)
async def test_every_registry_write_is_admitted(path: WritePath, tmp_path: Path) -> None:
    store, registry = await registry_for(path, tmp_path)
    try:
        plugin = Recording()
        rtype = NAMESPACES if path.registry is NamespaceRegistry else PODS
        await path.drive(registry, recording_scope(plugin, rtype))
        expected = list(path.admitted)
        assert tuple(plugin.seen) == path.admitted, (
            f"{path.label} skipped admission: the chain saw {plugin.seen}, upstream runs {expected}"
        )
    finally:
        await store.close()


async def test_a_write_is_named_by_its_request_and_its_revision_collected(tmp_path: Path) -> None:
    """The store's ``store.txn`` names the request the registry hands it (no request is being served
    here, so nothing else could name it); the scope collects the revision for ``request.completed``."""
    trace = ListSink()
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=trace)
    await store.start()
    try:
        scope = recording_scope(Recording(), PODS, audit_id="req-7")
        created = await Registry(store, PODS, SYSTEM_CLOCK).create(pod(), "default", scope=scope)
        (write,) = [e for e in trace.of_type("store.txn") if e["op"] == "txn"]
        assert write["id"] == "req-7"
        assert scope.written == [int(created["metadata"]["resourceVersion"])] == [write["revision"]]
    finally:
        await store.close()


def test_a_scope_is_admitted_or_says_why_not() -> None:
    with pytest.raises(ValueError):
        RequestScope(user=None, admission=None)
    with pytest.raises(ValueError):
        RequestScope.unadmitted(reason="")
    plugin = Recording()
    scope = recording_scope(plugin, PODS)
    with pytest.raises(ValueError):
        RequestScope(user=ALICE, admission=scope.admission, unadmitted_because="both")
    system = RequestScope.unadmitted(reason="bootstrap")
    assert (system.user, system.admission, system.audit_id, system.written) == (None, None, None, None)


async def test_a_write_already_admitted_keeps_its_request_but_is_not_admitted_again() -> None:
    plugin = Recording()
    scope = recording_scope(plugin, PODS)
    inner = scope.already_admitted("admitted as the pods/eviction create")
    assert (inner.user, inner.report, inner.audit_id, inner.written) == (
        scope.user,
        scope.report,
        scope.audit_id,
        scope.written,
    )
    assert inner.admission is None and inner.unadmitted_because == "admitted as the pods/eviction create"
    await inner.admit_delete(pod())
    assert plugin.seen == []
