"""Static pods and their mirror pods: how a kubeadm control plane shows up in ``kubectl get pods``.

On a kubeadm cluster the control plane runs on a node of its own, ``control-plane``, whose kubelet
starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler from files, not from the API
server: ``kubeadm init`` writes their manifests to ``/etc/kubernetes/manifests`` and the kubelet runs
whatever it finds there (the kubelet needs no API server to start the API server). These are
**static pods**. The kubelet reads each file (``pkg/kubelet/config/file.go``), names the pod
``<name>-<node>``, binds it to its own node and gives it a UID that is the hash of the manifest, in
the annotation ``kubernetes.io/config.hash`` beside ``kubernetes.io/config.source: file`` and
``kubernetes.io/config.seen`` (``pkg/kubelet/config/common.go`` ``applyDefaults``).

The API server knows nothing of a static pod. So that people can see it, the kubelet creates a
**mirror pod** for each (``pkg/kubelet/pod/mirror_client.go`` ``CreateMirrorPod``): a copy of the
static pod, annotated ``kubernetes.io/config.mirror: <hash>`` and owned by the kubelet's Node, and
writes the static pod's status to it. A mirror pod only reflects:

- deleting it stops nothing: the kubelet deletes it for good and creates a new one
  (``syncPod`` in pkg/kubelet/kubelet.go: a mirror pod being deleted, or of another hash, is replaced);
- its status follows the containers the kubelet runs from the file, across mirror pods.

In Kubelab the four programs are the lab's own, in-process: the store (``etcd``), the API server and
the scheduler and controller manager components (``runtime.py``). ``StaticPodRuns`` is what the lab
tells about them (each start and stop, and whether a stop was a crash): their containers' history, as
the container runtime would keep it, across restarts of the kubelet. ``StaticPods`` is the kubelet's
side: it keeps one mirror pod per manifest, with the status that history gives (a stopped scheduler's
container is not running and its pod not Ready; each start after a stop counts a restart, a crash
waits in ``CrashLoopBackOff``), and serves each container's log for ``kubectl logs``: upstream's
first lines of the program, then what the lab's program logs itself (``StaticPodRuns.logging_to``),
and its crash. The lab wakes the kubelet when a program starts or
stops (``Kubelet.host_processes_changed``): nothing polls.

Simplifications: the manifests are kubeadm's, trimmed (fewer flags and host-path volumes); a stop
held by a fault leaves the container ``terminated`` rather than restarted, since the lab, not this
kubelet, decides when the program runs again; no Events are recorded for static pods.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api.meta import Object, format_time, object_meta
from controlplane.client.errors import AlreadyExists, Conflict, NotFound
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.components.kubelet.lifecycle import (
    ContainerSnapshot,
    PodSnapshot,
    Running,
    Terminated,
    Waiting,
)
from controlplane.components.kubelet.logs import LogLine
from controlplane.components.kubelet.simulation import parse_image
from controlplane.components.kubelet.status import generate_pod_status

#: The node kubeadm's control plane runs on, and what ``kubeadm init`` marks it with
#: (``markcontrolplane.go``; the taint also goes in the kubelet's ``--register-with-taints``).
CONTROL_PLANE_NODE: Final = "control-plane"
CONTROL_PLANE_LABEL: Final = "node-role.kubernetes.io/control-plane"
EXCLUDE_FROM_LB_LABEL: Final = "node.kubernetes.io/exclude-from-external-load-balancers"
CONTROL_PLANE_TAINT: Final[Mapping[str, str]] = {"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"}

NAMESPACE: Final = "kube-system"
#: pkg/kubelet/types/pod_update.go.
CONFIG_MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
CONFIG_HASH_ANNOTATION: Final = "kubernetes.io/config.hash"
CONFIG_SEEN_ANNOTATION: Final = "kubernetes.io/config.seen"
CONFIG_SOURCE_ANNOTATION: Final = "kubernetes.io/config.source"
VERSION: Final = "v1.37.0"
ETCD_IMAGE: Final = "registry.k8s.io/etcd:3.6.5-0"
MANIFESTS_DIR: Final = "/etc/kubernetes/manifests"

#: The static pods, by the lab's diagram id of the program each stands for.
COMPONENTS: Final = {
    "etcd": "etcd",
    "apiserver": "kube-apiserver",
    "controller-manager": "kube-controller-manager",
    "scheduler": "kube-scheduler",
}


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """``kubetypes.IsMirrorPod``: the pod carries the ``kubernetes.io/config.mirror`` annotation."""
    annotations = object_meta(pod).get("annotations")
    return isinstance(annotations, Mapping) and CONFIG_MIRROR_ANNOTATION in annotations


# -- the manifests (pure) ----------------------------------------------------------------------------


def _probe(host: str, path: str, port: int, *, period: int, failures: int, delay: int = 10) -> Object:
    probe: Object = {
        "httpGet": {"host": host, "path": path, "port": port, "scheme": "HTTPS"},
        "periodSeconds": period,
        "timeoutSeconds": 15,
        "failureThreshold": failures,
    }
    if delay:
        probe["initialDelaySeconds"] = delay
    return probe


def _host_path(name: str, path: str, kind: str = "DirectoryOrCreate") -> Object:
    return {"name": name, "hostPath": {"path": path, "type": kind}}


def _manifest(
    name: str, image: str, command: list[str], cpu: str, volumes: list[tuple[str, str, bool]], probes: Object
) -> Object:
    """One manifest as kubeadm writes it (``staticpod.ComponentPod``): host network, system-node-critical."""
    container: Object = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "resources": {"requests": {"cpu": cpu}},
        **probes,
        "volumeMounts": [
            {"name": volume, "mountPath": path, **({"readOnly": True} if ro else {})}
            for volume, path, ro in volumes
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"component": name, "tier": "control-plane"},
        },
        "spec": {
            "containers": [container],
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [
                _host_path(volume, path, "Directory" if volume != "etcd-data" else "DirectoryOrCreate")
                for volume, path, _ in volumes
            ],
        },
    }


def kubeadm_manifests(advertise_address: str) -> list[Object]:
    """The four files of ``/etc/kubernetes/manifests`` (``etcd.yaml``, ``kube-apiserver.yaml``,
    ``kube-controller-manager.yaml``, ``kube-scheduler.yaml``), after kubeadm's
    ``phases/controlplane/manifests.go`` and ``phases/etcd/local.go``, with fewer flags."""
    ip = advertise_address
    pki = ("k8s-certs", "/etc/kubernetes/pki", True)
    ca_certs = ("ca-certs", "/etc/ssl/certs", True)
    etcd = _manifest(
        "etcd",
        ETCD_IMAGE,
        [
            "etcd",
            f"--advertise-client-urls=https://{ip}:2379",
            "--cert-file=/etc/kubernetes/pki/etcd/server.crt",
            "--client-cert-auth=true",
            "--data-dir=/var/lib/etcd",
            f"--initial-advertise-peer-urls=https://{ip}:2380",
            f"--initial-cluster={CONTROL_PLANE_NODE}=https://{ip}:2380",
            "--key-file=/etc/kubernetes/pki/etcd/server.key",
            f"--listen-client-urls=https://127.0.0.1:2379,https://{ip}:2379",
            "--listen-metrics-urls=http://127.0.0.1:2381",
            f"--listen-peer-urls=https://{ip}:2380",
            f"--name={CONTROL_PLANE_NODE}",
            "--snapshot-count=10000",
            "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
        ],
        "100m",
        [("etcd-certs", "/etc/kubernetes/pki/etcd", False), ("etcd-data", "/var/lib/etcd", False)],
        {},
    )
    etcd["metadata"]["annotations"] = {
        "kubeadm.kubernetes.io/etcd.advertise-client-urls": f"https://{ip}:2379"
    }
    apiserver = _manifest(
        "kube-apiserver",
        f"registry.k8s.io/kube-apiserver:{VERSION}",
        [
            "kube-apiserver",
            f"--advertise-address={ip}",
            "--allow-privileged=true",
            "--authorization-mode=Node,RBAC",
            "--client-ca-file=/etc/kubernetes/pki/ca.crt",
            "--enable-admission-plugins=NodeRestriction",
            "--enable-bootstrap-token-auth=true",
            "--etcd-servers=https://127.0.0.1:2379",
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
            "--secure-port=6443",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file=/etc/kubernetes/pki/sa.pub",
            "--service-account-signing-key-file=/etc/kubernetes/pki/sa.key",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
            "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
        ],
        "250m",
        [ca_certs, pki],
        {
            "livenessProbe": _probe(ip, "/livez", 6443, period=10, failures=8),
            "readinessProbe": _probe(ip, "/readyz", 6443, period=1, failures=3, delay=0),
            "startupProbe": _probe(ip, "/livez", 6443, period=10, failures=24),
        },
    )
    apiserver["metadata"]["annotations"] = {
        "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": f"{ip}:6443"
    }
    kubeconfig = ("kubeconfig", "/etc/kubernetes/{}.conf", True)
    controller_manager = _manifest(
        "kube-controller-manager",
        f"registry.k8s.io/kube-controller-manager:{VERSION}",
        [
            "kube-controller-manager",
            "--allocate-node-cidrs=true",
            "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--bind-address=127.0.0.1",
            "--client-ca-file=/etc/kubernetes/pki/ca.crt",
            "--cluster-cidr=10.244.0.0/14",
            "--cluster-name=kubernetes",
            "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
            "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
            "--controllers=*,bootstrapsigner,tokencleaner",
            "--kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--leader-elect=true",
            "--root-ca-file=/etc/kubernetes/pki/ca.crt",
            "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--use-service-account-credentials=true",
        ],
        "200m",
        [ca_certs, pki, (kubeconfig[0], kubeconfig[1].format("controller-manager"), True)],
        {
            "livenessProbe": _probe("127.0.0.1", "/healthz", 10257, period=10, failures=8),
            "startupProbe": _probe("127.0.0.1", "/healthz", 10257, period=10, failures=24),
        },
    )
    scheduler = _manifest(
        "kube-scheduler",
        f"registry.k8s.io/kube-scheduler:{VERSION}",
        [
            "kube-scheduler",
            "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--bind-address=127.0.0.1",
            "--kubeconfig=/etc/kubernetes/scheduler.conf",
            "--leader-elect=true",
        ],
        "100m",
        [(kubeconfig[0], kubeconfig[1].format("scheduler"), True)],
        {
            "livenessProbe": _probe("127.0.0.1", "/livez", 10259, period=10, failures=8),
            "readinessProbe": _probe("127.0.0.1", "/readyz", 10259, period=1, failures=3, delay=0),
            "startupProbe": _probe("127.0.0.1", "/livez", 10259, period=10, failures=24),
        },
    )
    # The file kind is kept for the hostPath of a kubeconfig.
    for manifest in (controller_manager, scheduler):
        for volume in manifest["spec"]["volumes"]:
            if volume["name"] == "kubeconfig":
                volume["hostPath"]["type"] = "FileOrCreate"
    return [etcd, apiserver, controller_manager, scheduler]


def config_hash(pod: Mapping[str, Any]) -> str:
    """The static pod's UID and ``kubernetes.io/config.hash``: a digest of the pod read from its file
    (upstream hashes the object with ``hash.DeepHashObject`` into an MD5; here its canonical JSON)."""
    return hashlib.md5(json.dumps(pod, sort_keys=True).encode(), usedforsecurity=False).hexdigest()


def static_pod(manifest: Mapping[str, Any], node: str, seen: float) -> Object:
    """``applyDefaults`` (pkg/kubelet/config/common.go): the pod a manifest file becomes on ``node``."""
    pod = copy.deepcopy(dict(manifest))
    meta = pod["metadata"]
    meta["name"] = f"{meta['name']}-{node}"
    pod["spec"]["nodeName"] = node
    # The static pod's UID is its hash, taken before the annotations that carry it are added.
    uid = config_hash(pod)
    meta["uid"] = uid
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        CONFIG_HASH_ANNOTATION: uid,
        CONFIG_SEEN_ANNOTATION: _seen(seen),
        CONFIG_SOURCE_ANNOTATION: "file",
    }
    # Static pods tolerate every NoExecute taint: no taint eviction takes the control plane away.
    pod["spec"]["tolerations"] = [{"operator": "Exists", "effect": "NoExecute"}]
    return pod


def _seen(at: float) -> str:
    """``config.seen``: Go's ``time.Time.String()`` in UTC, as the kubelet writes it."""
    whole = int(at)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((at - whole) * 1e9):09d}Z"


def mirror_pod(pod: Mapping[str, Any], node_uid: str) -> Object:
    """``CreateMirrorPod``: the static pod as the API sees it, owned by the Node (controller, no
    blockOwnerDeletion), annotated with its hash, without the static pod's own UID."""
    mirror = copy.deepcopy(dict(pod))
    meta = mirror["metadata"]
    meta.pop("uid", None)
    meta["annotations"][CONFIG_MIRROR_ANNOTATION] = meta["annotations"][CONFIG_HASH_ANNOTATION]
    meta["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": pod["spec"]["nodeName"],
            "uid": node_uid,
            "controller": True,
        }
    ]
    return mirror


# -- the programs' history (pure) -------------------------------------------------------------------


def klog(at: float, source: str, message: str, level: str = "I") -> LogLine:
    """One line as a Go program logging with klog prints it: ``I1202 13:00:00.000000       1 f.go:1] msg``."""
    whole = int(at)
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(whole)) + f".{int((at - whole) * 1e6):06d}"
    return LogLine(at, f"{level}{stamp}       1 {source}] {message}")


def startup_lines(program: str, at: float, address: str) -> list[LogLine]:
    """What each program prints as it starts, as upstream's first lines (what the lab's program logs
    itself follows, ``StaticPodRuns.logging_to``)."""
    if program == "etcd":

        def etcd(message: str, **fields: str) -> LogLine:
            entry = {
                "level": "info",
                "ts": format_time(at),
                "caller": "embed/etcd.go:311",
                "msg": message,
                **fields,
            }
            return LogLine(at, json.dumps(entry))

        return [
            etcd("starting an etcd server", **{"etcd-version": "3.6.5", "name": CONTROL_PLANE_NODE}),
            etcd("serving client traffic securely", address=f"{address}:2379"),
        ]
    if program == "kube-apiserver":
        return [
            klog(at, "options.go:249", f"external host was not specified, using {address}"),
            klog(at, "server.go:176", f'"Starting" version="{VERSION}"'),
            klog(at, "secure_serving.go:211", "Serving securely on [::]:6443"),
        ]
    name = "Kubernetes Scheduler" if program == "kube-scheduler" else "kube-controller-manager"
    port = 10259 if program == "kube-scheduler" else 10257
    return [
        klog(at, "serving.go:386", "Generated self-signed cert in-memory"),
        klog(at, "server.go:167", f'"Starting {name}" version="{VERSION}"'),
        klog(at, "secure_serving.go:211", f"Serving securely on 127.0.0.1:{port}"),
    ]


@dataclass
class Run:
    """One instance of a container: when it started, how it ended (None: it runs), what it printed."""

    started_at: float
    lines: list[LogLine]
    finished: Terminated | None = None


@dataclass
class ContainerRuns:
    """A static pod's container as the runtime knows it: its current instance and the one before."""

    program: str
    container_id_seed: str
    current: Run | None = None
    previous: Run | None = None
    restart_count: int = 0
    #: When the first instance started (the pod's ``startTime``).
    first_start: float | None = None
    #: After a crash, how long its kubelet waits to start it again (``go_duration``); None: at once.
    backoff: str | None = None

    @property
    def running(self) -> bool:
        return self.current is not None and self.current.finished is None

    def container_id(self, run: Run) -> str:
        seed = f"{self.container_id_seed}/{run.started_at!r}".encode()
        return "containerd://" + hashlib.sha256(seed).hexdigest()

    def started(self, at: float, address: str) -> None:
        if self.running:
            return
        if self.current is not None:
            self.previous = self.current
            self.restart_count += 1
        if self.first_start is None:
            self.first_start = at
        self.current = Run(at, startup_lines(self.program, at, address))

    def stopped(self, at: float, *, crashed: bool, backoff: str | None = None) -> None:
        """The program exited: gracefully (SIGTERM, exit 0) or killed by a crash (exit 1), after which
        the kubelet waits ``backoff`` to start it again (None: it starts it at once)."""
        if self.current is None or self.current.finished is not None:
            return
        self.backoff = backoff if crashed else None
        run = self.current
        if crashed:
            run.lines.append(klog(at, "run.go:72", "kubelab: simulated crash, exiting with code 1", "E"))
        code, reason = (1, "Error") if crashed else (0, "Completed")
        run.finished = Terminated(code, reason, run.started_at, at, container_id=self.container_id(run))

    def snapshot(self, image: str, pod_key: str) -> ContainerSnapshot:
        """The container's status: running and ready; or, once stopped, its last instance terminated
        (a crash waiting for its back-off is ``CrashLoopBackOff``, with the kubelet's message of
        ``doBackOff`` in pkg/kubelet/kuberuntime/kuberuntime_manager.go)."""
        current, image_id = self.current, parse_image(image).image_id
        last = self.previous.finished if self.previous is not None else None
        if current is None:
            state: Waiting | Running | Terminated = Waiting("ContainerCreating")
        elif current.finished is None:
            state = Running(current.started_at)
        elif current.finished.exit_code != 0 and self.backoff is not None:
            message = f"back-off {self.backoff} restarting failed container={self.program} pod={pod_key}"
            last, state = current.finished, Waiting("CrashLoopBackOff", message)
        else:
            state = current.finished
        return ContainerSnapshot(
            name=self.program,
            image=image,
            image_id=image_id if current is not None else "",
            container_id=self.container_id(current) if current is not None else "",
            state=state,
            last_state=last,
            ready=self.running,
            started=self.running,
            restart_count=self.restart_count,
        )

    def log(self, previous: bool) -> Run | None:
        """The instance ``kubectl logs`` reads (``--previous``: the one before, or the crashed one)."""
        if previous:
            if (
                self.current is not None
                and self.current.finished is not None
                and self.current.finished.exit_code
            ):
                return self.current
            return self.previous
        return self.current


class StaticPodRuns:
    """The lab's programs that the control-plane node's static pods stand for, as the container
    runtime of that node would know them: each start and stop, kept across kubelet restarts.

    ``Cluster`` makes one per start and tells it (``started``, ``stopped``); ``changed`` is called
    after each, so the kubelet can write the mirror pods' statuses anew.
    """

    def __init__(
        self, address: str, node: str = CONTROL_PLANE_NODE, *, now: Callable[[], float] = time.time
    ) -> None:
        self.address = address
        self.node = node
        self.now = now
        self.containers = {
            component: ContainerRuns(program, f"{node}/{program}")
            for component, program in COMPONENTS.items()
        }
        self.changed: Callable[[], None] = lambda: None

    def started(self, component: str, at: float) -> None:
        runs = self.containers.get(component)
        if runs is not None:
            runs.started(at, self.address)
            self.changed()

    def stopped(self, component: str, at: float, *, crashed: bool = False, reason: str = "") -> None:
        """``component`` stopped; ``reason`` is what the lab said of it (a crash loop names the back-off
        its kubelet waits: ``crashloop.crashed``)."""
        runs = self.containers.get(component)
        if runs is not None:
            found = _BACKOFF.search(reason)
            runs.stopped(at, crashed=crashed, backoff=found.group(1) if found else None)
            self.changed()

    @contextlib.contextmanager
    def logging_to(self, component: str) -> Iterator[None]:
        """What the program ``component`` logs while this context is entered, and in every task it
        starts meanwhile (they inherit the context), goes to its container's log: its stdout."""
        runs = self.containers.get(component)
        if runs is None:
            yield
            return
        _install_handler()
        token = _LOGGING_TO.set((runs, self.now, _LOGGERS.get(component, ())))
        try:
            yield
        finally:
            _LOGGING_TO.reset(token)


_BACKOFF: Final = re.compile(r"back-off (\S+) restarting")
#: The container whose log the running task's Python logging goes to (``StaticPodRuns.logging_to``).
_LOGGING_TO: ContextVar[tuple[ContainerRuns, Callable[[], float], tuple[str, ...]] | None] = ContextVar(
    "static_pod_logging_to", default=None
)
#: The loggers of each program's code: a request it sends is served in a task that inherits its
#: context (the in-process transport), and the API server's logging is not the scheduler's.
_LOGGERS: Final = {
    "scheduler": ("controlplane.components.scheduler", "controlplane.client"),
    "controller-manager": (
        "controlplane.components.controllermanager",
        "controlplane.components.controllers",
        "controlplane.client",
    ),
}
#: The most lines one instance keeps (a kubelet rotates container logs by size, 10Mi by default).
MAX_LOG_LINES: Final = 2000
_KLOG_LEVELS: Final = {"DEBUG": "I", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "F"}


class _ContainerLogHandler(logging.Handler):
    """Appends a record to the log of the container its task logs to, as klog would print it."""

    def emit(self, record: logging.LogRecord) -> None:
        target = _LOGGING_TO.get()
        if target is None:
            return
        runs, now, loggers = target
        if not record.name.startswith(loggers):
            return
        run = runs.current
        if run is None or run.finished is not None:
            return
        level = _KLOG_LEVELS.get(record.levelname, "I")
        run.lines.append(klog(now(), f"{record.filename}:{record.lineno}", record.getMessage(), level))
        del run.lines[:-MAX_LOG_LINES]


_HANDLER = _ContainerLogHandler()


def _install_handler() -> None:
    root = logging.getLogger("controlplane")
    if _HANDLER not in root.handlers:
        root.addHandler(_HANDLER)


# -- the control-plane node ------------------------------------------------------------------------


#: The control-plane node's pod CIDR: the first of the cluster CIDR, as node IPAM gives the first node.
CONTROL_PLANE_POD_CIDR: Final = "10.244.0.0/24"


def control_plane_kubelet_options(runs: StaticPodRuns, *, seen: float) -> dict[str, Any]:
    """The options of the control-plane node's kubelet (``Kubelet``), as kubeadm configures it: the
    API server's advertise address as its InternalIP, the control-plane taint at registration
    (``--register-with-taints``), the label a kubelet may give itself, and its static pods."""
    return {
        "internal_ip": runs.address,
        "pod_cidr": CONTROL_PLANE_POD_CIDR,
        "labels": {EXCLUDE_FROM_LB_LABEL: ""},
        "register_with_taints": [dict(CONTROL_PLANE_TAINT)],
        "static_pods": StaticPods(runs, kubeadm_manifests(runs.address), seen=seen),
    }


def mark_control_plane_patch(node: Mapping[str, Any]) -> Object | None:
    """``kubeadm init phase mark-control-plane`` (``markcontrolplane.go``): the labels a kubelet may
    not give itself (NodeRestriction refuses ``node-role.kubernetes.io/*``), and the taint, as a
    patch of the Node; None when it is marked already."""
    labels: Mapping[str, Any] = object_meta(node).get("labels") or {}
    taints = list((node.get("spec") or {}).get("taints") or [])
    patch: Object = {}
    if CONTROL_PLANE_LABEL not in labels or EXCLUDE_FROM_LB_LABEL not in labels:
        patch["metadata"] = {"labels": {CONTROL_PLANE_LABEL: "", EXCLUDE_FROM_LB_LABEL: ""}}
    if not any(t.get("key") == CONTROL_PLANE_LABEL and t.get("effect") == "NoSchedule" for t in taints):
        patch["spec"] = {"taints": [*taints, dict(CONTROL_PLANE_TAINT)]}
    return patch or None


# -- the kubelet's side (the adapter) ----------------------------------------------------------------


@dataclass
class Mirror:
    """What the kubelet keeps for one static pod: the pod and the status it last wrote to its mirror."""

    pod: Object
    runs: ContainerRuns
    written: Object | None = field(default=None)
    written_for: str = ""


#: The status fields the kubelet writes to a mirror pod (as ``_OWNED_POD_STATUS`` in kubelet.py).
_STATUS_FIELDS = (
    "phase",
    "conditions",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "containerStatuses",
)


class StaticPods:
    """The static pods of one kubelet and their mirror pods (see the module's docstring)."""

    def __init__(self, runs: StaticPodRuns, manifests: Iterable[Mapping[str, Any]], *, seen: float) -> None:
        self.runs = runs
        self.mirrors: dict[str, Mirror] = {}
        for manifest, component in zip(manifests, COMPONENTS, strict=True):
            pod = static_pod(manifest, runs.node, seen)
            self.mirrors[str(pod["metadata"]["name"])] = Mirror(pod, runs.containers[component])

    def container_log(self, namespace: str, name: str) -> ContainerRuns | None:
        """The container of the static pod ``namespace/name`` (its only one), for ``kubectl logs``."""
        mirror = self.mirrors.get(name)
        return mirror.runs if mirror is not None and namespace == NAMESPACE else None

    def status(self, mirror: Mirror, current: Mapping[str, Any], now: float, host_ip: str) -> Object:
        """The static pod's status (``generate_pod_status``) from its container's history."""
        pod = mirror.pod
        meta = pod["metadata"]
        pod_key = f"{meta['name']}_{NAMESPACE}({meta['uid']})"
        container = pod["spec"]["containers"][0]
        snapshot = PodSnapshot((), (mirror.runs.snapshot(container["image"], pod_key),), True, False, False)
        status = generate_pod_status(
            {**pod, "status": dict(current)}, snapshot, now=now, host_ip=host_ip, pod_ips=(host_ip,)
        )
        if mirror.runs.first_start is not None:
            status["startTime"] = format_time(mirror.runs.first_start)
        return {k: status[k] for k in _STATUS_FIELDS if k in status}

    async def sync(
        self,
        pods: ResourceClient,
        found: Sequence[Mapping[str, Any]],
        node_uid: str,
        now: float,
        host_ip: str,
    ) -> None:
        """``syncPod`` for each static pod: replace a mirror pod that is being deleted or of another
        hash, create a missing one, write its status when it changed; delete orphaned mirror pods."""
        by_name = {
            str(object_meta(p).get("name")): p for p in found if object_meta(p).get("namespace") == NAMESPACE
        }
        for pod in found:
            meta = object_meta(pod)
            if meta.get("namespace") != NAMESPACE or meta.get("name") not in self.mirrors:
                await _delete(pods, pod)  # HandlePodCleanups: a mirror pod without a static pod
        for name, mirror in self.mirrors.items():
            existing = by_name.get(name)
            wanted_hash = mirror.pod["metadata"]["uid"]
            if existing is not None:
                meta = object_meta(existing)
                annotations = meta.get("annotations") or {}
                if meta.get("deletionTimestamp") or annotations.get(CONFIG_MIRROR_ANNOTATION) != wanted_hash:
                    await _delete(pods, existing)  # "Deleting mirror pod because it is outdated"
                    existing = None
            if existing is None:
                if not node_uid:
                    continue
                try:
                    existing = await pods.create(mirror_pod(mirror.pod, node_uid))
                except (AlreadyExists, Conflict):
                    continue  # the old one is still going: the next sync creates it
                mirror.written, mirror.written_for = None, ""
            await self._write_status(pods, mirror, existing, now, host_ip)

    async def _write_status(
        self, pods: ResourceClient, mirror: Mirror, existing: Mapping[str, Any], now: float, host_ip: str
    ) -> None:
        meta = object_meta(existing)
        uid = str(meta.get("uid"))
        current: Mapping[str, Any] = existing.get("status") or {}
        base = mirror.written if mirror.written_for == uid and mirror.written is not None else current
        status = self.status(mirror, base, now, host_ip)
        reference = (
            mirror.written
            if mirror.written_for == uid
            else {k: current[k] for k in _STATUS_FIELDS if k in current}
        )
        if _comparable(status) == _comparable(reference or {}):
            mirror.written, mirror.written_for = status, uid
            return
        try:
            await pods.patch(
                str(meta.get("name")), {"status": status}, patch_type=PatchType.MERGE, subresource="status"
            )
        except NotFound:
            return  # deleted meanwhile: the next sync makes a new one
        mirror.written, mirror.written_for = status, uid


def _comparable(value: Any) -> Any:
    """``value`` without its null fields, as the API server stores it."""
    if isinstance(value, Mapping):
        return {k: _comparable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


async def _delete(pods: ResourceClient, pod: Mapping[str, Any]) -> None:
    """``DeleteMirrorPod``: for good (grace 0), only this very pod (its uid)."""
    meta = object_meta(pod)
    with contextlib.suppress(NotFound, Conflict):
        await pods.delete(
            str(meta.get("name")), grace_period_seconds=0, preconditions={"uid": str(meta.get("uid"))}
        )


__all__ = [
    "COMPONENTS",
    "CONFIG_HASH_ANNOTATION",
    "CONFIG_MIRROR_ANNOTATION",
    "CONFIG_SEEN_ANNOTATION",
    "CONFIG_SOURCE_ANNOTATION",
    "CONTROL_PLANE_LABEL",
    "CONTROL_PLANE_NODE",
    "CONTROL_PLANE_TAINT",
    "EXCLUDE_FROM_LB_LABEL",
    "ContainerRuns",
    "StaticPodRuns",
    "StaticPods",
    "control_plane_kubelet_options",
    "is_mirror_pod",
    "klog",
    "kubeadm_manifests",
    "mark_control_plane_patch",
    "mirror_pod",
    "static_pod",
]
