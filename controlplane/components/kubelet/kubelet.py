"""The kubelet: the agent on every node that turns pods bound to the node into running containers.

The scheduler only *decides* where a pod runs (it sets ``spec.nodeName``). Everything after that is
the job of the node's **kubelet** (kubernetes ``pkg/kubelet``), which, like every component, talks to
nobody but the API server, with its own identity ``system:node:<node>``:

1. **It registers its Node.** At start it creates ``nodes/<node>`` with labels
   (``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch``) and a status: capacity
   and allocatable (cpu, memory, pods), the conditions ``MemoryPressure``, ``DiskPressure``,
   ``PIDPressure`` (all ``False``) and ``Ready`` (``True``, "kubelet is posting ready status"),
   addresses, ``nodeInfo`` and the port of its own server. If the Node already exists (the kubelet
   restarted) it adopts it (``kubelet_node_status.go`` ``registerWithAPIServer``).
2. **It heartbeats**, two ways (KEP-589): it renews the Lease ``kube-node-lease/<node>`` every 10 s
   (``leaseDurationSeconds`` 40; ``component-helpers/apimachinery/lease/controller.go``), a tiny
   write; and every 10 s it recomputes the Node's status, but *patches* ``nodes/<node>/status`` only
   when something other than the heartbeat times changed, or 5 minutes after the last report
   (``nodeStatusUpdateFrequency`` / ``nodeStatusReportFrequency``). The node lifecycle controller
   watches both to decide whether the node is alive.
3. **It runs its pods.** An informer watches ``pods?fieldSelector=spec.nodeName=<node>``: only the
   pods bound here. For each one a ``PodLifecycle`` (the pure core, ``lifecycle.py``) plays the
   containers: pull, create, start, probe, exit, restart with back-off. The kubelet's loop (its
   ``syncLoop``) sleeps on the cluster clock until the earliest timer of any pod, a pod change, or
   the periodic full sync (1 min), then advances the pods whose turn it is (those that changed,
   whose timer came, or all of them at a full sync: upstream's pod workers). A pod's containers
   start only once the Secrets its volumes mount have been read, as this node (``volumes.py``).
   Then it:

   - records an Event for each thing the core did (``Pulling``, ``Pulled``, ``Created``, ``Started``,
     ``Killing``, ``BackOff``, ``Unhealthy``, ``Failed``...), from ``kubelet`` on host ``<node>``;
   - writes ``pods/<name>/status`` (a merge patch) when the status it computes
     (``status.generate_pod_status``: phase, conditions, container statuses, ``hostIP``, ``podIP``
     from the node's pod CIDR, ``startTime``) differs from what it last wrote.
4. **It stops pods gracefully.** Deleting a pod only marks it (``deletionTimestamp``,
   ``deletionGracePeriodSeconds``). The kubelet sees the mark, sends its containers SIGTERM and
   SIGKILL after the grace period (the core does the timing), and once no container runs it deletes
   the pod for good with ``gracePeriodSeconds=0`` and a ``uid`` precondition (so it can never delete a
   new pod of the same name): upstream's ``status_manager.go`` ``canBeDeleted``/``deletePodStatus``.
   A pod that finished (``Succeeded``/``Failed``) and is not being deleted stays, for its logs.
5. **It serves its containers' logs** (``server.py``), which the API server forwards
   ``kubectl logs`` to.

On the trace, a kubelet is ``kubelet:<node>``: ``component.state`` when it starts and stops, and for
each pod sync that wrote something (a status patch, the final delete) a ``reconcile`` of the
controller ``kubelet``, naming the pod's resourceVersion it synced (``revision``) and the Audit-IDs of
the requests it made (``requests``), so the diagram can follow a binding to the status update.

**Restarts.** A kubelet's memory of its containers is gone when it stops; real containers keep running
under the runtime. When a kubelet starts again it re-lists its pods; for a pod that has a
``status.startTime`` it *replays* the pod's lifecycle from that time up to now, quietly (no Events are
recorded again, and no status is written unless the replay differs from the pod's status). The
simulation is deterministic (container ids are derived from the pod uid, pull jitter from a random
generator seeded per pod), so a pod that was ``Running`` comes back ``Running`` with the same
container ids, restart count and logs, as if its containers had kept running while the kubelet was
away. A pod already ``Succeeded``/``Failed`` keeps its status untouched.

Simplifications: the kubelet sets ``spec.podCIDR`` itself when it registers (upstream the node IPAM
controller assigns it); ``Ready`` is ``True`` from the first status; the lease renewal has no jitter.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from controlplane.api import serializer
from controlplane.api.meta import Object, format_micro_time, format_time, object_meta, parse_timestamp
from controlplane.client.errors import AlreadyExists, APIError, Conflict, NotFound, TransportError
from controlplane.client.informer import (
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformerFactory,
    strip_managed_fields,
)
from controlplane.client.record import EventBroadcaster, EventRecorder, EventSinkImpl
from controlplane.client.rest import ClientLease, ClientOrFactory, PatchType, ResourceClient, RESTClient
from controlplane.clock import Clock
from controlplane.components.kubelet.certificate import CertificateManager
from controlplane.components.kubelet.hostprocesses import HostProcesses, with_process
from controlplane.components.kubelet.lifecycle import Change, NodeImages, PodLifecycle
from controlplane.components.kubelet.server import KubeletServer, PodView, sleep_until
from controlplane.components.kubelet.simulation import PullTiming, SeededRandom
from controlplane.components.kubelet.staticpods import ContainerRuns, StaticPods, is_mirror_pod
from controlplane.components.kubelet.status import generate_pod_status
from controlplane.components.kubelet.volumes import SecretEnv, env_problem, secret_env, secret_volumes
from controlplane.tasks import cancel_and_wait
from controlplane.timing import UPSTREAM, TimingProfile
from controlplane.trace import NULL_SINK, TraceSink, nodes, recording_requests

logger = logging.getLogger(__name__)


KUBELET_VERSION = "v1.37.0"
CONTAINER_RUNTIME_VERSION = "containerd://2.1.4"
KERNEL_VERSION = "6.8.0-kubelab"
OS_IMAGE = "Debian GNU/Linux 12 (bookworm)"
#: The kubelet's HTTPS port (``--port``), published in ``status.daemonEndpoints.kubeletEndpoint.Port``.
DEFAULT_KUBELET_PORT = 10250
NODE_LEASE_NAMESPACE = "kube-node-lease"
#: ``nodeLeaseDurationSeconds`` upstream (the timing profile says how long it is in a cluster).
LEASE_DURATION_SECONDS = 40
DEFAULT_POD_CIDR = "10.244.0.0/24"
COMPONENT = "kubelet"

#: The status fields the kubelet owns on a pod (others, like ``nominatedNodeName``, are left alone).
_OWNED_POD_STATUS = (
    "phase",
    "conditions",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "containerStatuses",
    "initContainerStatuses",
    "qosClass",
)
_TERMINAL_PHASES = ("Succeeded", "Failed")


# -- the node's status (pure) -----------------------------------------------------------------------

#: (type, status, reason, message) as upstream's setters write them (pkg/kubelet/nodestatus/setters.go).
NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_conditions(old: Sequence[Mapping[str, Any]], now: float) -> list[Object]:
    """The four kubelet conditions: heartbeat now; the transition time kept while the status holds."""
    previous = {c.get("type"): c for c in old}
    stamp = format_time(now)
    conditions: list[Object] = []
    for type_, status, reason, message in NODE_CONDITIONS:
        before = previous.get(type_)
        same = before is not None and before.get("status") == status
        transition = before.get("lastTransitionTime") if same and before is not None else None
        conditions.append(
            {
                "type": type_,
                "status": status,
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": transition or stamp,
                "reason": reason,
                "message": message,
            }
        )
    # Conditions other components own (NetworkUnavailable...) stay as they are.
    known = {c[0] for c in NODE_CONDITIONS}
    conditions += [dict(c) for t, c in previous.items() if t not in known]
    return conditions


def node_status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """``nodeStatusHasChanged``: any difference except the conditions' ``lastHeartbeatTime``."""
    if old is None:
        return True

    def without_heartbeat(status: Mapping[str, Any]) -> Object:
        out = dict(status)
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in status.get("conditions") or []
        ]
        return out

    return without_heartbeat(old) != without_heartbeat(new)


def _stable_id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]


@dataclass
class PodIPAllocator:
    """Pod IPs from the node's pod CIDR, lowest free first; ``.1`` is the bridge's (the CNI gateway)."""

    cidr: str
    by_uid: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._network = ipaddress.ip_network(self.cidr, strict=False)

    def allocate(self, uid: str, preferred: str | None = None) -> str:
        if uid in self.by_uid:
            return self.by_uid[uid]
        network = self._network
        taken = set(self.by_uid.values())
        if preferred and preferred not in taken:
            with contextlib.suppress(ValueError):
                if ipaddress.ip_address(preferred) in network:
                    self.by_uid[uid] = preferred
                    return preferred
        for i, host in enumerate(network.hosts()):
            if i == 0:
                continue  # the gateway
            ip = str(host)
            if ip not in taken:
                self.by_uid[uid] = ip
                return ip
        raise RuntimeError(f"no free pod IP left in {self.cidr}")

    def release(self, uid: str) -> None:
        self.by_uid.pop(uid, None)


# -- one pod ------------------------------------------------------------------------------------------


#: A projected token's lifetime when its volume names none (``expirationSeconds``' default), and the
#: part of it after which the kubelet fetches a new one (upstream's token manager: 80%).
DEFAULT_TOKEN_SECONDS = 3600
TOKEN_REFRESH_FRACTION = 0.8


@dataclass
class PodWorker:
    """What the kubelet keeps for one pod (upstream's pod worker): its lifecycle and what it wrote."""

    pod: Object
    lifecycle: PodLifecycle
    pod_ips: tuple[str, ...]
    #: The status last written (or found already right); None: nothing written yet.
    written: Object | None = None
    #: ``written`` without its null fields, as the next sync compares it.
    written_set: Object | None = None
    #: The final delete (grace 0, uid precondition) was sent.
    deleted: bool = False
    #: The ServiceAccount tokens of its projected volumes, by volume name (see ``_project_tokens``),
    #: and when (cluster time) they are due to be fetched again; None: not fetched yet.
    tokens: dict[str, str] = field(default_factory=dict)
    tokens_due: float | None = None
    #: While its Secret volumes are not mounted (``lifecycle.held``): when (cluster time) to try again.
    mount_due: float | None = None
    #: The Secrets each container's environment names (``volumes.secret_env``).
    env_secrets: dict[str, list[SecretEnv]] = field(default_factory=dict)

    def wrote(self, status: Object) -> None:
        """Remember ``status`` (its kubelet-owned fields) as written."""
        self.written = status
        self.written_set = _without_none(status)

    def due(self, now: float) -> bool:
        """Whether a timer of its containers, its token refresh or its next mount attempt has come."""
        return any(
            t is not None and t <= now
            for t in (self.lifecycle.next_wakeup(), self.tokens_due, self.mount_due)
        )


def _without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _owned(status: Mapping[str, Any]) -> Object:
    return {k: status[k] for k in _OWNED_POD_STATUS if k in status}


class Kubelet:
    """The kubelet of one simulated node.

    ``client`` is a ``RESTClient`` (the caller closes it) or a function making one (made at ``start``,
    closed at ``stop``), authenticated as ``system:node:<node_name>``. ``clock`` is the cluster clock
    (the client's by default); ``rng`` seeds the informers' and the event writer's jitter. The node's
    shape: ``cpu``, ``memory``, ``max_pods``, extra ``labels``, ``pod_cidr`` (pod IPs) and
    ``internal_ip`` (``status.addresses``, the pods' ``hostIP``); ``capacity`` overrides any capacity
    entry. ``timing`` is the cluster's timing profile (Lease, node status and sync periods);
    ``pull_timing`` how long image pulls take. ``server`` is the kubelet's ASGI application, for the
    API server's ``pods/log``.
    """

    def __init__(
        self,
        client: ClientOrFactory,
        node_name: str,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        trace: TraceSink = NULL_SINK,
        cluster: str = "",
        cpu: str = "4",
        memory: str = "16Gi",
        max_pods: int = 110,
        ephemeral_storage: str = "100Gi",
        labels: Mapping[str, str] | None = None,
        pod_cidr: str = DEFAULT_POD_CIDR,
        internal_ip: str | None = None,
        port: int = DEFAULT_KUBELET_PORT,
        capacity: Mapping[str, str] | None = None,
        pull_timing: PullTiming | None = None,
        timing: TimingProfile = UPSTREAM,
        host_processes: HostProcesses | None = None,
        register_with_taints: Sequence[Mapping[str, str]] = (),
        static_pods: StaticPods | None = None,
        certificates: CertificateManager | None = None,
    ) -> None:
        self._lease = ClientLease(client)
        self.node_name = node_name
        self._clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.trace = trace
        self.cluster = cluster
        self.capacity = {
            "cpu": cpu,
            "ephemeral-storage": ephemeral_storage,
            "hugepages-2Mi": "0",
            "memory": memory,
            "pods": str(max_pods),
            **(capacity or {}),
        }
        self.extra_labels = dict(labels or {})
        self.pod_cidr = pod_cidr
        self.internal_ip = internal_ip or self._default_internal_ip()
        self.port = port
        self.pull_timing = pull_timing or PullTiming()
        #: The node's own processes some pods stand for (kube-proxy's): see ``hostprocesses.py``.
        self.host_processes = host_processes
        #: ``--register-with-taints``: the taints the Node is created with (kubeadm's control plane's).
        self.register_with_taints = [dict(t) for t in register_with_taints]
        #: The static pods this kubelet runs from files, and their mirror pods (``staticpods.py``).
        self.static_pods = static_pods
        #: TLS bootstrapping and rotation of its client certificate (``certificate.py``); None: the
        #: client's credential is given and renewed by whoever made it.
        self.certificates = certificates
        #: The kubelet's timers, from the cluster's timing profile (upstream's defaults, or faster).
        self.timing = timing
        self.node_status_update_frequency = timing.node_status_update_frequency
        self.node_status_report_frequency = timing.node_status_report_frequency
        #: ``leaseDurationSeconds`` is a whole number of seconds (at least 1).
        self.lease_duration_seconds = max(1, round(timing.node_lease_duration))
        self.lease_renew_interval = timing.node_lease_renew_interval
        self.sync_frequency = timing.kubelet_sync_frequency
        #: The trace's name for this kubelet (its diagram node id).
        self.trace_source = nodes.kubelet(node_name)
        self.server = KubeletServer(self, node_name=node_name)
        self.images = NodeImages()
        self.ips = PodIPAllocator(pod_cidr)
        self.workers: dict[str, PodWorker] = {}
        self.node: Object | None = None
        self.lease: Object | None = None
        self._last_node_status: Object | None = None
        self._last_report = float("-inf")
        #: ``lastNodeUnschedulable``: the node's ``spec.unschedulable`` when last looked at.
        self._last_unschedulable = False
        self._last_full_sync = float("-inf")
        self._client: RESTClient | None = None
        self._factory: SharedInformerFactory | None = None
        self._pod_informer: SharedIndexInformer | None = None
        #: The kubelet's own Node, watched (``nodeLister`` in pkg/kubelet/kubelet.go).
        self._node_factory: SharedInformerFactory | None = None
        self._node_informer: SharedIndexInformer | None = None
        self._broadcaster: EventBroadcaster | None = None
        self._recorder: EventRecorder | None = None
        self._wakeup = asyncio.Event()
        #: Pods the informer changed since their last sync (by uid): the sync loop's work list.
        self._changed_pods: set[str] = set()
        self._change = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def _default_internal_ip(self) -> str:
        digest = int(_stable_id(self.node_name), 16)
        return f"10.0.{digest % 200 + 1}.{digest // 200 % 250 + 2}"

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        if self._clock is not None:
            return self._clock
        if self._client is None:
            raise RuntimeError("the kubelet has no clock before it starts")
        return self._client.clock

    @property
    def client(self) -> RESTClient:
        if self._client is None:
            raise RuntimeError("the kubelet is not started")
        return self._client

    @property
    def started(self) -> bool:
        return bool(self._tasks)

    @property
    def node_informer(self) -> SharedIndexInformer | None:
        """The watch of the kubelet's own Node, while it runs."""
        return self._node_informer

    async def start(self) -> None:
        """Register the Node and its Lease, start watching this node's pods, then start the loops."""
        if self._tasks:
            return
        if self.certificates is not None:
            # No request before the kubelet has a client certificate: bootstrap first (certificate.py).
            await self.certificates.start()
        self._client = self._lease.open()
        clock = self.clock
        try:
            self._broadcaster = EventBroadcaster(
                EventSinkImpl(self._client), clock=clock, rng=random.Random(self.rng.getrandbits(64))
            )
            self._recorder = self._broadcaster.new_recorder(COMPONENT, self.node_name)
            self._broadcaster.start()
            await self._register_node()
            await self._ensure_lease()
            # The kubelet never reads managedFields, a third of a pod's size in memory. Upstream's
            # kubelet keeps them (pkg/kubelet/config/apiserver.go has no transform); a lab holds a
            # thousand kubelets in one process, so this one drops them, as the scheduler does.
            self._factory = self._informers(f"spec.nodeName={self.node_name}")
            self._pod_informer = self._factory.informer_for("", "v1", "pods")
            wake = ResourceEventHandlerFuncs(
                self._pod_changed, lambda _old, new: self._pod_changed(new), lambda _obj: self._wake()
            )
            self._pod_informer.add_event_handler(wake)
            self._factory.start()
            # Upstream's kubelet watches its own Node (a field selector on its name) and compares the
            # status it computes with that copy, so a condition someone else changed (the node
            # lifecycle controller's Unknown while the kubelet could not reach the API server) is
            # set right at the next status update, not after nodeStatusReportFrequency.
            self._node_factory = self._informers(f"metadata.name={self.node_name}")
            self._node_informer = self._node_factory.informer_for("", "v1", "nodes")
            self._node_factory.start()
            await self._factory.wait_for_cache_sync()
            await self._node_factory.wait_for_cache_sync()
        except BaseException:
            await self._shutdown()
            raise
        self._trace_state("running")
        self._tasks = [
            asyncio.create_task(self._sync_loop(), name=f"kubelet {self.node_name} sync loop"),
            asyncio.create_task(self._lease_loop(), name=f"kubelet {self.node_name} lease"),
            asyncio.create_task(self._node_status_loop(), name=f"kubelet {self.node_name} node status"),
        ]

    def _informers(self, field_selector: str) -> SharedInformerFactory:
        return SharedInformerFactory(
            self.client,
            clock=self.clock,
            rng=random.Random(self.rng.getrandbits(64)),
            field_selector=field_selector,
            transform=strip_managed_fields,
        )

    async def stop(self) -> None:
        """Stop the loops, the event writer and the informer; close the client if the kubelet made it.

        The pods are left as they are: their containers "keep running" and a new kubelet resumes them.
        """
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)
        if tasks:
            self._trace_state("stopped")
        await self._shutdown()
        self.workers.clear()  # what this kubelet knew of its containers goes with it
        self._pulse()  # and followers of a log stream notice their kubelet is gone

    async def _shutdown(self) -> None:
        if self._broadcaster is not None:
            await self._broadcaster.shutdown()
            self._broadcaster = None
        if self._factory is not None:
            await self._factory.shutdown()
            self._factory = None
        if self._node_factory is not None:
            await self._node_factory.shutdown()
            self._node_factory = None
            self._node_informer = None
        await self._lease.close()
        self._client = None
        if self.certificates is not None:
            await self.certificates.stop()

    async def flush_events(self) -> None:
        """Wait until every Event recorded so far has been written (for tests and clean shutdowns)."""
        if self._broadcaster is not None:
            await self._broadcaster.flush()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- what the log server asks (server.PodSource) ---------------------------------------------------

    def pod_view(self, namespace: str, name: str) -> PodView | None:
        for worker in self.workers.values():
            meta = object_meta(worker.pod)
            if meta.get("name") == name and (meta.get("namespace") or "default") == namespace:
                return PodView(worker.pod, worker.lifecycle)
        return None

    def next_change(self) -> asyncio.Event:
        return self._change

    def _pulse(self) -> None:
        self._change.set()
        self._change = asyncio.Event()

    # -- the Node -----------------------------------------------------------------------------------

    def _nodes(self) -> ResourceClient:
        return self.client.resource("", "v1", "nodes")

    def _labels(self) -> dict[str, str]:
        return {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": self.node_name,
            "kubernetes.io/os": "linux",
            **self.extra_labels,
        }

    def node_status(self, old: Mapping[str, Any] | None, now: float) -> Object:
        """The Node's status as the kubelet's setters compute it (pkg/kubelet/nodestatus/setters.go)."""
        old_conditions: list[Mapping[str, Any]] = list((old or {}).get("conditions") or [])
        return {
            "capacity": dict(self.capacity),
            "allocatable": dict(self.capacity),
            "conditions": node_conditions(old_conditions, now),
            "addresses": [
                {"type": "InternalIP", "address": self.internal_ip},
                {"type": "Hostname", "address": self.node_name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
            "nodeInfo": {
                "machineID": _stable_id("machine", self.cluster, self.node_name),
                "systemUUID": _stable_id("system", self.cluster, self.node_name),
                "bootID": _stable_id("boot", self.cluster, self.node_name),
                "kernelVersion": KERNEL_VERSION,
                "osImage": OS_IMAGE,
                "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }

    def _node_ref(self) -> Object:
        """What Events about the node point at (upstream uses the node name as its uid)."""
        return {
            "kind": "Node",
            "apiVersion": "v1",
            "metadata": {"name": self.node_name, "uid": self.node_name},
        }

    async def _register_node(self) -> None:
        """``registerWithAPIServer``: create the Node, or adopt the one a previous run registered."""
        now = self.clock.now()
        status = self.node_status(None, now)
        body: Object = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": self._labels(),
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]},
            "status": status,
        }
        if self.register_with_taints:
            body["spec"]["taints"] = [dict(t) for t in self.register_with_taints]
        self._record(self._node_ref(), "Normal", "Starting", "Starting kubelet.")
        try:
            self.node = await self._nodes().create(body)
            self._last_node_status = status
            self._last_report = now
            created = True
        except AlreadyExists:
            created = False
            self.node = await self._adopt_node()
            await self._sync_node_status(force=True)
        if created:
            for type_, _, reason, _ in NODE_CONDITIONS:
                event = "NodeReady" if type_ == "Ready" else reason.replace("Kubelet", "Node")
                self._record(
                    self._node_ref(), "Normal", event, f"Node {self.node_name} status is now: {event}"
                )
        self._record(
            self._node_ref(),
            "Normal",
            "NodeAllocatableEnforced",
            "Updated Node Allocatable limit across pods",
        )

    async def _adopt_node(self) -> Object:
        """An existing Node: keep its pod CIDR, make sure the required labels are there."""
        node = await self._nodes().get(self.node_name)
        spec: Mapping[str, Any] = node.get("spec") or {}
        cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
        patch: Object = {}
        if cidrs:
            self.pod_cidr = str(cidrs[0])
            self.ips = PodIPAllocator(self.pod_cidr, self.ips.by_uid)
        else:
            patch["spec"] = {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]}
        labels: Mapping[str, Any] = object_meta(node).get("labels") or {}
        missing = {k: v for k, v in self._labels().items() if labels.get(k) != v}
        if missing:
            patch["metadata"] = {"labels": missing}
        if patch:
            node = await self._nodes().patch(self.node_name, patch)
        return node

    def _original_status(self) -> Mapping[str, Any] | None:
        """The Node's status as last seen: the watched copy, as upstream's first try reads the lister
        (``tryUpdateNodeStatus`` in pkg/kubelet/kubelet_node_status.go); before the watch has it, what
        this kubelet last wrote."""
        if self._node_informer is not None:
            node = self._node_informer.indexer.get_by_key(self.node_name)
            if node is not None:
                status: Mapping[str, Any] = node.get("status") or {}
                return status
        return self._last_node_status or (self.node or {}).get("status")

    def _record_node_schedulable_event(self) -> None:
        """``recordNodeSchedulableEvent`` (pkg/kubelet/kubelet_node_status.go), one of the status
        setters: an Event when ``kubectl cordon`` or ``uncordon`` changed ``spec.unschedulable``."""
        node = self._node_informer.indexer.get_by_key(self.node_name) if self._node_informer else None
        unschedulable = bool(((node or self.node or {}).get("spec") or {}).get("unschedulable"))
        if unschedulable != self._last_unschedulable:
            event = "NodeNotSchedulable" if unschedulable else "NodeSchedulable"
            self._record(self._node_ref(), "Normal", event, f"Node {self.node_name} status is now: {event}")
            self._last_unschedulable = unschedulable

    async def _sync_node_status(self, *, force: bool = False) -> None:
        """``tryUpdateNodeStatus``: patch only when changed, or when the report frequency has passed."""
        self._record_node_schedulable_event()
        now = self.clock.now()
        old = self._original_status()
        status = self.node_status(old, now)
        due = now - self._last_report >= self.node_status_report_frequency
        # The setters change only their own fields of the original status; the rest stays as it is.
        if not force and not due and not node_status_changed(old, {**(old or {}), **status}):
            return
        try:
            self.node = await self._nodes().patch(
                self.node_name, {"status": status}, patch_type=PatchType.MERGE, subresource="status"
            )
        except NotFound:
            logger.warning("node %s was deleted; registering it again", self.node_name)
            await self._register_node()
            return
        self._last_node_status = status
        self._last_report = now

    async def _node_status_loop(self) -> None:
        while True:
            await self.clock.sleep(self.node_status_update_frequency)
            try:
                await self._sync_node_status()
            except (APIError, TransportError) as error:
                logger.warning("updating node %s status failed: %s", self.node_name, error)

    # -- the Lease ----------------------------------------------------------------------------------

    def _leases(self) -> ResourceClient:
        return self.client.resource("coordination.k8s.io", "v1", "leases", NODE_LEASE_NAMESPACE)

    def _owner_references(self) -> list[Object]:
        """``setNodeOwnerFunc``: the Lease is owned by the Node, so it goes when the Node goes."""
        uid = object_meta(self.node or {}).get("uid")
        if not uid:
            return []
        return [{"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": uid}]

    async def _ensure_lease(self) -> None:
        """``ensureLease``: get the node's Lease, or create it (holder = the node, 40 s)."""
        try:
            self.lease = await self._leases().get(self.node_name)
            return
        except NotFound:
            pass
        lease: Object = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.node_name, "namespace": NODE_LEASE_NAMESPACE},
            "spec": {
                "holderIdentity": self.node_name,
                "leaseDurationSeconds": self.lease_duration_seconds,
                "renewTime": format_micro_time(self.clock.now()),
            },
        }
        owners = self._owner_references()
        if owners:
            lease["metadata"]["ownerReferences"] = owners
        try:
            self.lease = await self._leases().create(lease)
        except AlreadyExists:
            self.lease = await self._leases().get(self.node_name)

    async def renew_lease(self) -> None:
        """``renew``: write ``renewTime`` = now (an update on the last seen resourceVersion)."""
        if self.lease is None:
            await self._ensure_lease()
        assert self.lease is not None
        # upstream's ``DeepCopy``, made shallow: only ``spec`` (and perhaps ``metadata``) change, so
        # only they are copied; the rest of the last Lease seen (managedFields ...) is sent as is.
        # ``self.lease`` itself is left untouched either way.
        lease = dict(self.lease)
        spec = lease["spec"] = dict(lease.get("spec") or {})
        spec["holderIdentity"] = self.node_name
        spec["leaseDurationSeconds"] = self.lease_duration_seconds
        spec["renewTime"] = format_micro_time(self.clock.now())
        if not lease["metadata"].get("ownerReferences") and self._owner_references():
            lease["metadata"] = {**lease["metadata"], "ownerReferences": self._owner_references()}
        try:
            self.lease = await self._leases().update(lease)
        except (Conflict, NotFound):
            self.lease = None  # someone else wrote it, or it was deleted: read (or create) it again
            await self._ensure_lease()
            if self.lease is not None:
                await self.renew_lease()

    async def _lease_loop(self) -> None:
        while True:
            await self.clock.sleep(self.lease_renew_interval)
            try:
                await self.renew_lease()
            except (APIError, TransportError) as error:
                logger.warning("renewing the lease of %s failed: %s", self.node_name, error)
                self.lease = None

    # -- pods ---------------------------------------------------------------------------------------

    def _wake(self) -> None:
        self._wakeup.set()

    def host_processes_changed(self) -> None:
        """A process of the node started or stopped (``hostprocesses.py``): every pod is synced again
        at once, so those standing for it report their readiness anew."""
        self._changed_pods.update(self.workers)
        self._wake()

    def _pod_changed(self, pod: Object) -> None:
        self._changed_pods.add(str(object_meta(pod).get("uid")))
        self._wake()

    def _pods(self, namespace: str) -> ResourceClient:
        return self.client.resource("", "v1", "pods", namespace)

    async def _sync_loop(self) -> None:
        """``syncLoop``: sync the pods due, then sleep until a timer, a pod change or the periodic sync."""
        while True:
            self._wakeup.clear()
            now = self.clock.now()
            full = now - self._last_full_sync >= self.sync_frequency
            if full:
                self._last_full_sync = now
            try:
                await self.sync_pods(now, full=full, only_due=True)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("kubelet %s: syncing pods failed", self.node_name)
            finally:
                self._pulse()
            timers = [t for w in self.workers.values() if (t := w.lifecycle.next_wakeup()) is not None]
            timers += [w.mount_due for w in self.workers.values() if w.mount_due is not None]
            timers.append(self._last_full_sync + self.sync_frequency)
            await self._wait(min(timers))

    async def _wait(self, until: float) -> None:
        if until <= self.clock.now():
            await asyncio.sleep(0)
            return
        waiters: list[asyncio.Task[Any]] = [
            asyncio.create_task(self._wakeup.wait()),
            asyncio.create_task(sleep_until(self.clock, until)),
        ]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)

    async def sync_pods(self, now: float, *, full: bool = False, only_due: bool = False) -> None:
        """One pass over this node's pods (``HandlePodSyncs`` + ``HandlePodCleanups``).

        ``only_due``: sync only the pods that need it, as upstream's sync loop hands a pod worker only
        its own pod's updates and timers (``getPodsToSync``): those the informer changed, new ones,
        and those whose container timer or token refresh has come. A full sync takes them all.
        """
        if self._pod_informer is None:
            return
        desired = {str(object_meta(p).get("uid")): p for p in self._pod_informer.indexer.list()}
        if self.static_pods is not None:
            # A mirror pod is not run, only kept in step with its static pod (``handleMirrorPod``).
            mirrors = [p for p in desired.values() if is_mirror_pod(p)]
            desired = {uid: p for uid, p in desired.items() if not is_mirror_pod(p)}
            await self._sync_static_pods(mirrors, now)
        for uid in [u for u in self.workers if u not in desired]:
            self._forget(uid)  # deleted from the API: the containers are gone with it
        changed, self._changed_pods = self._changed_pods, set()
        changed &= desired.keys()
        try:
            for uid, pod in desired.items():
                worker = self.workers.get(uid)
                quiet = uid not in changed and worker is not None and not worker.due(now)
                if only_due and not full and quiet:
                    continue
                changed.discard(uid)
                await self._sync_one(uid, pod, now, full=full)
        finally:
            self._changed_pods |= changed  # what this pass did not get to (it was cancelled, or failed)

    async def _sync_one(self, uid: str, pod: Object, now: float, *, full: bool) -> None:
        started = time.perf_counter()
        error: Exception | None = None
        with recording_requests() as issued:
            try:
                await self._sync_pod(uid, pod, now, full=full)
            except (APIError, TransportError) as failure:
                error = failure
                self._changed_pods.add(uid)  # try it again at the next pass
                logger.warning("kubelet %s: syncing pod %s failed: %s", self.node_name, uid, failure)
        if issued:
            self._trace_sync(pod, issued, error, time.perf_counter() - started)

    async def _sync_static_pods(self, mirrors: list[Object], now: float) -> None:
        """Keep the mirror pods in step with the static pods; a failure is tried again at the next
        pass (a pod change, a timer, a program starting or stopping, or the periodic full sync)."""
        assert self.static_pods is not None
        node_uid = str(object_meta(self.node or {}).get("uid") or "")
        try:
            await self.static_pods.sync(self._pods("kube-system"), mirrors, node_uid, now, self.internal_ip)
        except (APIError, TransportError) as failure:
            logger.warning("kubelet %s: syncing static pods failed: %s", self.node_name, failure)

    def static_pod_container(self, namespace: str, name: str) -> ContainerRuns | None:
        """The container of the static pod ``namespace/name``, for its logs (None: not a static pod)."""
        return self.static_pods.container_log(namespace, name) if self.static_pods is not None else None

    def _forget(self, uid: str) -> None:
        self.workers.pop(uid, None)
        self.ips.release(uid)

    def _new_worker(self, uid: str, pod: Object, now: float) -> PodWorker:
        """Start running a pod, or resume one a previous run of this kubelet ran (replay, see above)."""
        status: Mapping[str, Any] = pod.get("status") or {}
        started = parse_timestamp(status.get("startTime"))
        begin = started if started is not None and started <= now else now
        lifecycle = PodLifecycle(
            pod,
            now=begin,
            timing=self.pull_timing,
            rng=SeededRandom(f"{self.node_name}/{uid}"),
            images=self.images,
            config_retry=self.timing.kubelet_pod_backoff,
        )
        if (pod.get("spec") or {}).get("hostNetwork"):
            ips: tuple[str, ...] = (self.internal_ip,)
        else:
            ips = (self.ips.allocate(uid, status.get("podIP")),)
        worker = PodWorker(pod, lifecycle, ips, env_secrets=secret_env(pod))
        if started is not None and started <= now:
            lifecycle.advance(now)  # replay quietly: these Events were recorded by the earlier run
            worker.wrote(_owned(status))
        elif secret_volumes(pod):
            lifecycle.held = True  # its containers wait for the Secrets (``_mount_secrets``)
        return worker

    async def _sync_pod(self, uid: str, pod: Object, now: float, *, full: bool) -> None:
        meta = object_meta(pod)
        deleting = bool(meta.get("deletionTimestamp"))
        old_phase = (pod.get("status") or {}).get("phase")
        worker = self.workers.get(uid)
        if worker is None:
            worker = self.workers[uid] = self._new_worker(uid, pod, now)
        worker.pod = pod
        if not deleting:
            await self._project_tokens(worker, now)
            if worker.lifecycle.held:
                await self._mount_secrets(worker, now)
            if not worker.lifecycle.held:
                await self._check_env_secrets(worker)
        lifecycle = worker.lifecycle
        changes: list[Change] = []
        if deleting and lifecycle.terminating_at is None:
            grace = meta.get("deletionGracePeriodSeconds")
            changes += lifecycle.terminate(now, float(grace) if isinstance(grace, int | float) else None)
        changes += lifecycle.advance(now)
        self._record_changes(pod, changes)
        if old_phase not in _TERMINAL_PHASES:  # a finished pod's status is final (no illegal transitions)
            await self._write_status(worker, now, full=full)
        if deleting and lifecycle.terminal and not worker.deleted:
            await self._finish_deletion(worker)

    async def _project_tokens(self, worker: PodWorker, now: float) -> None:
        """The token manager: fetch each projected ``serviceAccountToken`` of the pod through TokenRequest.

        A token is bound to the pod (deleting the pod invalidates it), with the audience and lifetime the
        volume asks for (upstream's ``kube-api-access-*`` volume: the API server's audience, 3607 s). As
        upstream's kubelet (``pkg/kubelet/token/token_manager.go``), it is fetched again once 80% of its
        lifetime has passed. A token that cannot be fetched is a ``FailedMount`` Warning and is retried
        at the next sync; the simulated containers run on regardless.
        """
        if worker.tokens_due is not None and now < worker.tokens_due:
            return
        pod = worker.pod
        meta = object_meta(pod)
        spec: Mapping[str, Any] = pod.get("spec") or {}
        account = str(spec.get("serviceAccountName") or "default")
        due: float | None = None
        for volume in spec.get("volumes") or []:
            for source in (
                ((volume.get("projected") or {}).get("sources") or []) if isinstance(volume, dict) else []
            ):
                wanted = source.get("serviceAccountToken") if isinstance(source, dict) else None
                if not isinstance(wanted, dict):
                    continue
                seconds = int(wanted.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
                request = {
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {
                        "audiences": [wanted["audience"]] if wanted.get("audience") else [],
                        "expirationSeconds": seconds,
                        "boundObjectRef": {
                            "kind": "Pod",
                            "apiVersion": "v1",
                            "name": meta.get("name"),
                            "uid": meta.get("uid"),
                        },
                    },
                }
                namespace = str(meta.get("namespace") or "default")
                try:
                    answer = await self._accounts(namespace).request("POST", account, "token", body=request)
                    token = str(serializer.decode(answer.content)["status"]["token"])
                except (APIError, TransportError, ValueError, KeyError, TypeError) as error:
                    self._record(
                        pod,
                        "Warning",
                        "FailedMount",
                        f'MountVolume.SetUp failed for volume "{volume.get("name")}" : '
                        f"failed to fetch token: {error}",
                    )
                    due = now  # try again at the next sync
                    continue
                worker.tokens[str(volume.get("name"))] = token
                refresh = now + TOKEN_REFRESH_FRACTION * seconds
                due = refresh if due is None else min(due, refresh)
        worker.tokens_due = due if due is not None else float("inf")

    async def _mount_secrets(self, worker: PodWorker, now: float) -> None:
        """Read every Secret the pod's volumes mount, as this node (see ``volumes.py``); once all are
        read, the containers may start. A Secret that cannot be read is a ``FailedMount`` Warning, and
        another attempt after ``kubelet_pod_backoff``."""
        if worker.mount_due is not None and now < worker.mount_due:
            return
        pod = worker.pod
        namespace = str(object_meta(pod).get("namespace") or "default")
        for volume in secret_volumes(pod):
            try:
                await self._secrets(namespace).get(volume.secret)
            except NotFound:
                if volume.optional:
                    continue
                problem = f'secret "{volume.secret}" not found'
            except (APIError, TransportError) as error:
                problem = str(error)
            else:
                continue
            self._record(
                pod,
                "Warning",
                "FailedMount",
                f'MountVolume.SetUp failed for volume "{volume.volume}" : {problem}',
            )
            worker.mount_due = now + self.timing.kubelet_pod_backoff
            return
        worker.mount_due = None
        worker.lifecycle.release(now)

    async def _check_env_secrets(self, worker: PodWorker) -> None:
        """``makeEnvironmentVariables``: read the Secrets the environment of each container not created
        yet names, as this node, and tell the lifecycle which containers cannot be created (they wait
        as ``CreateContainerConfigError`` and are tried again after the back-off; ``volumes.py``)."""
        pending = [name for name in worker.lifecycle.waiting_for_config() if name in worker.env_secrets]
        if not pending:
            return
        namespace = str(object_meta(worker.pod).get("namespace") or "default")
        read: dict[str, Mapping[str, Any] | None] = {}
        problems: dict[str, str] = {}
        for name in pending:
            refs = worker.env_secrets[name]
            for ref in refs:
                if ref.secret in read:
                    continue
                try:
                    read[ref.secret] = await self._secrets(namespace).get(ref.secret)
                except NotFound:
                    read[ref.secret] = None
                except (APIError, TransportError) as error:
                    problems[name] = str(error)
                    break
            problem = problems.get(name) or env_problem(refs, namespace, read)
            if problem is not None:
                problems[name] = problem
        worker.lifecycle.set_config_errors(problems)

    def _secrets(self, namespace: str) -> ResourceClient:
        assert self._client is not None
        return self._client.resource("", "v1", "secrets", namespace)

    def _accounts(self, namespace: str) -> ResourceClient:
        assert self._client is not None
        return self._client.resource("", "v1", "serviceaccounts", namespace)

    async def _write_status(self, worker: PodWorker, now: float, *, full: bool) -> None:
        """``status_manager``: patch ``pods/<name>/status`` when the computed status changed."""
        pod = worker.pod
        current: Mapping[str, Any] = pod.get("status") or {}
        base = {**current, **(worker.written or {})}
        host = self.host_processes
        status = generate_pod_status(
            {**pod, "status": base},
            with_process(worker.lifecycle.snapshot(), None if host is None else host.runs(pod)),
            now=now,
            host_ip=self.internal_ip,
            pod_ips=worker.pod_ips,
        )
        owned = _owned(status)
        wanted = _without_none(owned)
        if full or worker.written_set is None:
            reference = _without_none(_owned(current))
        else:
            reference = worker.written_set
        if wanted == reference:
            worker.written, worker.written_set = owned, wanted
            return
        patch: Object = dict(status)
        for key in _OWNED_POD_STATUS:
            if key not in patch and key in current:
                patch[key] = None
        meta = object_meta(pod)
        try:
            written = await self._pods(meta.get("namespace") or "default").patch(
                str(meta.get("name")), {"status": patch}, patch_type=PatchType.MERGE, subresource="status"
            )
        except NotFound:
            return  # deleted meanwhile: the informer will tell
        worker.written, worker.written_set = owned, wanted
        worker.pod = written

    async def _finish_deletion(self, worker: PodWorker) -> None:
        """Every container stopped: remove the pod for good (grace 0, only this very pod: its uid)."""
        meta = object_meta(worker.pod)
        worker.deleted = True
        try:
            await self._pods(meta.get("namespace") or "default").delete(
                str(meta.get("name")), grace_period_seconds=0, preconditions={"uid": str(meta.get("uid"))}
            )
        except (NotFound, Conflict):
            pass  # already gone, or a new pod of the same name (not ours to delete)
        except (APIError, TransportError):
            worker.deleted = False  # try again at the next sync
            raise

    def _record_changes(self, pod: Object, changes: list[Change]) -> None:
        if not changes:
            return
        obj = {"kind": "Pod", "apiVersion": "v1", **pod}
        for change in changes:
            self._record(obj, change.type, change.reason, change.message)

    def _record(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        if self._recorder is not None:
            self._recorder.event(obj, type, reason, message)

    def _trace_sync(self, pod: Object, issued: list[str], error: Exception | None, duration: float) -> None:
        """A pod sync that wrote something, as a ``reconcile`` of the controller ``kubelet``: caused by
        the pod's resourceVersion it synced (the watch event that brought it), making ``requests``."""
        if not self.trace.enabled:
            return
        meta = object_meta(pod)
        version = meta.get("resourceVersion")
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        extra: Mapping[str, Any] = {"from": self.trace_source, "cluster": self.cluster}
        self.trace.emit(
            "reconcile",
            controller=COMPONENT,
            key=f"{namespace}/{name}",
            namespace=namespace,
            name=name,
            result="error" if error is not None else "success",
            error=repr(error) if error is not None else None,
            duration=round(duration, 6),
            revision=int(version) if isinstance(version, str) and version.isdigit() else None,
            requests=list(issued),
            **extra,
        )

    def _trace_state(self, state: str) -> None:
        if self.trace.enabled:
            extra: Mapping[str, Any] = {"from": self.trace_source, "cluster": self.cluster}
            self.trace.emit("component.state", component=COMPONENT, node=self.node_name, state=state, **extra)


__all__ = [
    "DEFAULT_KUBELET_PORT",
    "KUBELET_VERSION",
    "LEASE_DURATION_SECONDS",
    "NODE_CONDITIONS",
    "NODE_LEASE_NAMESPACE",
    "Kubelet",
    "PodIPAllocator",
    "PodWorker",
    "node_conditions",
    "node_status_changed",
]
