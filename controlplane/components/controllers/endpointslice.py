"""The EndpointSlice controller: a Service's endpoints, in slices of at most 100.

One Endpoints object per Service does not scale: a Service with 5,000 pods has one huge object, and
every pod that becomes ready rewrites all of it and sends all of it to every kube-proxy. EndpointSlices
(``discovery.k8s.io/v1``) cut it up. Each slice of a Service

- is named ``<service>-<random>`` (``generateName``), labelled ``kubernetes.io/service-name: <service>``
  and ``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``, and owned by the
  Service (an ``ownerReference``, so the garbage collector deletes it with the Service);
- holds one set of ``ports`` and up to ``max_endpoints_per_slice`` (100) ``endpoints``, each with its
  ``addresses``, ``conditions`` (``ready``, ``serving``, ``terminating``), ``nodeName``, ``zone`` and
  ``targetRef``. Unlike Endpoints, terminating pods stay, with ``terminating: true`` and ``ready:
  false``, so kube-proxy can let their connections drain.

Reconciling a Service (``reconciler.go``, simplified): compute the desired endpoints grouped by port
set; go through the existing slices, keeping endpoints that are still wanted (updated in place when
they changed) and dropping the others; put the new endpoints first into slices being updated anyway,
then into slices with room, and only then into new slices; delete slices left empty and slices of port
sets no longer wanted. A Service with no endpoints keeps one empty *placeholder* slice. Fewer, smaller
writes is the point: kube-proxy on every node receives each one.

Our own writes reach the informer cache a little later. Acting on a cache that does not yet show them
would create a second slice for the same endpoints, so the controller remembers the resourceVersion
of every slice it wrote (``EndpointSliceTracker``) and, while the cache is older, waits for it.

Upstream: ``pkg/controller/endpointslice/endpointslice_controller.go``,
``staging/src/k8s.io/endpointslice/reconciler.go``, ``.../utils.go``, ``.../endpointslice_tracker.go``.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api.meta import Object, format_time
from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.errors import NotFound
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.components.controllers.endpointutil import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    TriggerTimeTracker,
    find_port,
    is_headless,
    is_pod_ready,
    is_pod_terminating,
    pod_ip,
    pod_to_services,
    pods_for_service,
    service_selector,
    should_pod_be_in_endpoints,
    should_set_hostname,
    target_ref,
)
from controlplane.components.controllers.kinds import ENDPOINT_SLICES, NODES, PODS, SERVICES

logger = logging.getLogger(__name__)


NAME: Final = "endpointslice-controller"
LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
LABEL_MANAGED_BY: Final = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME: Final = "endpointslice-controller.k8s.io"
LABEL_ZONE: Final = "topology.kubernetes.io/zone"
#: ``--max-endpoints-per-slice`` default.
DEFAULT_MAX_ENDPOINTS_PER_SLICE: Final = 100


# -- pure: desired endpoints -----------------------------------------------------------------------


def pod_to_endpoint(
    pod: Mapping[str, Any], service: Mapping[str, Any], node: Mapping[str, Any] | None
) -> Object:
    """One pod as an EndpointSlice endpoint (``podToEndpoint``).

    serving = ready (or ``publishNotReadyAddresses``); terminating = being deleted; ready = serving
    and not terminating ("for compatibility, ready is never true while terminating").
    """
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    serving = publish or is_pod_ready(pod)
    terminating = is_pod_terminating(pod)
    ready = publish or (serving and not terminating)
    endpoint: Object = {
        "addresses": [pod_ip(pod)],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
    }
    if should_set_hostname(pod, service):
        endpoint["hostname"] = pod["spec"]["hostname"]
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        endpoint["nodeName"] = node_name
    zone = ((node or {}).get("metadata") or {}).get("labels", {}).get(LABEL_ZONE) if node else None
    if zone:
        endpoint["zone"] = zone
    endpoint["targetRef"] = target_ref(pod)
    return endpoint


def endpoint_ports(pod: Mapping[str, Any], service: Mapping[str, Any]) -> list[Object]:
    """The pod's ports for the Service's ports (``getEndpointPorts``); ports it lacks are left out."""
    ports: list[Object] = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: Object = {
            "name": service_port.get("name") or "",
            "port": number,
            "protocol": service_port.get("protocol") or "TCP",
        }
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


PortsKey = tuple[tuple[str, int, str, str], ...]


def ports_key(ports: Iterable[Mapping[str, Any]] | None) -> PortsKey:
    """A port set, order-insensitive: slices are grouped by it (``endpointMeta``)."""
    return tuple(
        sorted(
            (
                str(p.get("name") or ""),
                int(p.get("port") or 0),
                str(p.get("protocol") or "TCP"),
                str(p.get("appProtocol") or ""),
            )
            for p in ports or []
        )
    )


@dataclass
class DesiredPorts:
    """The endpoints that serve one port set."""

    ports: list[Object]
    endpoints: dict[str, Object] = field(default_factory=dict)


def desired_endpoints(
    service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], nodes: Mapping[str, Mapping[str, Any]]
) -> dict[PortsKey, DesiredPorts]:
    """What the Service's slices should hold: endpoints by port set, each keyed by its address."""
    desired: dict[PortsKey, DesiredPorts] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, include_terminating=True):
            continue
        ports = endpoint_ports(pod, service)
        if not ports and (service.get("spec") or {}).get("ports"):
            continue  # serves none of the Service's ports
        node = nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        endpoint = pod_to_endpoint(pod, service, node)
        group = desired.setdefault(ports_key(ports), DesiredPorts(ports))
        group.endpoints[endpoint_key(endpoint)] = endpoint
    return desired


def endpoint_key(endpoint: Mapping[str, Any]) -> str:
    """An endpoint's identity within a Service: its (first) address."""
    addresses = endpoint.get("addresses") or [""]
    return str(addresses[0])


def _comparable(endpoint: Mapping[str, Any]) -> Object:
    """An endpoint without what does not matter for equality (``endpointsEqualBeyondHash``)."""
    cleaned = copy.deepcopy(dict(endpoint))
    (cleaned.get("targetRef") or {}).pop("resourceVersion", None)
    return {k: v for k, v in cleaned.items() if v is not None}


# -- pure: the plan --------------------------------------------------------------------------------


@dataclass
class SlicePlan:
    """The writes that bring a Service's slices to the desired state."""

    create: list[Object] = field(default_factory=list)
    update: list[Object] = field(default_factory=list)
    delete: list[Object] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete)


def slice_labels(service: Mapping[str, Any]) -> dict[str, str]:
    """The Service's labels, then the reserved ones (``setEndpointSliceLabels``)."""
    meta = service.get("metadata") or {}
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if k not in (LABEL_SERVICE_NAME, LABEL_MANAGED_BY, HEADLESS_LABEL)
    }
    labels[LABEL_SERVICE_NAME] = str(meta.get("name"))
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    if is_headless(service):
        labels[HEADLESS_LABEL] = ""
    return labels


def owner_reference(service: Mapping[str, Any]) -> Object:
    meta = service.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def slice_prefix(service_name: str) -> str:
    """``<service>-``, or ``endpointslice-`` when that would not make a valid name."""
    prefix = f"{service_name}-"
    return prefix if len(prefix) <= 253 - 5 else "endpointslice-"


def new_slice(service: Mapping[str, Any], ports: list[Object], endpoints: list[Object]) -> Object:
    meta = service.get("metadata") or {}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": slice_prefix(str(meta.get("name"))),
            "namespace": meta.get("namespace"),
            "labels": slice_labels(service),
            "ownerReferences": [owner_reference(service)],
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": copy.deepcopy(ports),
    }


def _is_placeholder(slice_: Mapping[str, Any]) -> bool:
    return not slice_.get("endpoints") and not slice_.get("ports")


def plan_slices(
    service: Mapping[str, Any],
    desired: Mapping[PortsKey, DesiredPorts],
    existing: Iterable[Mapping[str, Any]],
    *,
    max_endpoints_per_slice: int = DEFAULT_MAX_ENDPOINTS_PER_SLICE,
) -> SlicePlan:
    """Creates, updates and deletes turning ``existing`` slices into ``desired`` (``reconcileByAddressType``).

    Objects in the plan are new dicts (the cached ones are not touched); updates keep their
    ``metadata.resourceVersion`` so that a concurrent change makes them fail rather than be lost.
    """
    plan = SlicePlan()
    labels = slice_labels(service)
    owner = owner_reference(service)
    kept: list[Object] = []  # slices that stay (updated or not)
    by_key: dict[PortsKey, list[Mapping[str, Any]]] = {}
    for slice_ in existing:
        by_key.setdefault(ports_key(slice_.get("ports")), []).append(slice_)

    for key, group in desired.items():
        wanted = group.endpoints
        placed: set[str] = set()
        updating: list[Object] = []
        unchanged: list[Object] = []
        for slice_ in by_key.pop(key, []):
            endpoints: list[Object] = []
            changed = False
            for endpoint in slice_.get("endpoints") or []:
                ep_key = endpoint_key(endpoint)
                if ep_key in wanted and ep_key not in placed:
                    placed.add(ep_key)
                    endpoints.append(copy.deepcopy(wanted[ep_key]))
                    changed = changed or _comparable(endpoint) != _comparable(wanted[ep_key])
                else:
                    changed = True
            if not endpoints:
                plan.delete.append(dict(slice_))
                continue
            candidate = copy.deepcopy(dict(slice_))
            candidate["endpoints"] = endpoints
            meta = candidate.setdefault("metadata", {})
            if meta.get("labels") != labels or meta.get("ownerReferences") != [owner]:
                meta["labels"], meta["ownerReferences"], changed = dict(labels), [owner], True
            (updating if changed else unchanged).append(candidate)
        remaining = [copy.deepcopy(ep) for k, ep in wanted.items() if k not in placed]
        # New endpoints go first where a write happens anyway, then where there is room.
        for candidate in updating + sorted(unchanged, key=lambda s: -len(s["endpoints"])):
            room = max_endpoints_per_slice - len(candidate["endpoints"])
            if not remaining or room <= 0:
                continue
            candidate["endpoints"].extend(remaining[:room])
            remaining = remaining[room:]
            if candidate in unchanged:
                unchanged.remove(candidate)
                updating.append(candidate)
        while remaining:
            plan.create.append(new_slice(service, group.ports, remaining[:max_endpoints_per_slice]))
            remaining = remaining[max_endpoints_per_slice:]
        plan.update.extend(updating)
        kept.extend(updating + unchanged)

    # Port sets no longer served: their slices go.
    for group_slices in by_key.values():
        plan.delete.extend(dict(s) for s in group_slices)

    # A Service always has at least one slice: an empty placeholder when it has no endpoints.
    if not kept and not plan.create:
        placeholder = next((s for s in plan.delete if _is_placeholder(s)), None)
        if placeholder is not None:
            plan.delete.remove(placeholder)
            meta = placeholder.get("metadata") or {}
            if meta.get("labels") != labels or meta.get("ownerReferences") != [owner]:
                updated = copy.deepcopy(placeholder)
                updated["metadata"]["labels"], updated["metadata"]["ownerReferences"] = dict(labels), [owner]
                plan.update.append(updated)
        else:
            plan.create.append(new_slice(service, [], []))
    return plan


def annotate_trigger_time(plan: SlicePlan, trigger_time: float) -> None:
    """Stamp ``last-change-trigger-time`` on every slice written (or clear it)."""
    for slice_ in plan.create + plan.update:
        annotations = dict(slice_["metadata"].get("annotations") or {})
        if trigger_time:
            annotations[LAST_CHANGE_TRIGGER_TIME] = format_time(trigger_time)
        else:
            annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
        if annotations:
            slice_["metadata"]["annotations"] = annotations
        else:
            slice_["metadata"].pop("annotations", None)


# -- the tracker of our own writes ---------------------------------------------------------------


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


@dataclass
class EndpointSliceTracker:
    """The resourceVersions this controller wrote, per Service, until the cache shows them.

    A slice expected at resourceVersion N is stale in the cache while the cache holds an older one
    (or none); a slice the controller deleted is stale while the cache still holds it.
    """

    expected: dict[str, dict[str, int | None]] = field(default_factory=dict)

    def wrote(self, service_key: str, slice_: Mapping[str, Any]) -> None:
        self.expected.setdefault(service_key, {})[str(slice_["metadata"]["name"])] = _rv(slice_)

    def deleted(self, service_key: str, name: str) -> None:
        self.expected.setdefault(service_key, {})[name] = None

    def forget(self, service_key: str, name: str | None = None) -> None:
        if name is None:
            self.expected.pop(service_key, None)
        else:
            self.expected.get(service_key, {}).pop(name, None)

    def stale(self, service_key: str, cached: Iterable[Mapping[str, Any]]) -> bool:
        """Is the cache behind our writes? Expectations it has caught up with are dropped."""
        expectations = self.expected.get(service_key)
        if not expectations:
            return False
        by_name = {str(s["metadata"]["name"]): s for s in cached}
        stale = False
        for name, rv in list(expectations.items()):
            seen = by_name.get(name)
            behind = seen is not None if rv is None else (seen is None or _rv(seen) < rv)
            if behind:
                stale = True
            else:
                del expectations[name]
        return stale


# -- the controller -----------------------------------------------------------------------------


def slice_to_service(slice_: Mapping[str, Any]) -> list[Request]:
    """A slice this controller manages reconciles its Service."""
    meta = slice_.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(LABEL_MANAGED_BY) != CONTROLLER_NAME or not labels.get(LABEL_SERVICE_NAME):
        return []
    return [Request(str(meta.get("namespace") or ""), str(labels[LABEL_SERVICE_NAME]))]


class EndpointSliceController:
    """The reconciler: one Service's EndpointSlices per call (``syncService``)."""

    def __init__(
        self, manager: Manager, *, max_endpoints_per_slice: int = DEFAULT_MAX_ENDPOINTS_PER_SLICE
    ) -> None:
        if max_endpoints_per_slice < 1:
            raise ValueError("max_endpoints_per_slice must be at least 1")
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.services = manager.informer_for(SERVICES)
        self.slices = manager.informer_for(ENDPOINT_SLICES)
        self.pods = manager.informer_for(PODS)
        self.nodes = manager.informer_for(NODES)
        self.triggers = TriggerTimeTracker()
        self.tracker = EndpointSliceTracker()
        self._api = manager.client.resource(
            ENDPOINT_SLICES.group, ENDPOINT_SLICES.version, ENDPOINT_SLICES.plural
        )

    def managed_slices(self, namespace: str, service_name: str) -> list[Object]:
        return [
            s
            for s in self.slices.indexer.by_index("namespace", namespace)
            if slice_to_service(s) == [Request(namespace, service_name)]
        ]

    async def reconcile(self, request: Request) -> Result:
        service = self.services.indexer.get_by_key(request.key)
        if service is None:
            # The garbage collector deletes the slices with their owner.
            self.triggers.delete(request.namespace, request.name)
            self.tracker.forget(request.key)
            return Result()
        if service_selector(service) is None or (service.get("spec") or {}).get("type") == "ExternalName":
            return Result()
        existing = self.managed_slices(request.namespace, request.name)
        if self.tracker.stale(request.key, existing):
            # "EndpointSlice informer cache is out of date": wait for our own writes to show.
            return Result(requeue=True)
        pods = pods_for_service(self.pods.indexer, service)
        nodes = {str(n["metadata"]["name"]): n for n in self.nodes.indexer.list()}
        desired = desired_endpoints(service, pods, nodes)
        plan = plan_slices(service, desired, existing, max_endpoints_per_slice=self.max_endpoints_per_slice)
        trigger_time = self.triggers.compute(service, pods)
        if not plan:
            return Result()
        annotate_trigger_time(plan, trigger_time)
        api = self._api.in_namespace(request.namespace)
        for slice_ in plan.create:
            created = await api.create(slice_)
            self.tracker.wrote(request.key, created)
        for slice_ in plan.update:
            updated = await api.update(slice_)
            self.tracker.wrote(request.key, updated)
        for slice_ in plan.delete:
            name = str(slice_["metadata"]["name"])
            with contextlib.suppress(NotFound):
                await api.delete(name)
            self.tracker.deleted(request.key, name)
        return Result()


def add_to_manager(
    manager: Manager, *, max_endpoints_per_slice: int = DEFAULT_MAX_ENDPOINTS_PER_SLICE, workers: int = 1
) -> Controller:
    """Build the EndpointSlice controller: for Services, woken by their pods and their slices."""
    reconciler = EndpointSliceController(manager, max_endpoints_per_slice=max_endpoints_per_slice)
    controller = manager.new_controller(NAME, reconciler, for_=SERVICES, workers=workers)
    controller.watch(reconciler.pods, pod_to_services(reconciler.services.indexer))
    controller.watch(reconciler.slices, slice_to_service)

    def on_slice_deleted(obj: Object | DeletedFinalStateUnknown) -> None:
        # A slice deleted by anyone is no longer expected anywhere (``EndpointSliceTracker.Delete``).
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj or {}
        for request in slice_to_service(obj):
            reconciler.tracker.forget(request.key, str(obj["metadata"]["name"]))

    reconciler.slices.add_event_handler(ResourceEventHandlerFuncs(delete_func=on_slice_deleted))
    return controller


__all__ = [
    "CONTROLLER_NAME",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "NAME",
    "DesiredPorts",
    "EndpointSliceController",
    "EndpointSliceTracker",
    "SlicePlan",
    "add_to_manager",
    "desired_endpoints",
    "endpoint_ports",
    "plan_slices",
    "pod_to_endpoint",
    "ports_key",
    "slice_labels",
    "slice_to_service",
]
