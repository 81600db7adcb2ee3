"""The web application's one door into the running lab.

Under ``manage.py runlab`` the web side (``courses``) and the clusters share one process. Everything
the web side needs from the clusters goes through this module, and no other module of ``courses``
imports ``controlplane.runtime``, ``controlplane.diagram`` or ``controlplane.consumers``: the
import-linter contract "Only courses.gateway reaches into the running lab" (pyproject.toml) says so.
Today that is:

- the clusters of the lab and their states (``cluster_names``, ``running_lab``);
- the rule for a cluster's name (``check_cluster_name``), for the classrooms' model;
- a running cluster's store, read the lab's own way (``Store.inspect``, like ``etcdctl``: neither
  traced nor measured, so the diagram never draws a read the API server did not make): a range of
  keys or some keys for the etcd panel (``read_range``, ``read_keys``), the Nodes, Pods and Leases the
  diagram draws (``read_diagram``);
- the path of a cluster's trace socket (``trace_socket_path``), a route the control plane serves;
- acting on a cluster through its API server's whole pipeline, as the holder of a token
  (``api_client``), and following its trace (``subscribe_trace``);
- the students' sandboxes: a cluster made or woken on demand (``ensure_cluster``), hibernated
  (``hibernate_cluster``), made anew (``recreate_cluster``), kept awake (``touch``); what it is
  (``cluster_facts``); the tokens the lab keeps to act for people (``kept_token``); objects the lab
  itself applies through the API server (``apply_as_lab``); where kubectl reaches it and which CA
  to trust (``api_endpoint``);
- faults (``controlplane/faults``): applied to a cluster (``apply_fault``), cleared (``clear_fault``,
  ``clear_all_faults``), listed (``faults_in_force``), through the lab's one ``FaultService``; what
  they caused, counted from the trace (``fault_episodes``).

What comes back is plain data (frozen dataclasses, the store's ``KeyValue`` rows), never the ``Lab``,
a ``Cluster`` or a ``Store``, so a caller cannot start, stop or write anything by accident. The errors
a caller handles are defined or re-exported here: ``NotServedHere``, ``NotRunning``,
``InvalidClusterName``, ``FaultRefused`` and the store's ``Compacted``, ``FutureRevision`` and
``InvalidRequest``.

A feature that needs more of the lab (a student's own cluster, a request from the kubectl console,
the objects a check looks at) adds a function here, so the web side's dependencies on the control
plane stay in one place. The functions are keyword-only and typed (the HackSoft Django styleguide's
services and selectors); selectors and services call them, views call those.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import httpx
from django.urls import reverse

from controlplane.apiserver.admission.sandboxguardrails import GUARDRAIL_LABEL
from controlplane.client.transport import InProcessTransport
from controlplane.clusterhealth import FailureWindow, Health
from controlplane.consumers.routing import websocket_urlpatterns
from controlplane.diagram import DiagramObjects, read_objects
from controlplane.faults.catalogue import FaultSpec, InvalidFault
from controlplane.faults.consequences import Episodes
from controlplane.faults.service import FaultError, FaultService
from controlplane.identity import SYSTEM_MASTERS
from controlplane.pki import locked, write_atomic
from controlplane.runtime import (
    SANDBOX_PREFIX,
    Cluster,
    ClusterState,
    ClusterUnavailable,
    InvalidClusterName,
    Lab,
    LabState,
    active_lab,
    cluster_dir,
    is_served,
    known_clusters,
)
from controlplane.runtime import check_cluster_name as _check_cluster_name
from controlplane.store.errors import Compacted, FutureRevision, InvalidRequest, UnknownCluster
from controlplane.store.kv import KeyValue
from controlplane.trace.bus import Subscription, TraceBus
from controlplane.trace.recorder import TooOld

# -- the lab and its clusters ------------------------------------------------------------------------

#: A cluster's state while it starts, once stopped, and while it hibernates.
STARTING = ClusterState.STARTING.value
STOPPED = ClusterState.STOPPED.value
HIBERNATED = ClusterState.HIBERNATED.value
#: The states of a lab still starting: the clusters it has not started yet are still to come.
_LAB_STARTING = frozenset({LabState.NEW.value, LabState.STARTING.value})
#: The states of a lab or a cluster that has not settled yet (a page showing it keeps polling).
UNSETTLED = _LAB_STARTING | {ClusterState.NEW.value, ClusterState.STARTING.value}


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """One cluster of the lab this process runs."""

    name: str
    #: ``new``, ``starting``, ``running``, ``stopping``, ``stopped`` or ``failed``.
    state: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class LabStatus:
    """The lab this process runs."""

    #: ``new``, ``starting``, ``running``, ``stopping`` or ``stopped``.
    state: str
    #: Its clusters, by name.
    clusters: tuple[ClusterStatus, ...]

    @property
    def starting(self) -> bool:
        """Whether the lab is still starting: a cluster it has not started yet is still to come."""
        return self.state in _LAB_STARTING


def cluster_names(*, data_dir: Path, store_url: str) -> list[str]:
    """The names of the clusters of the lab in ``data_dir`` (running here or not), by name."""
    return known_clusters(data_dir, store_url=store_url)


def running_lab(*, data_dir: Path) -> LabStatus | None:
    """The lab this process runs (``manage.py runlab``), if it is the one in ``data_dir``; else None.

    None in a test client, ``manage.py shell`` or a second web process of a scale-out.
    """
    lab = active_lab()
    if lab is None or lab.data_dir != data_dir:
        return None
    clusters = tuple(ClusterStatus(c.name, c.state.value, c.error) for c in lab.clusters())
    return LabStatus(state=lab.state.value, clusters=clusters)


def check_cluster_name(*, name: str) -> None:
    """Raise ``InvalidClusterName`` unless ``name`` is a DNS label, as the lab requires of a cluster."""
    _check_cluster_name(name)


# -- a running cluster's store -----------------------------------------------------------------------


class NotServedHere(LookupError):
    """The cluster is not running in this process: no lab here, or none by that name."""

    def __init__(self, cluster: str) -> None:
        super().__init__(f"cluster {cluster!r} is not running in this process")
        self.cluster = cluster


class NotRunning(Exception):
    """The cluster is in this process's lab but not running (starting, stopped, failed ...)."""

    def __init__(self, cluster: str, *, state: str) -> None:
        super().__init__(f"cluster {cluster!r} is {state}")
        self.cluster = cluster
        self.state = state


def _running(cluster: str) -> Cluster:
    lab = active_lab()
    try:
        if lab is None:
            raise UnknownCluster(cluster)
        found = lab.cluster(cluster)
    except UnknownCluster:
        raise NotServedHere(cluster) from None
    # A cluster whose API server serves while its components still start (a sandbox waking) is
    # running as far as its clients can tell.
    if found.state is not ClusterState.RUNNING and not lab.serving(cluster):
        raise NotRunning(cluster, state=found.state.value)
    return found


def require_running(*, cluster: str) -> None:
    """Raise ``NotServedHere`` or ``NotRunning`` unless the cluster runs in this process."""
    _running(cluster)


@dataclass(frozen=True, slots=True)
class StoreRead:
    """What one read of a cluster's store found, with the store's marks at the time."""

    #: The revision read at.
    revision: int
    current_revision: int
    #: The compaction mark: history before it is gone.
    compacted: int
    kvs: tuple[KeyValue, ...]
    #: Whether more keys matched than were answered, and how many matched.
    more: bool = False
    count: int = 0
    #: The keys asked for by name (``read_keys``) that do not exist at ``revision``.
    absent: tuple[str, ...] = ()


async def read_range(*, cluster: str, prefix: str, limit: int, revision: int | None = None) -> StoreRead:
    """The keys under ``prefix`` at ``revision`` (default: now), at most ``limit`` of them.

    Raises ``NotServedHere``, ``NotRunning``, or the store's ``Compacted`` (older than the compaction
    mark), ``FutureRevision`` or ``InvalidRequest`` (a prefix outside the store's).
    """
    store = _running(cluster).store
    result = await store.inspect(prefix, revision=revision, limit=limit)
    current, compacted = await store.current_revision(), await store.compact_revision()
    return StoreRead(
        result.revision, current, compacted, tuple(result.kvs), more=result.more, count=result.count
    )


async def read_keys(*, cluster: str, keys: Sequence[str], revision: int | None = None) -> StoreRead:
    """The given keys at ``revision`` (default: now), one read each; the missing ones as ``absent``.

    Raises as ``read_range`` does.
    """
    store = _running(cluster).store
    if revision is None:
        revision = await store.current_revision()
    found: list[KeyValue] = []
    absent: list[str] = []
    for key in keys:
        result = await store.inspect(key, revision=revision, limit=1)
        match = [kv for kv in result.kvs if kv.key == key]
        if match:
            found.append(match[0])
        else:
            absent.append(key)
    current, compacted = await store.current_revision(), await store.compact_revision()
    return StoreRead(revision, current, compacted, tuple(found), count=len(found), absent=tuple(absent))


async def read_diagram(*, cluster: str, revision: int | None = None) -> DiagramObjects:
    """The Nodes, Pods and leader Leases at ``revision`` (default: now), as the diagram draws them.

    Raises as ``read_range`` does.
    """
    return await read_objects(_running(cluster).store, revision=revision)


# -- acting on a cluster: its API server, its trace -----------------------------------------------------


@asynccontextmanager
async def api_client(
    *, cluster: str, token: str, read_timeout: float = 30.0
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client for the cluster's API server in this process, as the holder of ``token``.

    Its requests go through the API server's whole pipeline (authentication, audit, flow control,
    RBAC, admission, storage) and are traced like kubectl's: the in-process transport is the same one
    the components use, without a socket. Paths are the API's own (``/api/v1/namespaces``), relative
    to the client's base URL ``http://lab/clusters/<cluster>``. The web app never holds a credential
    with more rights than the person it acts for; ``token`` is theirs.

    A hibernated cluster is woken first, and the cluster counts as in use while the client is open.
    Raises ``NotServedHere`` or ``NotRunning`` as ``read_range`` does.
    """
    lab = active_lab()
    if lab is not None:
        await lab.use(cluster)
    found = _running(cluster)
    if found.apiserver is None:
        raise NotRunning(cluster, state=STOPPED)
    assert lab is not None  # _running found the cluster in it
    prefix = f"/clusters/{cluster}"
    # The cluster's address, not its server: a client kept open across an API server restart
    # reaches the new server, as kubectl's next request does (controlplane/endpoint.py).
    transport = InProcessTransport(found.endpoint, mount_prefix=prefix)
    client = httpx.AsyncClient(
        transport=transport,
        base_url=f"http://lab{prefix}",
        headers={"Authorization": f"Bearer {token}", "User-Agent": "kubelab-web/1.0"},
        timeout=read_timeout,
    )
    try:
        with lab.busy(cluster):
            yield client
    finally:
        await client.aclose()


def subscribe_trace(*, cluster: str) -> Subscription:
    """A subscription to every trace event of the cluster from now on (close it when done).

    While it is open the cluster traces even when no page watches, which is what a step's check that
    listens for events needs. Raises ``NotServedHere`` or ``NotRunning`` as ``read_range`` does.
    """
    return _running(cluster).trace.subscribe()


# -- sandboxes: clusters made, woken and remade on demand -----------------------------------------------

#: The label of the objects that keep a sandbox's guardrails (its admission plugin protects them).
SANDBOX_GUARDRAIL_LABEL = GUARDRAIL_LABEL
#: The identity the lab itself acts as in a sandbox, to set it up through its API server: in
#: ``system:masters``, as kubeadm's ``kubernetes-admin``, so admission's guardrails let it through.
LAB_MANAGER = "kubelab:sandbox-manager"
#: The field manager of what the lab applies (server-side apply): ``kubectl get -o yaml
#: --show-managed-fields`` names it as the owner of the fields it set.
LAB_FIELD_MANAGER = "kubelab-sandbox"
#: The lab's kept tokens, in the cluster's directory (see ``kept_token``).
KEPT_TOKENS_FILE = "kept-tokens.json"


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """What a page says about one cluster of the lab running here."""

    name: str
    #: ``starting``, ``running``, ``hibernated``, ``stopped``, ``failed`` ...
    state: str
    #: The timing profile in force (``classroom``, ``upstream``) and the simulated nodes.
    timing: str
    nodes: int
    #: Unique in this process per cluster made: a cluster made anew under the same name has another.
    incarnation: int
    error: str | None = None


class ApplyFailed(Exception):
    """The API server refused an object the lab applied (``status`` and ``message`` are its answer)."""

    def __init__(self, cluster: str, what: str, status: int, message: str) -> None:
        super().__init__(f"cluster {cluster!r} refused {what}: {status} {message}")
        self.status = status
        self.message = message


def _lab_here(cluster: str) -> Lab:
    lab = active_lab()
    if lab is None:
        raise NotServedHere(cluster)
    return lab


def _facts(cluster: Cluster) -> ClusterFacts:
    return ClusterFacts(
        cluster.name,
        cluster.state.value,
        cluster.timing.name,
        cluster.nodes,
        cluster.incarnation,
        cluster.error,
    )


def cluster_facts(*, cluster: str) -> ClusterFacts:
    """The cluster as it is now, started or not; ``NotServedHere`` if this process does not run it."""
    try:
        return _facts(_lab_here(cluster).cluster(cluster))
    except UnknownCluster:
        raise NotServedHere(cluster) from None


async def ensure_cluster(*, cluster: str) -> ClusterFacts:
    """The cluster, running: made if the lab has none by that name (a sandbox's name gives it a
    sandbox's nodes, timing and guardrails), woken if it hibernates. Returns once its API server
    serves; callers at the same time share one start. ``NotServedHere`` without a lab here,
    ``NotRunning`` if it cannot start (``error`` in ``cluster_facts`` says why)."""
    lab = _lab_here(cluster)
    try:
        return _facts(await lab.ensure_cluster(cluster))
    except ClusterUnavailable as error:
        raise NotRunning(cluster, state=error.state.value) from error
    except RuntimeError as error:  # it failed to start
        raise NotRunning(cluster, state=ClusterState.FAILED.value) from error


async def recreate_cluster(*, cluster: str) -> ClusterFacts:
    """Stop the cluster, delete its data (its store and identities: every token and certificate of it
    stops working), and start it anew, empty. Raises as ``ensure_cluster`` does."""
    lab = _lab_here(cluster)
    try:
        return _facts(await lab.recreate_cluster(cluster))
    except RuntimeError as error:
        raise NotRunning(cluster, state=ClusterState.FAILED.value) from error


async def hibernate_cluster(*, cluster: str, idle_for: float | None = None) -> bool:
    """Hibernate the running cluster (with ``idle_for``, only if unused that long); whether it did."""
    try:
        return await _lab_here(cluster).hibernate(cluster, idle_for=idle_for)
    except UnknownCluster:
        raise NotServedHere(cluster) from None


def touch(*, cluster: str) -> None:
    """Someone uses the cluster now (a page, a socket): it does not hibernate for a while. Cheap: a
    timestamp in a dictionary. Nothing happens without a lab here."""
    lab = active_lab()
    if lab is not None:
        lab.touch(cluster)


def _read_kept(path: Path) -> dict[str, str]:
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    tokens = document.get("tokens") if isinstance(document, dict) else None
    if not isinstance(tokens, dict):
        return {}
    return {user: token for user, token in tokens.items() if isinstance(user, str) and isinstance(token, str)}


def _kept_token(cluster: Cluster, user: str, groups: tuple[str, ...]) -> str:
    """The kept token of ``user`` if the cluster still accepts it for them, else a new one, kept.
    Blocking file I/O, under a lock: two callers at once get the same token."""
    path = cluster.data_dir / KEPT_TOKENS_FILE
    with locked(cluster.data_dir, f".{KEPT_TOKENS_FILE}.lock"):
        kept = _read_kept(path)
        token = kept.get(user)
        if token is not None:
            info = cluster.tokens.authenticate(token)
            if info is not None and info.username == user and set(groups) <= set(info.groups):
                return token
        token = cluster.tokens.issue(user, groups)
        kept[user] = token
        document = {"version": 1, "tokens": kept}
        write_atomic(path, json.dumps(document, indent=2).encode() + b"\n", mode=0o600)
        return token


async def kept_token(*, cluster: str, user: str, groups: Sequence[str] = ()) -> str:
    """A bearer token of the running cluster for ``user`` (in ``groups``), which the lab keeps so that
    the web app can act as them in later requests: the same one each time while the cluster accepts it.

    The cluster's token registry keeps only hashes (``controlplane/tokens.py``), so a token the web
    app must use again has to be kept somewhere: in ``<cluster dir>/kept-tokens.json`` (mode 0600),
    beside the registry, rather than in the web app's database. It then lives and dies with the
    cluster: a remade cluster (``recreate_cluster``) has no kept tokens, and nothing of the old one
    works anywhere. Raises ``NotServedHere`` or ``NotRunning``.
    """
    found = _running(cluster)
    return await asyncio.to_thread(_kept_token, found, user, tuple(groups))


def _path_of(cluster: Cluster, obj: Mapping[str, Any]) -> tuple[str, str]:
    """The URL path of ``obj`` in the cluster's API, and how to name it in an error."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace", ""))
    group, _, version = api_version.rpartition("/")
    server = cluster.apiserver
    rtype = server.types.by_kind(group, version, kind) if server is not None else None
    if rtype is None or not name:
        raise ValueError(f"cannot apply {kind} {name!r} ({api_version}): not a resource of the cluster")
    root = f"/apis/{group}/{version}" if group else f"/api/{version}"
    where = f"/namespaces/{quote(namespace or 'default', safe='')}" if rtype.namespaced else ""
    return f"{root}{where}/{rtype.plural}/{quote(name, safe='')}", f"{kind} {name!r}"


async def apply_as_lab(*, cluster: str, objects: Sequence[Mapping[str, Any]]) -> None:
    """Apply ``objects`` to the running cluster as the lab itself (``LAB_MANAGER``, in
    ``system:masters``), through the API server's whole pipeline, by server-side apply: each is
    created if missing and set back to what is given if changed. Idempotent.

    Never written to the store directly: the writes are authenticated, audited, admitted and traced
    like anyone's. Raises ``ApplyFailed`` if the API server refuses one, ``NotServedHere`` or
    ``NotRunning``.
    """
    found = _running(cluster)
    token = await asyncio.to_thread(_kept_token, found, LAB_MANAGER, (SYSTEM_MASTERS,))
    params = {"fieldManager": LAB_FIELD_MANAGER, "force": "true"}
    headers = {"Content-Type": "application/apply-patch+yaml"}
    async with api_client(cluster=cluster, token=token) as client:
        for obj in objects:
            path, what = _path_of(found, obj)
            response = await client.patch(path, params=params, headers=headers, content=json.dumps(obj))
            if response.status_code not in (200, 201):
                try:
                    message = str(response.json().get("message", response.text))
                except ValueError:
                    message = response.text
                raise ApplyFailed(cluster, what, response.status_code, message)


@dataclass(frozen=True, slots=True)
class ApiEndpoint:
    """Where kubectl reaches a cluster of the lab here, and what it trusts there."""

    #: The API port this lab serves (``runlab --api``) as ``(host, port)``; None when it serves none
    #: (a test, the benchmark): then ``KUBELAB_API_ADDRESS`` is the best guess.
    address: tuple[str, int] | None
    #: The PEM of the CA that signed the API port's certificate (the cluster's own CA without one).
    ca_pem: bytes


def api_endpoint(*, cluster: str) -> ApiEndpoint:
    """The API port and CA for a kubeconfig of the running cluster; ``NotServedHere``, ``NotRunning``."""
    found = _running(cluster)
    lab = active_lab()
    return ApiEndpoint(lab.config.api_address if lab is not None else None, found.root_ca)


# -- faults: breaking a cluster on purpose ---------------------------------------------------------------


class FaultRefused(Exception):
    """A fault that cannot be applied or cleared now; the message says why (in English, for the log
    and the instructor: a student's page words it itself)."""


@dataclass(frozen=True, slots=True)
class FaultDone:
    """What applying or clearing a fault did to a cluster.

    ``outcome`` is ``applied`` (in force from now, or done: a fault that happens at once), ``renewed``
    (it was in force: its time starts anew), ``under way`` (it is happening now), ``pending`` (it starts
    later), ``cleared``, or ``not in force`` (there was nothing to clear).
    """

    kind: str
    target: str
    outcome: str
    #: When it ends by itself (cluster time), for a lasting fault applied.
    ends_at: float | None = None


def _faults(cluster: str) -> FaultService:
    return FaultService.of(_lab_here(cluster))


async def apply_fault(
    *, cluster: str, fault: FaultSpec, reason: str, delay: float = 0.0, actor: str = ""
) -> FaultDone:
    """Apply ``fault`` (checked by the catalogue) to the cluster, woken first if it hibernates; returns
    once it is in force (a restart: once the new API server serves), or at once with outcome
    ``pending`` when it starts ``delay`` seconds from now. ``reason`` says who and why, on the trace;
    ``actor`` is the user the cluster's audit log names. Raises ``NotServedHere`` or ``FaultRefused``."""
    lab = _lab_here(cluster)
    await lab.use(cluster)
    try:
        done = await FaultService.of(lab).apply_spec(cluster, fault, reason=reason, delay=delay, actor=actor)
    except UnknownCluster:
        raise NotServedHere(cluster) from None
    except (InvalidFault, FaultError) as error:
        raise FaultRefused(str(error)) from error
    return FaultDone(fault.kind, fault.target, done.outcome.value, done.fault.ends_at)


async def clear_fault(*, cluster: str, fault: FaultSpec, reason: str, actor: str = "") -> FaultDone:
    """Clear ``fault`` from the cluster (the one with its kind and parameters). Raises as ``apply_fault``."""
    try:
        cleared = await _faults(cluster).clear(
            cluster, fault.kind, fault.parameters(), reason=reason, actor=actor
        )
    except UnknownCluster:
        raise NotServedHere(cluster) from None
    except (InvalidFault, FaultError) as error:
        raise FaultRefused(str(error)) from error
    return FaultDone(fault.kind, fault.target, "cleared" if cleared else "not in force")


async def clear_all_faults(*, cluster: str, reason: str, actor: str = "") -> int:
    """Clear every fault of the cluster and heal what is left broken (``FaultService.clear_all``); how
    many faults were cleared. Raises ``NotServedHere``."""
    try:
        return len(await _faults(cluster).clear_all(cluster, reason=reason, actor=actor))
    except UnknownCluster:
        raise NotServedHere(cluster) from None


def clear_faults_soon(*, clusters: Sequence[str], reason_suffix: str, reason: str) -> bool:
    """From any thread: have the lab clear, on its own loop, every fault (in force or pending) of
    ``clusters`` whose reason ends with ``reason_suffix`` (what a classroom's instructors applied).
    Returns at once; False without a running lab here (then no fault of it is in this process)."""
    lab = active_lab()
    if lab is None or lab.loop is None or lab.loop.is_closed():
        return False

    async def clear() -> None:
        service = FaultService.of(lab)
        for cluster in clusters:
            for fault in [*service.in_force(cluster), *service.pending(cluster)]:
                if fault.reason.endswith(reason_suffix):
                    await service.clear_fault(fault.id, reason=reason)

    _soon(lab, clear, name="clear faults")
    return True


def delete_cluster_soon(*, cluster: str) -> bool:
    """From any thread: have the lab stop cluster ``cluster``, delete its data (its objects, its
    identities) and forget it, on its own loop. Returns at once; False without a running lab here."""
    lab = active_lab()
    if lab is None or lab.loop is None or lab.loop.is_closed():
        return False

    async def delete() -> None:
        await lab.delete_cluster(cluster)

    _soon(lab, delete, name=f"delete {cluster}")
    return True


def _soon(lab: Lab, work: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> None:
    """Start ``work()`` on the lab's loop from any thread, kept alive until it ends."""

    def start() -> None:
        task = lab.loop.create_task(work(), name=name) if lab.loop is not None else None
        if task is not None:
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)

    assert lab.loop is not None
    lab.loop.call_soon_threadsafe(start)


#: Tasks started for callers on other threads, kept until they end.
_BACKGROUND: set[asyncio.Task[None]] = set()


def lab_serves(*, data_dir: Path, cluster: str) -> bool:
    """Whether a lab process (``runlab``) serves ``cluster`` of the data directory now, this process
    or another: what ``manage.py fault`` asks before it writes a request for the lab to do."""
    return is_served(cluster_dir(data_dir, cluster))


def faults_in_force(*, cluster: str) -> list[dict[str, Any]]:
    """The faults in force on the cluster, each as ``Fault.as_json`` says it (none without a lab here)."""
    lab = active_lab()
    if lab is None:
        return []
    return [fault.as_json() for fault in FaultService.of(lab).in_force(cluster)]


class _TraceReader(Protocol):
    """What reads a cluster's recorded trace a little at a time (``Episodes``, ``FailureWindow``)."""

    last_seq: int

    def offer(self, event: Mapping[str, Any]) -> None: ...


_Reader = TypeVar("_Reader", bound=_TraceReader)


def _read_on(
    readers: weakref.WeakKeyDictionary[TraceBus, _Reader], bus: TraceBus, new: Callable[[], _Reader]
) -> _Reader:
    """``bus``'s reader in ``readers`` (made by ``new`` the first time), given the events recorded
    since it last read. A recorder that has pushed out events not yet read is read again from its
    oldest event, by a new reader: the counts start over there."""
    reader = readers.get(bus)
    if reader is None:
        reader = readers[bus] = new()
    try:
        events = bus.recorder.since(reader.last_seq)
    except TooOld:
        reader = readers[bus] = new()
        events = list(bus.recorder)
    for event in events:
        reader.offer(event)
    return reader


#: The fault episodes read so far of each cluster's trace, by its bus: each call reads only what was
#: recorded since the last (weak keys: a bus that goes, goes with its episodes).
_EPISODES: weakref.WeakKeyDictionary[TraceBus, Episodes] = weakref.WeakKeyDictionary()


def fault_episodes(*, cluster: str) -> list[dict[str, Any]]:
    """What the cluster's recent faults caused, newest first (``controlplane.faults.consequences``),
    counted from its recorded trace; none without a lab here. A recorder that has pushed out events
    not yet read is read again from its oldest event, and the counts start over there."""
    lab = active_lab()
    if lab is None:
        return []
    episodes = _read_on(_EPISODES, lab.trace_bus(cluster), Episodes)
    return [episode.as_json() for episode in episodes.episodes()]


#: The failing answers read so far of each cluster's trace, by its bus (as ``_EPISODES``).
_FAILURES: weakref.WeakKeyDictionary[TraceBus, FailureWindow] = weakref.WeakKeyDictionary()


def cluster_health(*, cluster: str) -> dict[str, Any] | None:
    """The cluster's Ready nodes, pending pods and failing answers of the last minute
    (``controlplane.clusterhealth``), read from its API server's watch caches and its recorded trace;
    None unless it serves in this process (hibernating, stopped, or in another process)."""
    lab = active_lab()
    if lab is None:
        return None
    try:
        found = lab.cluster(cluster)
    except UnknownCluster:
        return None
    server = found.apiserver
    if server is None or not lab.serving(cluster):
        return None
    objects: dict[str, list[Any]] = {"nodes": [], "pods": []}
    for cache in server.caches.values():
        plural = cache.rtype.plural
        if cache.rtype.group == "" and plural in objects and cache.ready:
            objects[plural] = [cached.obj for cached in cache.list(None, None)]
    window = _read_on(_FAILURES, lab.trace_bus(cluster), FailureWindow)
    failing = window.count(found.clock.now())
    return Health.of(objects["nodes"], objects["pods"], failing).as_json()


# -- the control plane's own routes ------------------------------------------------------------------

#: The control plane's websocket routes (controlplane/consumers/routing.py). Channels serves them,
#: outside ``ROOT_URLCONF``, so ``reverse`` cannot find them there: this module names them as its
#: ``urlpatterns`` and ``trace_socket_path`` reverses against it (``urlconf=__name__``). No request is
#: ever routed through this module.
urlpatterns = websocket_urlpatterns


def trace_socket_path(*, cluster: str) -> str:
    """The path of the cluster's trace socket (``/ws/lab/<cluster>/trace/``), by its route's name."""
    return reverse("trace-stream", urlconf=__name__, kwargs={"cluster": cluster})


__all__ = [
    "HIBERNATED",
    "LAB_FIELD_MANAGER",
    "LAB_MANAGER",
    "SANDBOX_GUARDRAIL_LABEL",
    "SANDBOX_PREFIX",
    "STARTING",
    "STOPPED",
    "UNSETTLED",
    "ApiEndpoint",
    "ApplyFailed",
    "ClusterFacts",
    "ClusterStatus",
    "Compacted",
    "DiagramObjects",
    "FaultDone",
    "FaultRefused",
    "FutureRevision",
    "InvalidClusterName",
    "InvalidRequest",
    "KeyValue",
    "LabStatus",
    "NotRunning",
    "NotServedHere",
    "StoreRead",
    "Subscription",
    "api_client",
    "api_endpoint",
    "apply_as_lab",
    "apply_fault",
    "check_cluster_name",
    "clear_all_faults",
    "clear_fault",
    "clear_faults_soon",
    "cluster_facts",
    "cluster_health",
    "cluster_names",
    "ensure_cluster",
    "faults_in_force",
    "hibernate_cluster",
    "kept_token",
    "lab_serves",
    "read_diagram",
    "read_keys",
    "read_range",
    "recreate_cluster",
    "require_running",
    "running_lab",
    "subscribe_trace",
    "touch",
    "trace_socket_path",
]
