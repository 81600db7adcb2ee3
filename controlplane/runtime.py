"""The runtime: the clusters this process runs, and how each one starts and stops.

A **cluster** is what ``kubectl`` talks to: in real Kubernetes an etcd, a kube-apiserver in front of it,
and the components (scheduler, controller-manager, kubelets) that watch the API server and act. In
Kubelab a cluster is the same parts as asyncio tasks in one process: ``Cluster`` owns them, starts them
in dependency order (the store first, because everything else reads and writes through the API server
and the API server keeps its state in the store) and stops them in reverse: its identities, its store,
its API server, then its components (``component_plan``: the scheduler, the controller manager, and a
kubelet and a kube-proxy per simulated node), each a client of the API server with its own credential,
over the in-process transport. The scheduler and the controller manager stand for leader election, as
upstream's do by default, so even alone each holds its Lease in ``kube-system`` and starts its work once
it leads. ``LabConfig.components`` leaves some out, to be run as processes of their own
(``manage.py runcomponent``).

A cluster's **identities** are files in its directory, made on its first start and kept after: its
client CA and ServiceAccount signing key (``<cluster dir>/pki/``, see ``controlplane.pki``), the
registry of its people's bearer tokens (``<cluster dir>/tokens.json``, see ``controlplane.tokens``) and
its revoked client certificates (``controlplane.revocation``) and its encryption at rest
(``<cluster dir>/encryption-config.yaml``, see ``controlplane.apiserver.encryption``: Secrets are
encrypted by default, and a changed file is reloaded while the cluster runs). No token is made
here: ``manage.py kubeconfig`` issues one (for ``admin`` too) each time it runs. The components get
client certificates (``controlplane.componentcerts``), made at each start and never written to disk;
a joined node's kubelet asks for its own with kubeadm's bootstrap token and keeps it in
``<cluster dir>/nodes/<node>/pki`` (TLS bootstrapping, ``components/kubelet/certificate.py``).

A **lab** (``Lab``) is every cluster of this process. It keeps the list of clusters in
``<data dir>/clusters.json``, a small file that works whatever the store backend, and for the embedded
SQLite backend it also finds the clusters whose store files are under ``<data dir>/clusters/<name>/``.
On its very first start in a data directory it creates the demo cluster, so there is something to look
at; on every later start it resumes the clusters it finds, with their data.

A **sandbox** is a cluster of one student, made on demand and named ``sb-<account id>``
(``SandboxProfile``): the same control plane as every other cluster, with three nodes, the classroom
timing and the guardrails of ``apiserver/admission/sandboxguardrails.py``. A sandbox nobody uses
**hibernates** (``Lab.hibernate``): its components and API server stop and its store closes, so it
costs no CPU and next to no memory (the watch caches, the informers' caches, the store's key index and
the trace recorder's events all go); only the ``Cluster`` object, its identities and its trace bus
stay. ``Lab.wake`` starts it again from its store, with every object as it was; the API router wakes
a hibernated cluster on any request (``apiserver/mount.py``), so kubectl sees only a slower first
answer. What counts as use is told to the lab (``Lab.touch``, ``Lab.busy``: a page, a socket, a
request), and ``Lab.hibernate_idle_sandboxes`` is what ``runlab``'s reaper calls. A lab resumes its
sandboxes hibernated: they wake when their students come back, not all at once at start.

Starting, waking, hibernating, remaking a cluster and restarting its API server are its
**transitions**: at most one runs per cluster, and whoever asks for one while another runs waits for
it and then looks again, so two browser tabs waking the same sandbox share one start.

The components reach the API server at the cluster's **endpoint** (``controlplane/endpoint.py``),
its address in this process, never the server itself: so ``Lab.restart_apiserver`` can put a new API
server behind it, as a kube-apiserver restarts under its clients, and they only see their watches end
and their connections refused for a moment. ``Cluster.stop_component`` and ``start_component`` stop
and start one component of the plan while the rest runs (a node's kubelet), and what the lab runs on a
cluster's behalf besides (``controlplane/faults``) hears of a cluster's stop first
(``Lab.add_stop_hook``). Faults use all three (docs/faults.md).

Nothing here starts on import. ``manage.py runlab`` builds a ``Lab``, starts it on daphne's event loop
and stops it on Ctrl-C; tests start and stop their own. ``activate`` makes a lab the process's lab, so
the web UI (and later the API server) can find its clusters; ``active_lab`` returns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import dataclasses
import enum
import fcntl
import gc
import ipaddress
import itertools
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.admission.sandboxguardrails import DEFAULT_MAX_OBJECTS, GuardrailsConfig
from controlplane.apiserver.admission.setup import AdmissionOptions
from controlplane.apiserver.admission.webhookclient import WebhookNetwork
from controlplane.apiserver.audit.config import AuditSettings, load_policy, log_path_for, policy_file_for
from controlplane.apiserver.audit.log import AuditLog
from controlplane.apiserver.encryption import config as encryption_config
from controlplane.apiserver.encryption.clusterfile import DEFAULT_PROVIDER, EncryptionConfigFile
from controlplane.apiserver.filters.audit import Auditor
from controlplane.apiserver.filters.priority_and_fairness import FlowControlOptions
from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.apiserver.kubeadmconfig import KubeadmInit
from controlplane.apiserver.kubernetesservice import KubernetesServiceOptions
from controlplane.apiserver.server import APIServer
from controlplane.client.clientmetrics import reporting_workqueues
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.clock import SYSTEM_CLOCK, Clock, SkewedClock
from controlplane.componentcerts import ComponentCertificate
from controlplane.components.bootstraptoken import MIN_REMAINING, bootstrap_token_phase
from controlplane.components.controllermanager import ControllerManager
from controlplane.components.identities import KINDS, component_identity
from controlplane.components.kubelet.certificate import CertificateManager, NodeCertificateStore
from controlplane.components.kubelet.hostprocesses import KubeProxyPods
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.components.kubelet.simulation import PullTiming
from controlplane.components.kubelet.staticpods import (
    CONTROL_PLANE_NODE,
    StaticPodRuns,
    control_plane_kubelet_options,
    mark_control_plane_patch,
)
from controlplane.components.launch import Component, LaunchOptions, build_component
from controlplane.components.scheduler.scheduler import Scheduler
from controlplane.endpoint import APIEndpoint
from controlplane.identity import SYSTEM_MASTERS
from controlplane.metrics import MetricsRegistry, RestClientMetrics, WorkqueueMetrics
from controlplane.pki import ClusterPKI
from controlplane.revocation import RevocationList
from controlplane.serviceaccounttokens import TokenIssuer
from controlplane.store.compaction import RetentionPolicy
from controlplane.store.errors import UnknownCluster
from controlplane.store.factory import open_store, store_path
from controlplane.store.interface import Store
from controlplane.store.kv import Delete, Txn
from controlplane.tasks import cancel_and_wait
from controlplane.timing import CLASSROOM, TimingProfile
from controlplane.tokens import TokenRegistry
from controlplane.trace import NULL_SINK, TraceBus, nodes

logger = logging.getLogger(__name__)

#: The list of a data directory's clusters, whatever their store backend.
CLUSTER_LIST_FILE = "clusters.json"

#: A cluster's name is a DNS label (RFC 1123), like a namespace's: it appears in URLs and file paths.
_CLUSTER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class InvalidClusterName(ValueError):
    """A cluster name that is not a DNS label (lower-case letters, digits and ``-``, at most 63)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"invalid cluster name {name!r}: use at most 63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
        self.name = name


class ClusterExists(Exception):
    """A cluster of this name is already part of the lab."""

    def __init__(self, name: str) -> None:
        super().__init__(f"cluster {name!r} already exists")
        self.name = name


def check_cluster_name(name: str) -> str:
    """``name`` if it is a valid cluster name; ``InvalidClusterName`` otherwise."""
    if not _CLUSTER_NAME.fullmatch(name):
        raise InvalidClusterName(name)
    return name


def cluster_dir(data_dir: Path, name: str) -> Path:
    """Where a cluster keeps its files (its SQLite store, later its PKI)."""
    return data_dir / "clusters" / name


#: Held (shared) by every process serving a cluster, in the cluster's directory.
SERVING_LOCK = ".serving.lock"


def _serving_lock(directory: Path) -> int:
    """Take the cluster's serving lock, shared (several processes may serve a PostgreSQL or etcd one)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(directory / SERVING_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def is_served(directory: Path) -> bool:
    """Whether a process (``runlab``) serves the cluster of ``directory`` now.

    Tools that would open its store themselves (``manage.py encryption rewrite``) must not while it
    runs: a SQLite store has one writer, the process serving it.
    """
    try:
        fd = os.open(directory / SERVING_LOCK, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


# -- the list of clusters in a data directory ---------------------------------------------------------


def read_cluster_list(data_dir: Path) -> list[str] | None:
    """The names in ``<data dir>/clusters.json``, or None if no lab has started there yet."""
    path = data_dir / CLUSTER_LIST_FILE
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise RuntimeError(f"cannot read the cluster list {path}: {error}") from error
    names = document.get("clusters") if isinstance(document, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RuntimeError(f"cannot read the cluster list {path}: expected {{'clusters': [names]}}")
    return [n for n in names if _CLUSTER_NAME.fullmatch(n)]


def write_cluster_list(data_dir: Path, names: list[str]) -> None:
    """Replace ``<data dir>/clusters.json`` atomically (a crash leaves the old list or the new one)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / CLUSTER_LIST_FILE
    tmp = path.with_name(f".{CLUSTER_LIST_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"version": 1, "clusters": sorted(set(names))}, indent=2) + "\n")
    os.replace(tmp, path)


def sqlite_store_clusters(data_dir: Path) -> list[str]:
    """Clusters whose SQLite store file exists under ``<data dir>/clusters/``."""
    root = data_dir / "clusters"
    if not root.is_dir():
        return []
    return sorted(
        d.name
        for d in root.iterdir()
        if _CLUSTER_NAME.fullmatch(d.name) and store_path(data_dir, d.name).exists()
    )


def is_sqlite(store_url: str) -> bool:
    return store_url in ("", "sqlite") or store_url.startswith("sqlite:")


def known_clusters(data_dir: Path, *, store_url: str = "sqlite") -> list[str]:
    """The clusters a lab in ``data_dir`` would run, read from disk without starting anything."""
    names = set(read_cluster_list(data_dir) or [])
    if is_sqlite(store_url):
        names.update(sqlite_store_clusters(data_dir))
    return sorted(names)


# -- one cluster ---------------------------------------------------------------------------------------


class ClusterState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"
    #: Stopped to save its memory and CPU while nobody uses it; any request wakes it (``Lab.wake``).
    HIBERNATED = "hibernated"


#: Numbers every ``Cluster`` object this process makes, so a cluster made anew is told from the old one.
_incarnations = itertools.count(1)

#: The states in which a cluster runs nothing at all.
_NOT_RUNNING = frozenset(
    {ClusterState.NEW, ClusterState.STOPPED, ClusterState.FAILED, ClusterState.HIBERNATED}
)


def load_identities(cluster_dir: Path) -> tuple[ClusterPKI, TokenRegistry, RevocationList]:
    """A cluster's PKI (made on first use), token registry and revoked certificates. Blocking file I/O
    and key generation."""
    return (
        ClusterPKI.load_or_create(cluster_dir),
        TokenRegistry.load(cluster_dir),
        RevocationList.load(cluster_dir),
    )


@dataclass(frozen=True)
class ClusterConfig:
    """How a cluster is set up: what it runs, how its API server behaves, how it keeps its secrets.

    The options a kubeadm configuration or the flags of kube-apiserver and the kubelets would carry in
    a real cluster. A ``Cluster`` reads them at construction; the lab makes one from its ``LabConfig``.
    """

    #: Events per resource the API server's watch cache keeps for resuming watches (0: sized as
    #: upstream sizes it, see ``controlplane/apiserver/watchcache.py``).
    watch_cache_window: int = 0
    #: The component kinds the cluster runs in-process (``identities.KINDS``), and its node count.
    components: tuple[str, ...] = KINDS
    nodes: int = 3
    #: Whether a kubeadm control-plane node runs too (``control-plane``, beside the ``nodes`` workers):
    #: its kubelet runs the control plane's static pods (``components/kubelet/staticpods.py``).
    control_plane_node: bool = True
    timing: TimingProfile = CLASSROOM
    #: Options of every kubelet (``cpu``, ``memory``, ``pull_timing`` ...); see ``Kubelet``.
    node_options: Mapping[str, Any] = field(default_factory=dict)
    #: Client QPS and burst per component kind, instead of upstream's defaults (``identities``):
    #: what upstream's scale tests do with ``--kube-api-qps``; the lab keeps the defaults.
    rate_limits: Mapping[str, tuple[float, int]] = field(default_factory=dict)
    #: The API server's flow control: API Priority and Fairness, or max-in-flight.
    flow_control: FlowControlOptions = field(default_factory=FlowControlOptions)
    #: Where the audit policy comes from and how large the audit log may grow (``apiserver/audit``).
    audit: AuditSettings = field(default_factory=AuditSettings)
    #: How Secrets are encrypted at rest when the cluster's configuration file is first made, and how
    #: often (in seconds of cluster time) the file is polled for changes while the cluster runs.
    encryption_provider: str = DEFAULT_PROVIDER
    encryption_reload_seconds: float = 1.0
    #: The API server's admission plugins (None: upstream's default set, see ``Cluster.admission_options``).
    admission: AdmissionOptions | None = None
    #: Whether requests without credentials are ``system:anonymous`` (``--anonymous-auth``) rather
    #: than refused.
    anonymous_auth: bool = False
    #: The PEM of the lab's serving CA, which signed the API port's certificate; None when the lab
    #: serves no HTTPS port (tests, the benchmark). See ``Cluster.root_ca``.
    serving_ca: bytes | None = None
    #: Where the lab serves the API (``runlab --api``), None on no socket.
    api_address: tuple[str, int] | None = None
    #: A sandbox's limits (``SandboxGuardrails``: objects, nodes, its guardrails' objects); None: none.
    guardrails: GuardrailsConfig | None = None


class Cluster:
    """One simulated Kubernetes cluster: its identities, its store, its API server and its components.

    ``config`` holds its options; ``data_dir`` (its identities and files), ``store``, ``clock`` and
    ``trace`` are what it runs on and reports to.
    """

    def __init__(
        self,
        name: str,
        config: ClusterConfig | None = None,
        *,
        data_dir: Path,
        store: Store,
        clock: Clock = SYSTEM_CLOCK,
        trace: TraceBus | None = None,
    ) -> None:
        config = config if config is not None else ClusterConfig()
        self.config = config
        self.name = check_cluster_name(name)
        #: Unique in this process: a cluster made anew under the same name (``Lab.recreate_cluster``)
        #: has another. What was set up in the old one (``courses.sandboxes``) must be set up again.
        self.incarnation = next(_incarnations)
        #: Where the lab serves the API (``runlab --api``), None on no socket: what the ``kubernetes``
        #: Service's endpoints advertise (``apiserver/kubernetesservice.py``).
        self.api_address = config.api_address
        #: Its API server's admission plugins (None: upstream's default set, see ``admission_options``).
        self.admission = config.admission
        #: A sandbox's limits, enforced by the SandboxGuardrails admission plugin (None: not a sandbox).
        self.guardrails = config.guardrails
        #: Whether requests without credentials are ``system:anonymous`` (``--anonymous-auth``) rather
        #: than refused; a running cluster's ``apiserver.authenticator.anonymous`` switches it live.
        self.anonymous_auth = config.anonymous_auth
        #: Its API server's flow control: API Priority and Fairness, or max-in-flight.
        self.flow_control = config.flow_control
        #: Where the audit policy comes from and how large the audit log may grow (``apiserver/audit``).
        self.audit = config.audit
        #: The cluster's metrics (``/clusters/<name>/metrics``): its API server's and its in-process
        #: components', made anew at each start.
        self.metrics = MetricsRegistry()
        #: Every trace event of the cluster goes here: numbered, recorded, fanned out to viewers.
        self.trace = trace if trace is not None else TraceBus(name, now=clock.now, recording=False)
        #: Client QPS and burst per component kind, instead of upstream's defaults (``identities``):
        #: what upstream's scale tests do with ``--kube-api-qps``; the lab keeps the defaults.
        self.rate_limits = dict(config.rate_limits)
        #: Options of every kubelet (``cpu``, ``memory``, ``pull_timing`` ...); see ``Kubelet``.
        self.node_options = dict(config.node_options)
        #: The component kinds this cluster runs in-process (``identities.KINDS``), and its node count.
        self.components = tuple(config.components)
        self.nodes = config.nodes
        self.timing = config.timing
        self.clock = clock
        self.watch_cache_window = config.watch_cache_window
        self.data_dir = data_dir
        self.store = store
        #: The PEM of the lab's serving CA, which signed the API port's certificate; None when the
        #: lab serves no HTTPS port (tests, the benchmark). See ``root_ca``.
        self.serving_ca = config.serving_ca
        self.state = ClusterState.NEW
        #: Why the cluster failed to start, for the UI and the log.
        self.error: str | None = None
        self._pki: ClusterPKI | None = None
        self._tokens: TokenRegistry | None = None
        #: The cluster's API server, mounted at /clusters/<name>/ while the cluster runs.
        self.apiserver: APIServer | None = None
        #: Where in-process clients reach the API server serving now (``controlplane/endpoint.py``):
        #: the components and the web app hold this address, never the server, so that the server
        #: can restart under them (``restart_apiserver``) as a kube-apiserver restarts under its clients.
        self.endpoint = APIEndpoint(self.name, lambda: self.apiserver)
        #: The running components by trace id (``scheduler``, ``kubelet:node-1`` ...), in start order.
        self.components_running: dict[str, Component] = {}
        #: Components of the plan stopped while the cluster runs (``stop_component``), by trace id:
        #: a node whose kubelet was stopped. Started again by ``start_component``, or by the next start.
        self.components_stopped: set[str] = set()
        #: What the kubelets ask of their node's kube-proxy: the pod of the kube-proxy DaemonSet on
        #: ``node-N`` is Ready only while the in-process ``kube-proxy:node-N`` runs.
        self.kube_proxy_pods = KubeProxyPods(self._kube_proxy_runs)
        self.control_plane_node = config.control_plane_node
        #: The control plane's programs as the control-plane node's runtime knows them: what its
        #: kubelet's mirror pods show (made anew at each start).
        self.static_pod_runs = self._new_static_pod_runs()
        #: The faults in force on the cluster as the diagram draws them (``{"fault", "target"}``),
        #: kept by ``controlplane/faults``: part of the state a topology page starts from.
        self.faults_in_force: list[dict[str, Any]] = []
        #: The network between its API server and the admission webhooks, while a fault breaks it
        #: (``controlplane/faults/webhooknetwork.py``): each API server it starts calls through it.
        self.webhook_network: WebhookNetwork | None = None
        #: Where the components' REST clients and workqueues report (made at each start).
        self._component_metrics: tuple[RestClientMetrics, WorkqueueMetrics] | None = None
        #: Their client certificates, by the same ids (a joined node's kubelet keeps its own).
        self.component_certificates: dict[str, ComponentCertificate | CertificateManager] = {}
        #: Each joined node's kubelet certificate directory (``/var/lib/kubelet/pki``), by node name.
        self.kubelet_certificate_stores: dict[str, NodeCertificateStore] = {}
        #: kubeadm's bootstrap token for joining nodes and when it expires (``_bootstrap_token``).
        self._bootstrap_token: tuple[str, float | None] | None = None
        #: The joining kubelets' clients made at the cluster's start, bootstrapping meanwhile.
        self._prepared_kubelets: dict[str, tuple[Config, CertificateManager]] = {}
        self._kubelet_bootstraps: set[asyncio.Task[None]] = set()
        #: Each node's own clock, by node name (``node_clock``): what its kubelet reads the time from.
        self.node_clocks: dict[str, SkewedClock] = {}
        self._revocations: RevocationList | None = None
        #: Encryption at rest: the cluster's configuration file (made on the first start with
        #: ``encryption_provider``), polled every ``encryption_reload_seconds`` of cluster time while it runs.
        self.encryption_file = EncryptionConfigFile(data_dir)
        self.encryption_provider = config.encryption_provider
        self.encryption_reload_seconds = config.encryption_reload_seconds
        self._encryption_task: asyncio.Task[None] | None = None
        self._serving_fd: int | None = None
        #: Set while its API server serves (from before the components start until it stops), and
        #: since when (``time.monotonic``).
        self._serving = asyncio.Event()
        self.serving_since = 0.0

    def __repr__(self) -> str:
        return f"<Cluster {self.name} {self.state.value} store={self.store.backend or '?'}>"

    @property
    def serving(self) -> bool:
        """Whether its API server answers requests: from before its components start (they start as
        its clients) until it begins to stop."""
        return self._serving.is_set() and self.apiserver is not None and self.apiserver.started

    async def wait_serving(self) -> None:
        """Wait until its API server answers requests."""
        await self._serving.wait()

    @property
    def pki(self) -> ClusterPKI:
        """The cluster's client CA and ServiceAccount key (loaded by ``start``)."""
        if self._pki is None:
            raise RuntimeError(f"cluster {self.name!r} has not started: its PKI is not loaded")
        return self._pki

    @property
    def revocations(self) -> RevocationList:
        """The cluster's revoked client certificates (loaded by ``start``)."""
        if self._revocations is None:
            raise RuntimeError(f"cluster {self.name!r} has not started: its revocation list is not loaded")
        return self._revocations

    @property
    def tokens(self) -> TokenRegistry:
        """The cluster's bearer tokens, for the API server's authentication (loaded by ``start``)."""
        if self._tokens is None:
            raise RuntimeError(f"cluster {self.name!r} has not started: its tokens are not loaded")
        return self._tokens

    async def start(self) -> None:
        """Load the identities, start the store, the API server, then the components. Idempotent."""
        if self.state in (ClusterState.STARTING, ClusterState.RUNNING):
            return
        self.state = ClusterState.STARTING
        self.error = None
        try:
            if self._pki is None or self._tokens is None or self._revocations is None:
                # Off the event loop: the first start generates keys (an RSA key takes a while).
                identities = await asyncio.to_thread(load_identities, self.data_dir)
                self._pki, self._tokens, self._revocations = identities
            self.metrics = MetricsRegistry()
            self.components_stopped = set()
            if self._serving_fd is None:
                self._serving_fd = await asyncio.to_thread(_serving_lock, self.data_dir)
            self.static_pod_runs = self._new_static_pod_runs()
            await self.store.start()
            self.static_pod_runs.started(nodes.ETCD, self.clock.now())
            apiserver = await self._build_apiserver()
            self.apiserver = apiserver  # before it starts: a start interrupted halfway stops it too
            await apiserver.start()
            self.static_pod_runs.started(nodes.APISERVER, self.clock.now())
            self.serving_since = time.monotonic()
            self._serving.set()
            self._encryption_task = asyncio.create_task(
                self._watch_encryption_config(), name=f"encryption-config-{self.name}"
            )
            await self._start_components()
        except BaseException as error:
            self.state = ClusterState.FAILED
            self._serving.clear()
            self.error = str(error) or type(error).__name__
            # Stopped (or failed) while starting: whatever had started stops, or its tasks would
            # outlive the cluster.
            with contextlib.suppress(Exception):
                await self._stop_components()
            await self._stop_encryption_watch()
            started, self.apiserver = self.apiserver, None
            if started is not None:
                with contextlib.suppress(Exception):
                    await started.stop()
            with contextlib.suppress(Exception):
                await self.store.close()
            raise
        self.state = ClusterState.RUNNING

    async def _build_apiserver(self) -> APIServer:
        """A new API server over the cluster's (started) store, with the cluster's identities, audit
        policy, encryption configuration and options, not yet started."""
        auditor = await self._auditor()
        encryption = await asyncio.to_thread(self.encryption_file.load_or_create, self.encryption_provider)
        apiserver = APIServer(
            self.name,
            self.store,
            trace=self.trace,
            resource_types=builtin_types(),
            tokens=self.tokens.authenticate,
            watch_cache_window=self.watch_cache_window,
            # ServiceAccount tokens: signed with the cluster's sa.key, kubeadm's issuer and audiences.
            service_account_issuer=TokenIssuer(self.pki.service_account_key),
            # Client certificates: of the cluster's client CA, by the cluster clock, unless revoked.
            client_certificates=X509Authenticator(
                self.pki.ca.certificate, clock=self.clock, is_revoked=self.revocations.is_revoked
            ),
            flow_control=self.flow_control,
            anonymous=self.anonymous_auth,
            metrics_registry=self.metrics,
            auditor=auditor,
            encryption=encryption_config.build(encryption),
            admission_options=self.admission_options(),
            kubernetes_service=self.kubernetes_service_options(),
            kubeadm=self.kubeadm_init(),
        )
        self.metrics.register(auditor)  # apiserver_audit_*
        apiserver.webhook_client.network = self.webhook_network
        # componentstatuses probe the scheduler and the controller manager: healthy while they run.
        apiserver.components_healthy = lambda name: name in self.components_running
        return apiserver

    async def restart_apiserver(self) -> None:
        """Stop the running API server and start a new one on the same store, as ``systemctl restart
        kube-apiserver`` (or the kubelet restarting its static pod) does.

        The old server stops gracefully: every watch it serves ends, and until the new one serves,
        in-process clients find nothing listening at ``endpoint`` (a refused connection) and HTTPS
        requests wait for it (``Lab.restart_apiserver``). The new server fills its watch caches from
        the store at the current revision, so its window of events starts there: a client that
        watches again from an older resourceVersion is answered 410 "too old resource version" and
        lists again (upstream's cacher, ``storage/cacher/watch_cache.go``). Its metrics start from
        zero, as a new process's do. The components go on as they were: they only see their
        connections break and come back. Call it through ``Lab.restart_apiserver``, which makes it
        one of the cluster's transitions.
        """
        if self.state is not ClusterState.RUNNING:
            raise RuntimeError(f"cluster {self.name!r} is {self.state.value}: its API server does not run")
        self._serving.clear()
        old, self.apiserver = self.apiserver, None
        if old is not None:
            await old.stop()
            self.static_pod_runs.stopped(nodes.APISERVER, self.clock.now())
        # What reported into the old server's registry goes to the new one's: the components'
        # client and workqueue metrics; the old server's own series go with it.
        self.metrics = MetricsRegistry()
        if self._component_metrics is not None:
            for collector in self._component_metrics:
                self.metrics.register(collector)
        apiserver = await self._build_apiserver()
        self.apiserver = apiserver
        await apiserver.start()
        self.static_pod_runs.started(nodes.APISERVER, self.clock.now())
        for component in self.components_running.values():
            if isinstance(component, Kubelet):
                apiserver.kubelets.register(component.node_name, component.server)
        self.serving_since = time.monotonic()
        self._serving.set()

    async def _auditor(self) -> Auditor:
        """The audit policy (read off the event loop; ``InvalidPolicy`` stops the start) and log."""
        policy = await asyncio.to_thread(load_policy, policy_file_for(self.data_dir, self.audit.policy_file))
        log = AuditLog(
            log_path_for(self.data_dir), max_bytes=self.audit.max_bytes, backups=self.audit.backups
        )
        return Auditor(policy, log, now=self.clock.now)

    async def reload_encryption(self) -> bool:
        """Apply the encryption configuration file if it changed since it was read; whether it did.

        What kube-apiserver's ``--encryption-provider-config-automatic-reload`` does: a file that does
        not load is logged (once per change) and the configuration in force stays.
        """
        if self.apiserver is None or not self.encryption_file.changed():
            return False
        try:
            configuration = await asyncio.to_thread(self.encryption_file.read)
            transformers = encryption_config.build(configuration)
        except (OSError, ValueError) as error:
            logger.error(
                "cluster %r: encryption configuration not reloaded, the previous one stays: %s",
                self.name,
                error,
            )
            return False
        self.apiserver.set_encryption(transformers)
        logger.info(
            "cluster %r: encryption configuration reloaded from %s", self.name, self.encryption_file.path
        )
        return True

    async def _watch_encryption_config(self) -> None:
        while True:
            await self.clock.sleep(self.encryption_reload_seconds)
            try:
                await self.reload_encryption()
            except Exception:  # never let the watch die: the next change is tried again
                logger.exception("cluster %r: reloading the encryption configuration failed", self.name)

    async def _stop_encryption_watch(self) -> None:
        task, self._encryption_task = self._encryption_task, None
        if task is not None:
            await cancel_and_wait(task)
        fd, self._serving_fd = self._serving_fd, None
        if fd is not None:
            os.close(fd)

    def kubernetes_service_options(self) -> KubernetesServiceOptions:
        """The ``kubernetes`` Service of this cluster: the advertised ``--api`` address, and the
        reconciler's interval and master lease TTL of the timing profile."""
        host, port = self.api_address if self.api_address is not None else (None, None)
        return KubernetesServiceOptions.serving(
            host,
            port,
            interval=self.timing.endpoint_reconciler_interval,
            lease_ttl=self.timing.endpoint_reconciler_ttl,
        )

    def kubeadm_init(self) -> KubeadmInit:
        """What kubeadm init uploads for this cluster (``kubeadmconfig.py``): ``cluster-info`` names the
        advertised address with the cluster's path and the CA that verifies it; the kubelets' timers."""
        service = self.kubernetes_service_options()
        return KubeadmInit.for_cluster(
            self.name,
            public_ip=service.public_ip,
            secure_port=service.secure_port,
            ca_pem=self.root_ca,
            timing=self.timing,
        )

    def admission_options(self) -> AdmissionOptions:
        """The admission plugins of this cluster's API server.

        Upstream's default set, with DefaultTolerationSeconds following the timing profile (the
        classroom profile's 60 s is upstream's 300 s, five times faster). A cluster without a controller
        manager has no serviceaccount controller to create ``default`` ServiceAccounts, so it runs
        without the ServiceAccount plugin, which would refuse every pod. A sandbox adds its guardrails.
        """
        options = self.admission or AdmissionOptions()
        if self.admission is None:
            options = dataclasses.replace(
                options, default_toleration_seconds=max(1, round(self.timing.default_toleration_seconds))
            )
        if "controller-manager" not in self.components:
            options = options.without("ServiceAccount")
        if self.guardrails is not None:
            options = options.with_guardrails(self.guardrails)
        return options

    @property
    def root_ca(self) -> bytes:
        """The CA bundle that verifies this cluster's API server, which the controller manager
        publishes in every namespace as the ConfigMap ``kube-root-ca.crt``.

        That is the lab's serving CA: clients reach every cluster through the one HTTPS API port,
        whose certificate it signed. A cluster started without one (no HTTPS port: tests, the
        benchmark) publishes its own cluster CA (``ClusterPKI.ca``) instead, the CA a kubeadm cluster
        would publish (kubeadm signs the serving and the client certificates with one CA).
        """
        return self.serving_ca if self.serving_ca is not None else self.pki.ca.certificate_pem

    def component_plan(self) -> list[tuple[str, str]]:
        """The ``(kind, node)`` of every component this cluster runs in-process, in start order.

        The scheduler and the controller manager first (they only watch until there is work), then
        each node's kubelet (which registers its Node) and kube-proxy. Nodes are ``node-1`` ... ``node-N``,
        after kubeadm's ``control-plane`` node, whose kubelet runs the control plane's static pods (no
        kube-proxy runs there in-process: its kube-proxy pod is an ordinary simulated one).
        """
        plan: list[tuple[str, str]] = [
            (kind, "") for kind in ("scheduler", "controller-manager") if kind in self.components
        ]
        if self.control_plane_node and "kubelet" in self.components:
            plan.append(("kubelet", CONTROL_PLANE_NODE))  # kubeadm init's node, before any joins
        for i in range(1, self.nodes + 1):
            plan += [(kind, f"node-{i}") for kind in ("kubelet", "kube-proxy") if kind in self.components]
        return plan

    async def _start_components(self) -> None:
        """Start the components as clients of the cluster's API server, over the in-process transport.

        Each authenticates with a client certificate of its own identity from the cluster CA
        (``controlplane.componentcerts``): issued at every start, living a day of cluster time and
        renewed as it runs. Nothing of it is written to disk. A joined node's kubelet instead bootstraps
        with kubeadm's bootstrap token (``_bootstrap_kubelets``). They reach the server through
        ``endpoint``, as a real component reaches its API server's address, never the server itself.
        """
        # The components' REST clients and workqueues count into the cluster's metrics.
        client_metrics, workqueue_metrics = RestClientMetrics(), WorkqueueMetrics()
        self._component_metrics = (client_metrics, workqueue_metrics)
        self.metrics.register(client_metrics)
        self.metrics.register(workqueue_metrics)
        plan = [(kind, node, component_identity(kind, node)) for kind, node in self.component_plan()]
        # Earlier versions gave components bearer tokens: any left in the registry are revoked.
        await asyncio.to_thread(self._revoke_component_tokens, {identity.user for _, _, identity in plan})
        self._bootstrap_token = None  # kubeadm's bootstrap-token phase runs again at the first join
        await self._bootstrap_kubelets([node for kind, node, _ in plan if kind == "kubelet"])
        for kind, node, _ in plan:
            await self._start_component(kind, node)

    def _launch_options(self) -> LaunchOptions:
        return LaunchOptions(
            cluster=self.name,
            clock=self.clock,
            timing=self.timing,
            trace=self.trace,
            root_ca=self.root_ca,
            # The controller manager signs approved CSRs with the client CA the API server trusts.
            signing_ca=self.pki.ca,
            node_options={
                "pull_timing": PullTiming(default=self.timing.image_pull_seconds, jitter=0.2),
                **self.node_options,
            },
        )

    def client_config(
        self,
        user: str,
        groups: tuple[str, ...] = (),
        *,
        user_agent: str,
        qps: float,
        burst: int,
        request_metrics: RestClientMetrics | None = None,
    ) -> Config:
        """A client of this cluster as ``user`` (in ``groups``) over the in-process transport, with a
        client certificate of its own from the cluster CA, renewed as it runs: how the components
        connect, and how the lab connects anything else it runs inside the cluster."""
        return self._client(user, groups, user_agent, qps, burst, request_metrics)[0]

    def _client(
        self,
        user: str,
        groups: tuple[str, ...],
        user_agent: str,
        qps: float,
        burst: int,
        request_metrics: RestClientMetrics | None,
        link: str = "",
    ) -> tuple[Config, ComponentCertificate]:
        """``link``: the diagram id of the component the client is for, which reaches the endpoint over
        a link of its own (``APIEndpoint.link``), so a fault can cut or slow it."""
        certificate = ComponentCertificate(self.pki, user, groups, now=self.clock.now)
        config = Config.for_in_process(
            self.endpoint.link(link) if link else self.endpoint,
            self.name,
            mount_prefix=f"/clusters/{self.name}",
            cert_source=certificate.current,
            user_agent=user_agent,
            qps=qps,
            burst=burst,
            clock=self.clock,
            request_metrics=request_metrics,
        )
        return config, certificate

    async def _start_component(self, kind: str, node: str) -> Component:
        """Start the component ``kind`` (of ``node``) as a new process would start: a new certificate,
        a new client, everything listed again."""
        identity = component_identity(kind, node)
        client_metrics, workqueue_metrics = self._component_metrics or (None, None)
        qps, burst = self.rate_limits.get(kind, (identity.qps, identity.burst))
        certificate: ComponentCertificate | CertificateManager
        if kind == "kubelet" and self.tls_bootstrapping(node):
            prepared = self._prepared_kubelets.pop(node, None)
            if prepared is None:
                prepared = await self._joining_kubelet_client(node, qps, burst, client_metrics)
            config, certificate = prepared
        else:
            user, groups, agent = identity.user, identity.groups, identity.user_agent
            config, certificate = self._client(
                user, groups, agent, qps, burst, client_metrics, identity.trace_id
            )
        self.component_certificates[identity.trace_id] = certificate
        node_options: dict[str, Any] | None = None
        if kind == "kubelet" and node == CONTROL_PLANE_NODE:
            node_options = {
                **control_plane_kubelet_options(self.static_pod_runs, seen=self.clock.now()),
                "host_processes": self.kube_proxy_pods,
            }
        elif kind == "kubelet":
            node_options = {**self._node_options(node), "host_processes": self.kube_proxy_pods}
        if node_options is not None and isinstance(certificate, CertificateManager):
            node_options["certificates"] = certificate
        options = self._launch_options()
        if kind == "kubelet":
            options = dataclasses.replace(options, clock=self.node_clock(node))
        with reporting_workqueues(workqueue_metrics):
            component = build_component(
                kind,
                partial(RESTClient, config),
                options,
                node=node,
                node_options=node_options,
            )
            # Listed before it starts: a start interrupted halfway (Ctrl-C) is stopped all the same.
            self.components_running[identity.trace_id] = component
            self.components_stopped.discard(identity.trace_id)
            # A control-plane program's start and what it logs are its static pod's container's.
            self.static_pod_runs.started(identity.trace_id, self.clock.now())
            with self.static_pod_runs.logging_to(identity.trace_id):
                await component.start()
        if isinstance(component, Kubelet) and self.apiserver is not None:
            # The API server reaches this kubelet's API (containerLogs) without a socket.
            self.apiserver.kubelets.register(node, component.server)
        if kind == "kube-proxy":
            self._kube_proxy_changed(node)
        if isinstance(component, Kubelet) and node == CONTROL_PLANE_NODE:
            await self._mark_control_plane(component)
        return component

    def _new_static_pod_runs(self) -> StaticPodRuns:
        runs = StaticPodRuns(self.kubernetes_service_options().public_ip, now=self.clock.now)
        runs.changed = self._static_pods_changed
        return runs

    def _static_pods_changed(self) -> None:
        """A program of the control plane started or stopped: the control-plane node's kubelet
        writes its mirror pod's status anew."""
        kubelet = self.components_running.get(nodes.kubelet(CONTROL_PLANE_NODE))
        if isinstance(kubelet, Kubelet):
            kubelet.host_processes_changed()

    async def _mark_control_plane(self, kubelet: Kubelet) -> None:
        """``kubeadm init phase mark-control-plane``, as kubeadm's admin, once the node registered."""
        patch = mark_control_plane_patch(kubelet.node or {})
        if patch is None:
            return
        config = self.client_config(
            "kubernetes-admin", (SYSTEM_MASTERS,), user_agent="kubeadm/v1.37.0", qps=-1, burst=0
        )
        async with RESTClient(config) as client:
            await client.resource("", "v1", "nodes").patch(CONTROL_PLANE_NODE, patch)

    async def forget_kubelet_certificate(self, trace_id: str) -> bool:
        """Delete the client certificate the kubelet ``trace_id`` keeps on its node (a joined node's),
        so that it bootstraps again at its next start; whether there was such a kubelet."""
        planned = self.planned(trace_id)
        if planned is None or planned[0] != "kubelet":
            return False
        store = self.kubelet_certificate_stores.get(planned[1])
        if store is None:
            return False
        await asyncio.to_thread(store.forget)
        return True

    def tls_bootstrapping(self, node: str) -> bool:
        """Whether the kubelet of ``node`` joins with kubeadm's bootstrap token and gets its client
        certificate through a CSR (``components/kubelet/certificate.py``): every node but kubeadm
        init's own, whose kubelet.conf kubeadm writes from the CA, when a controller manager runs to
        approve and sign the CSRs."""
        return "controller-manager" in self.components and node != CONTROL_PLANE_NODE

    async def _bootstrap_token_value(self) -> str:
        """kubeadm's bootstrap-token phase (``components/bootstraptoken.py``), run as kubeadm's admin at
        the first join of each start, and again when its token is about to expire: the token."""
        now = self.clock.now()
        known = self._bootstrap_token
        if known is None or (known[1] is not None and now > known[1] - MIN_REMAINING):
            config = self.client_config(
                "kubernetes-admin", (SYSTEM_MASTERS,), user_agent="kubeadm/v1.37.0", qps=-1, burst=0
            )
            async with RESTClient(config) as client:
                known = self._bootstrap_token = await bootstrap_token_phase(client, now=now)
        return known[0]

    async def _bootstrap_kubelets(self, kubelets: list[str]) -> None:
        """Make the clients of the joining nodes' kubelets and start their bootstraps in the background,
        so that their CSRs wait for the controller manager all at once rather than one after the other;
        each kubelet's start then waits for its own certificate (``CertificateManager``)."""
        client_metrics = self._component_metrics[0] if self._component_metrics else None
        for node in kubelets:
            if not self.tls_bootstrapping(node):
                continue
            identity = component_identity("kubelet", node)
            qps, burst = self.rate_limits.get("kubelet", (identity.qps, identity.burst))
            prepared = await self._joining_kubelet_client(node, qps, burst, client_metrics)
            self._prepared_kubelets[node] = prepared
            bootstrap = prepared[1].ensure_certificate()
            task = asyncio.create_task(bootstrap, name=f"bootstrap {identity.trace_id}")
            self._kubelet_bootstraps.add(task)
            # A failure is met again (and raised) by the kubelet's own start.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            task.add_done_callback(self._kubelet_bootstraps.discard)

    async def _joining_kubelet_client(
        self, node: str, qps: float, burst: int, request_metrics: RestClientMetrics | None
    ) -> tuple[Config, CertificateManager]:
        """The client of a joining node's kubelet (kubelet ``--bootstrap-kubeconfig``,
        ``--rotate-certificates``): its certificate manager, which bootstraps with the token, and a
        config presenting the manager's current certificate."""
        identity = component_identity("kubelet", node)
        common: dict[str, Any] = {
            "mount_prefix": f"/clusters/{self.name}",
            "user_agent": identity.user_agent,
            "qps": qps,
            "burst": burst,
            "clock": self.clock,
            "request_metrics": request_metrics,
        }
        endpoint = self.endpoint.link(identity.trace_id)
        token = await self._bootstrap_token_value()
        bootstrap = Config.for_in_process(endpoint, self.name, bearer_token=token, **common)
        store = self.kubelet_certificate_stores.get(node)
        if store is None:
            store = NodeCertificateStore(self.data_dir / "nodes" / node / "pki")
            self.kubelet_certificate_stores[node] = store
        manager = CertificateManager(
            node,
            clock=self.node_clock(node),
            bootstrap=partial(RESTClient, bootstrap),
            client=lambda: RESTClient(config),
            store=store,
        )
        config = Config.for_in_process(endpoint, self.name, cert_source=manager.current_pem, **common)
        return config, manager

    def _kube_proxy_runs(self, node: str) -> bool | None:
        """Whether the in-process kube-proxy of ``node`` runs; None if this cluster runs none there."""
        trace_id = nodes.kube_proxy(node)
        if "kube-proxy" not in self.components or self.planned(trace_id) is None:
            return None
        if self.state is ClusterState.STARTING and trace_id not in self.components_stopped:
            return True  # about to start, after its node's kubelet: no NotReady blip at every wake
        return trace_id in self.components_running

    def _kube_proxy_changed(self, node: str) -> None:
        """The kube-proxy of ``node`` started or stopped: its kubelet reports its pod's readiness anew."""
        kubelet = self.components_running.get(nodes.kubelet(node))
        if isinstance(kubelet, Kubelet):
            kubelet.host_processes_changed()

    def node_clock(self, node: str) -> SkewedClock:
        """The clock of the machine ``node``: the cluster's, unless a fault skews it (``clock-skew``).
        Kept across its kubelet's restarts, as a machine's clock outlives the kubelet."""
        clock = self.node_clocks.get(node)
        if clock is None:
            clock = self.node_clocks[node] = SkewedClock(self.clock)
        return clock

    def planned(self, trace_id: str) -> tuple[str, str] | None:
        """The ``(kind, node)`` of the planned component ``trace_id`` (``kubelet:node-2``), or None."""
        for kind, node in self.component_plan():
            if component_identity(kind, node).trace_id == trace_id:
                return kind, node
        return None

    async def stop_component(self, trace_id: str, *, release_lease: bool = True, reason: str = "") -> bool:
        """Stop one running component, as ``systemctl stop kubelet`` on its node would; whether it ran.

        The rest of the cluster goes on: a stopped kubelet no longer renews its Lease or reports its
        Node's status, and the node lifecycle controller notices (``components/controllers/``); a
        stopped scheduler binds no pod, a stopped controller manager reconciles nothing. It stays
        stopped until ``start_component`` (or the cluster's next start) starts it again.

        ``release_lease=False`` stops the scheduler or the controller manager as a killed process
        stops: its leader Lease stays held, and the next one waits for it to expire. ``reason`` is
        what the trace says of the stop (``component.state``).
        """
        component = self.components_running.pop(trace_id, None)
        if component is None:
            return False
        self.components_stopped.add(trace_id)
        self.component_certificates.pop(trace_id, None)
        # A killed process (its Lease left held) is a crashed container; a stop, a clean exit.
        self.static_pod_runs.stopped(trace_id, self.clock.now(), crashed=not release_lease, reason=reason)
        if isinstance(component, Kubelet) and self.apiserver is not None:
            self.apiserver.kubelets.unregister(component.node_name, component.server)
        if isinstance(component, Scheduler | ControllerManager):
            await component.stop(release_lease=release_lease)
        else:
            await component.stop()
        self._report_state(trace_id, component, "stopped", reason)
        planned = self.planned(trace_id)
        if planned is not None and planned[0] == "kube-proxy":
            self._kube_proxy_changed(planned[1])
        return True

    async def start_component(self, trace_id: str, *, reason: str = "") -> bool:
        """Start a planned component that does not run (stopped by ``stop_component``, or that failed);
        whether it was started. A kubelet starting again adopts its Node and its pods; every component
        lists what it watches again, as a new process does. ``reason`` is what the trace says."""
        planned = self.planned(trace_id)
        if planned is None or trace_id in self.components_running or self.state is not ClusterState.RUNNING:
            return False
        component = await self._start_component(*planned)
        self._report_state(trace_id, component, "running", reason)
        return True

    def _report_state(self, trace_id: str, component: Component, state: str, reason: str) -> None:
        """Say on the trace that a component stopped or runs again (``component.state``), for those
        that do not say it themselves: the kubelet does (``components/kubelet/kubelet.py``); the
        scheduler and the controller manager only report their leader election, kube-proxy nothing.
        So the diagram greys a stopped scheduler, controller manager or kube-proxy as it greys a
        stopped kubelet (its part's state is ``stopped``), and shows it again once it runs."""
        if isinstance(component, Kubelet):
            return
        kind, node = self.planned(trace_id) or (trace_id, "")
        fields: dict[str, Any] = {"from": trace_id, "component": kind, "state": state}
        if node:
            fields["node"] = node
        if reason:
            fields["reason"] = reason
        self.trace.emit("component.state", **fields)

    @staticmethod
    def _node_options(node: str) -> dict[str, Any]:
        """Addresses of the in-process node ``node-<i>``: the i-th /24 of the cluster CIDR
        10.244.0.0/14 as its pod CIDR (10.244.1.0/24 for node-1, as node IPAM gives them out) and the
        i-th address after 172.18.0.1 as its InternalIP (kind's docker network); room for 1023 nodes."""
        index = int(node.rpartition("-")[2])
        pod_cidr = ipaddress.ip_network("10.244.0.0/14").network_address + index * 256
        internal_ip = ipaddress.ip_address("172.18.0.1") + index
        return {"pod_cidr": f"{pod_cidr}/24", "internal_ip": str(internal_ip)}

    @property
    def scheduler(self) -> Component | None:
        """The cluster's in-process scheduler, while it runs."""
        return self.components_running.get(nodes.SCHEDULER)

    def _revoke_component_tokens(self, users: set[str]) -> None:
        """Forget the bearer tokens of the components' users (none are issued any more)."""
        for user in sorted(users):
            self.tokens.revoke(user)

    async def _stop_components(self) -> None:
        """Stop every component, newest first; one that fails to stop is logged, not raised."""
        running, self.components_running = self.components_running, {}
        self.component_certificates = {}
        self._prepared_kubelets = {}
        for bootstrap in list(self._kubelet_bootstraps):
            bootstrap.cancel()
        for trace_id, component in reversed(list(running.items())):
            try:
                if isinstance(component, Kubelet) and self.apiserver is not None:
                    self.apiserver.kubelets.unregister(component.node_name, component.server)
                await component.stop()
            except Exception:
                logger.exception("%s of cluster %r did not stop cleanly", trace_id, self.name)

    async def stop(self) -> None:
        """Stop everything the cluster runs, in reverse start order. Idempotent."""
        if self.state in _NOT_RUNNING:
            if self.state in (ClusterState.NEW, ClusterState.HIBERNATED):
                self.state = ClusterState.STOPPED  # nothing runs: a hibernated cluster's store is not open
            return
        self.state = ClusterState.STOPPING
        self._serving.clear()
        try:
            await self._stop_components()
            await self._stop_encryption_watch()
            apiserver, self.apiserver = self.apiserver, None
            if apiserver is not None:
                await apiserver.stop()
        finally:
            try:
                await self.store.close()
            finally:
                self.state = ClusterState.STOPPED


# -- the lab -------------------------------------------------------------------------------------------

#: Opens the (not yet started) store of the named cluster.
StoreOpener = Callable[[str], Store]
#: Awaited with a cluster's name just before the lab stops it (``Lab.add_stop_hook``).
StopHook = Callable[[str], Awaitable[None]]

#: What a sandbox's name starts with: ``sb-<account id>``, a name no classroom cluster is given.
SANDBOX_PREFIX = "sb-"


@dataclass(frozen=True, slots=True)
class SandboxProfile:
    """How the lab runs sandboxes, the clusters of one student each (names starting ``sb-``).

    The same control plane as every other cluster, whatever the lab's own node count and timing: the
    course's chapters are written for three nodes and the classroom timing.
    """

    nodes: int = 3
    timing: TimingProfile = CLASSROOM
    #: The objects a sandbox may hold (``KUBELAB_SANDBOX_MAX_OBJECTS``, see ``SandboxGuardrails``).
    max_objects: int = DEFAULT_MAX_OBJECTS
    #: Seconds without a page, socket or API request before a sandbox hibernates
    #: (``KUBELAB_SANDBOX_IDLE_SECONDS``); 0: never.
    idle_seconds: float = 900.0
    #: Trace events a sandbox's recorder keeps while its student's page is open
    #: (``KUBELAB_SANDBOX_TRACE_SIZE``). An event costs 1 to 2 KB: the lab's 50,000 would be some
    #: 80 MB per student. 10,000 is ten minutes or more of a sandbox's history, longer than a step's
    #: check looks back and than the page's narration shows.
    trace_capacity: int = 10_000

    @staticmethod
    def is_sandbox(name: str) -> bool:
        return name.startswith(SANDBOX_PREFIX)


@dataclass(frozen=True, slots=True)
class LabConfig:
    """What a lab needs to know: where its data is, which store backend, which demo cluster."""

    data_dir: Path
    #: ``sqlite`` (one file per cluster in the data directory), ``postgresql://...`` or ``etcd://...``.
    store_url: str = "sqlite"
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    #: Created on the lab's first start in ``data_dir``; empty for none.
    demo_cluster: str = "demo"
    clock: Clock = SYSTEM_CLOCK
    #: Events per resource each API server's watch cache keeps for resuming watches (0: upstream's
    #: sizing, about 75 s of history and at least 100 events).
    watch_cache_window: int = 0
    #: The components each cluster runs in-process, its simulated nodes and its timers.
    components: tuple[str, ...] = KINDS
    nodes: int = 3
    timing: TimingProfile = CLASSROOM
    #: Trace events each cluster's recorder keeps, and whether it records while nobody watches (off:
    #: a cluster without viewers does no trace work at all; on: a run can be saved unwatched).
    trace_capacity: int = 50_000
    trace_recording: bool = False
    #: Each cluster's API server's flow control (``KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS`` ...).
    flow_control: FlowControlOptions = field(default_factory=FlowControlOptions)
    #: Every cluster's audit policy file (unless the cluster has its own) and audit log rotation.
    audit: AuditSettings = field(default_factory=AuditSettings)
    #: How a new cluster encrypts Secrets at rest (``KUBELAB_ENCRYPTION_PROVIDER``): ``aescbc``,
    #: ``aesgcm``, ``secretbox`` or ``identity`` (plaintext). An existing cluster keeps its own file.
    encryption_provider: str = DEFAULT_PROVIDER
    #: The PEM of the CA that signed the API port's serving certificate (``<data dir>/pki/serving-ca.crt``,
    #: ``controlplane.pki.ServingPKI``), published in every namespace as ``kube-root-ca.crt``; None
    #: when the lab serves no HTTPS port (each cluster then publishes its own CA, see ``Cluster.root_ca``).
    serving_ca: bytes | None = None
    #: Where ``runlab`` serves the API (``--api`` host and port); None when nothing is served.
    api_address: tuple[str, int] | None = None
    #: How the students' sandboxes run (names ``sb-...``).
    sandbox: SandboxProfile = field(default_factory=SandboxProfile)

    def cluster_config(self, name: str = "") -> ClusterConfig:
        """The options the lab's cluster ``name`` is made with: the lab's, or a sandbox's for a sandbox."""
        config = ClusterConfig(
            watch_cache_window=self.watch_cache_window,
            components=self.components,
            nodes=self.nodes,
            timing=self.timing,
            flow_control=self.flow_control,
            audit=self.audit,
            encryption_provider=self.encryption_provider,
            serving_ca=self.serving_ca,
            api_address=self.api_address,
        )
        if not self.sandbox.is_sandbox(name):
            return config
        return dataclasses.replace(
            config,
            nodes=self.sandbox.nodes,
            timing=self.sandbox.timing,
            guardrails=GuardrailsConfig(max_objects=self.sandbox.max_objects),
        )


class LabState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class ClusterUnavailable(Exception):
    """A cluster that cannot be woken: it is stopped, or it failed to start (``error`` says why)."""

    def __init__(self, name: str, state: ClusterState, error: str | None = None) -> None:
        super().__init__(f"cluster {name!r} is {state.value}" + (f": {error}" if error else ""))
        self.name = name
        self.state = state
        self.error = error


class Activity:
    """When each cluster was last used, and how many requests it serves now: what keeps it awake.

    Cheap enough for every request: a monotonic timestamp and a counter in two dictionaries. Time here
    is the machine's (``time.monotonic``), not the cluster clock: idleness is the student's, not the
    simulation's.
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._last: dict[str, float] = {}
        self._inflight: dict[str, int] = {}

    def touch(self, name: str) -> None:
        """The cluster was used now."""
        self._last[name] = self._now()

    @contextlib.contextmanager
    def busy(self, name: str) -> Iterator[None]:
        """While the block runs (a request, a watch), the cluster is in use."""
        self._inflight[name] = self._inflight.get(name, 0) + 1
        self._last[name] = self._now()
        try:
            yield
        finally:
            left = self._inflight[name] - 1
            if left:
                self._inflight[name] = left
            else:
                del self._inflight[name]
            self._last[name] = self._now()

    def forget(self, name: str) -> None:
        """Cluster ``name`` is gone: drop what was kept of its use."""
        self._last.pop(name, None)
        self._inflight.pop(name, None)

    def in_use(self, name: str) -> bool:
        """Whether the cluster serves a request (a watch) now."""
        return bool(self._inflight.get(name))

    def idle_for(self, name: str) -> float:
        """Seconds since the cluster was last used; 0 while it serves a request, inf if never used."""
        if self._inflight.get(name):
            return 0.0
        last = self._last.get(name)
        return float("inf") if last is None else max(0.0, self._now() - last)


class Lab:
    """Every cluster of this process: discovered on start, created on demand, stopped together.

    The lab is driven from one event loop; other threads (Django's sync views) may read
    ``clusters()`` and ``state`` at any time: the cluster map is replaced, never mutated.
    """

    def __init__(self, config: LabConfig, *, open_store: StoreOpener | None = None) -> None:
        self.config = config
        self.state = LabState.NEW
        self.loop: asyncio.AbstractEventLoop | None = None
        self._open_store = open_store or self._default_store
        self._clusters: Mapping[str, Cluster] = MappingProxyType({})
        #: One trace bus per cluster, kept across the cluster's restarts so ``seq`` carries on.
        self._buses: dict[str, TraceBus] = {}
        #: The transition each cluster is going through (starting, waking, hibernating, remaking),
        #: and those of them that stop its API server (hibernating, remaking).
        self._transitions: dict[str, asyncio.Task[None]] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        #: When each cluster was last used (pages, sockets, API requests).
        self.activity = Activity()
        #: What runs on a cluster's behalf besides its own parts, told before the cluster stops.
        self._stop_hooks: list[StopHook] = []

    def __repr__(self) -> str:
        return f"<Lab {self.config.data_dir} {self.state.value} clusters={list(self._clusters)}>"

    @property
    def data_dir(self) -> Path:
        return self.config.data_dir

    def trace_bus(self, name: str) -> TraceBus:
        """The trace bus of cluster ``name`` (made on first use)."""
        if name not in self._buses:
            sandbox = self.config.sandbox
            self._buses[name] = TraceBus(
                name,
                capacity=sandbox.trace_capacity if sandbox.is_sandbox(name) else self.config.trace_capacity,
                recording=self.config.trace_recording,
                now=self.config.clock.now,
            )
        return self._buses[name]

    def _default_store(self, name: str) -> Store:
        return open_store(
            name,
            url=self.config.store_url,
            data_dir=self.config.data_dir,
            trace=self.trace_bus(name),
            clock=self.config.clock,
            retention=self.config.retention,
        )

    # -- reading -------------------------------------------------------------------------------------

    def cluster(self, name: str) -> Cluster:
        """The cluster called ``name``; ``UnknownCluster`` if this lab has none by that name."""
        try:
            return self._clusters[name]
        except KeyError:
            raise UnknownCluster(name) from None

    def clusters(self) -> list[Cluster]:
        """Every cluster of the lab, by name."""
        clusters = self._clusters
        return [clusters[name] for name in sorted(clusters)]

    def names(self) -> list[str]:
        return sorted(self._clusters)

    def is_sandbox(self, name: str) -> bool:
        return self.config.sandbox.is_sandbox(name)

    def needs_waking(self, name: str) -> bool:
        """Whether a request for ``name`` must wait for ``wake``: it hibernates, or is in a transition
        that has not (or no longer) got its API server serving."""
        cluster = self._clusters.get(name)
        if cluster is None:
            return False
        return cluster.state is ClusterState.HIBERNATED or (
            name in self._transitions and not self.serving(name)
        )

    async def may_wake(self, name: str, *, token: str | None, certificate: bool) -> bool:
        """Whether a request with these credentials may wake cluster ``name``: a bearer token the
        cluster issued, or a client certificate (which the API server then checks). Waking costs a
        whole control plane, so a request that could only be refused does not get to wake one; it
        is answered 401 as the API server would answer it, without starting anything."""
        cluster = self._clusters.get(name)
        if cluster is None:
            return False
        if certificate:
            return True
        if not token:
            return False
        registry = cluster._tokens
        if registry is None:  # resumed hibernated: its identities were never loaded in this process
            registry = await asyncio.to_thread(TokenRegistry.load, cluster.data_dir)
        return await asyncio.to_thread(registry.authenticate, token) is not None

    # -- activity ------------------------------------------------------------------------------------

    def touch(self, name: str) -> None:
        """Someone used the cluster now (a page, a socket): it stays awake a while longer."""
        if name in self._clusters:  # not a name someone made up: those would pile up
            self.activity.touch(name)

    async def use(self, name: str) -> None:
        """Someone uses cluster ``name`` now (a page, a socket): touch it, and wake it if it hibernates.

        Never raises: a cluster that does not exist or cannot wake is logged, and the caller finds it
        not running, as it would have without this call.
        """
        self.touch(name)
        if self.needs_waking(name):
            try:
                await self.wake(name)
            except Exception as error:
                logger.warning("cluster %r did not wake: %s", name, error)

    def busy(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A context in which the cluster serves someone (a request, a watch): it does not hibernate."""
        return self.activity.busy(name)

    def add_stop_hook(self, hook: StopHook) -> None:
        """Have ``hook(name)`` awaited just before the lab stops cluster ``name``: when it hibernates,
        is made anew, or the lab stops. What the lab runs on a cluster's behalf besides the cluster's
        own parts (the faults in force, ``controlplane/faults``) ends there, and does not outlive the
        cluster it was for. A hook that fails is logged; the cluster stops all the same."""
        self._stop_hooks.append(hook)

    async def _before_stop(self, name: str) -> None:
        for hook in list(self._stop_hooks):
            try:
                await hook(name)
            except Exception:
                logger.exception("a stop hook of cluster %r failed", name)

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Resume every cluster found in the data directory, or create the demo cluster the first time.

        Sandboxes are resumed hibernated: each wakes when its student comes back. A cluster that fails
        to start is logged and left ``FAILED``; the others still start.
        """
        if self.state is not LabState.NEW:
            raise RuntimeError(f"a lab starts once; this one is {self.state.value}")
        self.state = LabState.STARTING
        #: The event loop the lab runs on: where work from other threads is handed (``call_soon``).
        self.loop = asyncio.get_running_loop()
        listed = read_cluster_list(self.data_dir)
        names = known_clusters(self.data_dir, store_url=self.config.store_url)
        if listed is None and not names and self.config.demo_cluster:
            names = [check_cluster_name(self.config.demo_cluster)]
            logger.info("first start in %s: creating the demo cluster %r", self.data_dir, names[0])
        # Record the list before starting anything: a lab stopped halfway resumes the same clusters.
        write_cluster_list(self.data_dir, names)
        for name in names:
            if self.state is not LabState.STARTING:  # stopped while starting
                break
            if self.is_sandbox(name):
                self._add(self._new_cluster(name), state=ClusterState.HIBERNATED)
            else:
                await self._start_cluster(name)
        if self.state is LabState.STARTING:
            self.state = LabState.RUNNING

    async def create_cluster(self, name: str) -> Cluster:
        """Add a new cluster to the running lab and start it (its components too)."""
        check_cluster_name(name)
        if name in self._clusters or name in self._transitions:
            raise ClusterExists(name)
        await asyncio.shield(self._begin_creating(name))
        return self.cluster(name)

    async def ensure_cluster(self, name: str) -> Cluster:
        """The cluster ``name`` with its API server serving: created if the lab has none by that name,
        woken if it hibernates (or failed to start: it is tried again). Returns once its API server
        answers; its components may still be starting, as their clients. Concurrent callers share
        one start."""
        check_cluster_name(name)
        if name not in self._clusters and name not in self._transitions:
            self._begin_creating(name)
        await self.wake(name, retry_failed=True)
        return self.cluster(name)

    async def wake(self, name: str, *, retry_failed: bool = False) -> None:
        """Start hibernated cluster ``name`` again, with every object as it was; return once its API
        server answers (its components go on starting, as its clients).

        A serving cluster returns at once; one in another transition is waited for first; concurrent
        wakes share one start. ``UnknownCluster`` if the lab has no such cluster, ``ClusterUnavailable``
        if it is stopped or failed (unless ``retry_failed``: then it is started again) or failed to wake.
        """
        wakeable = (
            {ClusterState.HIBERNATED, ClusterState.FAILED} if retry_failed else {ClusterState.HIBERNATED}
        )
        while not self.serving(name):
            cluster = self.cluster(name)
            task = self._transitions.get(name)
            if task is None:
                if cluster.state is ClusterState.RUNNING:
                    return  # running, its API server not (yet) started: nothing to wake
                if cluster.state not in wakeable or self.state not in (LabState.STARTING, LabState.RUNNING):
                    raise ClusterUnavailable(name, cluster.state, cluster.error)
                task = self._begin(name, self._wake(cluster), stops=False)
            await self._until_serving(cluster, task)

    def serving(self, name: str) -> bool:
        """Whether cluster ``name``'s API server answers, and will go on answering: not one about to
        stop (a hibernation or a remake under way)."""
        cluster = self._clusters.get(name)
        if cluster is None or not cluster.serving:
            return False
        task = self._transitions.get(name)
        return task is None or task not in self._stopping

    async def hibernate(self, name: str, *, idle_for: float | None = None) -> bool:
        """Stop running cluster ``name`` and release its memory, keeping its data; whether it did.

        With ``idle_for``, only if nobody used it for that many seconds and it serves no request now
        (checked without an await before the stop begins, so a request arriving later wakes it again).
        """
        cluster = self.cluster(name)
        if name in self._transitions or cluster.state is not ClusterState.RUNNING:
            return False
        if idle_for is not None and (self.activity.in_use(name) or self.activity.idle_for(name) < idle_for):
            return False
        await asyncio.shield(self._begin(name, self._hibernate(cluster), stops=True))
        return True

    async def hibernate_idle_sandboxes(self, idle_seconds: float | None = None) -> list[str]:
        """Hibernate every running sandbox idle for ``idle_seconds`` (default: the sandbox profile's);
        the names of those hibernated. Never the demo cluster or a classroom's clusters."""
        idle = self.config.sandbox.idle_seconds if idle_seconds is None else idle_seconds
        hibernated = []
        for cluster in self.clusters():
            if self.is_sandbox(cluster.name) and await self.hibernate(cluster.name, idle_for=idle):
                hibernated.append(cluster.name)
        return hibernated

    async def restart_apiserver(self, name: str) -> None:
        """Restart running cluster ``name``'s API server (``Cluster.restart_apiserver``), as one of its
        transitions: a request that arrives meanwhile waits for the new server, as one that wakes a
        hibernated cluster does, and no hibernation or remaking runs at the same time."""
        check_cluster_name(name)
        while name in self._transitions:
            await self.settled(name)
        cluster = self.cluster(name)
        if cluster.state is not ClusterState.RUNNING:
            raise ClusterUnavailable(name, cluster.state, cluster.error)
        await asyncio.shield(self._begin(name, cluster.restart_apiserver(), stops=True))

    async def recreate_cluster(self, name: str) -> Cluster:
        """Stop cluster ``name``, delete its data (its store and its identities) and start it anew,
        empty: a new CA, new tokens, a store without the old objects. Its trace bus carries on."""
        check_cluster_name(name)
        while name in self._transitions:
            await self.settled(name)
        await asyncio.shield(self._begin(name, self._recreate(name), stops=True))
        return self.cluster(name)

    async def delete_cluster(self, name: str) -> bool:
        """Stop cluster ``name``, delete its data and forget it, as if it had never been made (its
        account is gone). False if the lab has no such cluster. Its next ``ensure_cluster`` makes a
        new, empty one."""
        check_cluster_name(name)
        while name in self._transitions:
            await self.settled(name)
        if name not in self._clusters:
            return False
        await asyncio.shield(self._begin(name, self._delete(name), stops=True))
        return True

    async def stop(self) -> None:
        """Stop every cluster (newest first); the stores are closed when this returns. Idempotent.

        A transition under way (a wake, a hibernation) is cancelled first. Errors are logged, not
        raised, so that one cluster's failure never keeps the others open.
        """
        if self.state is LabState.STOPPED:
            return
        self.state = LabState.STOPPING
        pending = list(self._transitions.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for cluster in reversed(list(self._clusters.values())):
            try:
                await self._before_stop(cluster.name)
                await cluster.stop()
            except Exception:
                logger.exception("cluster %r did not stop cleanly", cluster.name)
        self.state = LabState.STOPPED

    # -- transitions ---------------------------------------------------------------------------------

    def _begin(self, name: str, work: Coroutine[Any, Any, None], *, stops: bool) -> asyncio.Task[None]:
        """Start ``work`` as cluster ``name``'s transition, in a task of its own (``stops``: one that
        stops its API server). Callers await it shielded, so that one who gives up (a browser that
        disconnects) does not cancel it for the others."""
        if name in self._transitions:
            work.close()
            raise RuntimeError(f"cluster {name!r} is already in a transition")
        task = asyncio.get_running_loop().create_task(work, name=f"cluster-{name}-transition")
        self._transitions[name] = task
        if stops:
            self._stopping.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._stopping.discard(finished)
            if self._transitions.get(name) is finished:
                del self._transitions[name]

        task.add_done_callback(done)
        return task

    def _begin_creating(self, name: str) -> asyncio.Task[None]:
        """Add a new cluster (state ``new``) to the lab and begin starting it."""
        write_cluster_list(self.data_dir, [*self._clusters, name])
        cluster = self._new_cluster(name)
        self._add(cluster)
        return self._begin(name, self._start_new(cluster), stops=False)

    async def _until_serving(self, cluster: Cluster, task: asyncio.Task[None]) -> None:
        """Wait until ``cluster``'s API server serves or ``task`` ends; ``ClusterUnavailable`` if the
        task failed (or was cancelled: the lab is stopping). A transition that stops the API server
        (a hibernation, a remaking, a restart) is waited for to its end: until its first step runs,
        the old server still looks as if it served."""
        if task in self._stopping:
            await asyncio.wait({task})
        elif not cluster.serving:
            serving = asyncio.ensure_future(cluster.wait_serving())
            try:
                await asyncio.wait({task, serving}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                serving.cancel()
        if task.done() and not cluster.serving:
            if task.cancelled():
                raise ClusterUnavailable(cluster.name, cluster.state, "its start was cancelled")
            error = task.exception()
            if error is not None:
                raise ClusterUnavailable(cluster.name, cluster.state, str(error)) from error

    async def settled(self, name: str) -> None:
        """Wait until cluster ``name`` is in no transition (whatever the transition's outcome)."""
        while (task := self._transitions.get(name)) is not None:
            await asyncio.wait([task])

    def _new_cluster(self, name: str) -> Cluster:
        return Cluster(
            name,
            self.config.cluster_config(name),
            data_dir=cluster_dir(self.data_dir, name),
            store=self._open_store(name),
            clock=self.config.clock,
            trace=self.trace_bus(name),
        )

    def _add(self, cluster: Cluster, *, state: ClusterState | None = None) -> None:
        if state is not None:
            cluster.state = state
        self._clusters = MappingProxyType({**self._clusters, cluster.name: cluster})

    async def _start_cluster(self, name: str) -> Cluster:
        cluster = self._new_cluster(name)
        self._add(cluster)
        await self._run_start(cluster)
        return cluster

    @staticmethod
    async def _run_start(cluster: Cluster) -> None:
        try:
            await cluster.start()
        except Exception:
            logger.exception("cluster %r failed to start", cluster.name)
        else:
            logger.info("cluster %r is running (store: %s)", cluster.name, cluster.store.backend or "?")

    async def _start_new(self, cluster: Cluster) -> None:
        self.activity.touch(cluster.name)
        await self._run_start(cluster)
        self.activity.touch(cluster.name)
        if cluster.state is ClusterState.FAILED:
            raise RuntimeError(f"cluster {cluster.name!r} failed to start: {cluster.error}")

    async def _wake(self, cluster: Cluster) -> None:
        if cluster.state is not ClusterState.HIBERNATED:
            cluster.store = self._open_store(cluster.name)  # a failed start closed the old one
        started = time.monotonic()
        try:
            await cluster.start()
        except Exception:
            logger.exception("cluster %r failed to wake", cluster.name)
            raise
        self.activity.touch(cluster.name)
        logger.info(
            "cluster %r woke: its API server answered after %.2f s, its components ran after %.2f s",
            cluster.name,
            cluster.serving_since - started,
            time.monotonic() - started,
        )

    async def _hibernate(self, cluster: Cluster) -> None:
        await self._before_stop(cluster.name)
        try:
            await cluster.stop()  # its store is closed even if something else failed to stop
        finally:
            # What the stopped cluster still held goes: the closed store (its key index), the metrics
            # (they name the API server, and so its watch caches), the recorded trace events. A fresh
            # store object opens nothing until the cluster wakes.
            cluster.store = self._open_store(cluster.name)
            cluster.metrics = MetricsRegistry()
            self.trace_bus(cluster.name).recorder.clear()
            cluster.state = ClusterState.HIBERNATED
        logger.info("cluster %r hibernated", cluster.name)

    async def _recreate(self, name: str) -> None:
        old = self._clusters.get(name)
        await self._before_stop(name)
        if old is not None:
            await old.stop()
        await self._wipe(name)
        self.trace_bus(name).recorder.clear()
        write_cluster_list(self.data_dir, [*self._clusters, name])
        cluster = self._new_cluster(name)
        self._add(cluster)
        await self._start_new(cluster)
        logger.info("cluster %r was made anew, empty", name)

    async def _delete(self, name: str) -> None:
        cluster = self._clusters[name]
        await self._before_stop(name)
        try:
            await cluster.stop()
        finally:
            self._clusters = MappingProxyType({k: v for k, v in self._clusters.items() if k != name})
            write_cluster_list(self.data_dir, list(self._clusters))
            bus = self._buses.pop(name, None)
            if bus is not None:
                bus.recorder.clear()
            self.activity.forget(name)
        await self._wipe(name)
        logger.info("cluster %r was deleted", name)

    async def _wipe(self, name: str) -> None:
        """Delete cluster ``name``'s data: its directory (identities, audit log, SQLite store) and,
        on a shared backend (PostgreSQL, etcd), its keys."""
        if not is_sqlite(self.config.store_url):
            store = open_store(
                name,
                url=self.config.store_url,
                data_dir=self.data_dir,
                trace=NULL_SINK,
                clock=self.config.clock,
                retention=None,
            )
            await store.start()
            try:
                await delete_everything(store)
            finally:
                await store.close()
        await asyncio.to_thread(shutil.rmtree, cluster_dir(self.data_dir, name), True)


async def delete_everything(store: Store, *, batch: int = 100) -> int:
    """Delete every key of ``store`` (the lab's own housekeeping, as ``etcdctl del --prefix``, not a
    request: nothing is admitted or traced); how many keys it deleted."""
    deleted = 0
    while True:
        page = await store.inspect(store.prefix, limit=batch)
        if not page.kvs:
            return deleted
        await store.txn(Txn(success=tuple(Delete(kv.key) for kv in page.kvs)))
        deleted += len(page.kvs)


def release_memory() -> None:
    """Give back to the operating system what hibernated clusters freed.

    A hibernated cluster's objects are freed by reference counting as soon as it stops, except those
    in reference cycles (tasks, futures, their callbacks), which wait for the cycle collector: one full
    collection finds them. The allocator then keeps the freed pages for later allocations; glibc's
    ``malloc_trim`` returns them, so the process's resident memory goes down with them.
    """
    gc.collect()
    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)


# -- the process ---------------------------------------------------------------------------------------


#: ``gc.set_threshold`` for a lab process (CPython's defaults are 700, 10, 10).
GC_THRESHOLDS = (50_000, 20, 100)


def tune_garbage_collector() -> None:
    """Make CPython's cycle collector fit a lab: many long-lived objects, allocated fast.

    A running lab holds hundreds of thousands of long-lived objects (watch caches, informer caches,
    the trace recorder) and allocates JSON-decoded dicts at a high rate. With CPython's default
    thresholds the collector runs after every 700 allocations and keeps rescanning the old objects;
    in ``python -m bench cluster`` that was over a third of the process's CPU. Collecting the young
    generation after 50 000 allocations instead cuts that to a few percent; reference counting still
    frees almost everything at once (only reference cycles wait for the collector). ``manage.py
    runlab`` calls this at start and ``gc.freeze()`` once the clusters run, so what start-up made is
    never scanned again.
    """
    gc.set_threshold(*GC_THRESHOLDS)


# -- the process's lab ---------------------------------------------------------------------------------

_active_lab: Lab | None = None


def activate(lab: Lab | None) -> None:
    """Make ``lab`` the lab of this process (None: no lab), for the web UI and the API server."""
    global _active_lab
    _active_lab = lab


def active_lab() -> Lab | None:
    """The lab this process runs, if ``manage.py runlab`` (or a test) activated one."""
    return _active_lab
