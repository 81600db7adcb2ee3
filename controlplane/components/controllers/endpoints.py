"""The endpoints controller: for every Service with a selector, an Endpoints object listing its pods.

``Endpoints`` is the original (v1) answer to "where do I send traffic for this Service?": one object,
named like the Service, holding **subsets**. A subset is a set of addresses that all serve the same
set of ports::

    subsets:
    - addresses:         [{ip: 10.244.1.5, nodeName: n1, targetRef: {kind: Pod, name: web-a, ...}}]
      notReadyAddresses: [{ip: 10.244.2.7, nodeName: n2, targetRef: {kind: Pod, name: web-b, ...}}]
      ports:             [{name: http, port: 8080, protocol: TCP}]

Ready pods go in ``addresses``, pods that are not (yet) ready in ``notReadyAddresses`` (all in
``addresses`` if the Service sets ``publishNotReadyAddresses``). Pods without an IP, finished pods and
terminating pods are left out (``endpointutil``). Each Service port maps to the pod's port through
``targetPort``; pods that serve different port numbers end up in different subsets ("repacking").

The controller reconciles one Service at a time, woken by changes to the Service, to any pod it
selects (before or after the change), and by the deletion of its Endpoints (which it recreates).
Services **without** a selector are left alone: their Endpoints are the user's to write. When a
Service is deleted, its Endpoints go too. The Endpoints carry the Service's labels (plus
``service.kubernetes.io/headless`` for a headless Service) and the annotation
``endpoints.kubernetes.io/last-change-trigger-time``.

kube-proxy reads EndpointSlices nowadays (``endpointslice.py``); Endpoints remain for older clients
and for ``kubectl get endpoints``, which is why both controllers exist, as upstream.

Upstream: ``pkg/controller/endpoint/endpoints_controller.go`` (``syncService``, ``addEndpointSubset``),
``pkg/api/v1/endpoints/util.go`` (``RepackSubsets``).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object, format_time
from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.errors import APIError, NotFound
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_WARNING
from controlplane.components.controllers.endpointutil import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    TriggerTimeTracker,
    find_port,
    is_headless,
    is_pod_ready,
    pod_ip,
    pod_to_services,
    pods_for_service,
    service_selector,
    should_pod_be_in_endpoints,
    should_set_hostname,
    target_ref,
)
from controlplane.components.controllers.kinds import ENDPOINTS, PODS, SERVICES

logger = logging.getLogger(__name__)


NAME: Final = "endpoints-controller"
EVENT_SOURCE: Final = "endpoint-controller"


# -- pure: the subsets ---------------------------------------------------------------------------


def endpoint_address(pod: Mapping[str, Any], service: Mapping[str, Any]) -> Object:
    """The pod as an ``EndpointAddress`` of the Service."""
    address: Object = {"ip": pod_ip(pod)}
    if should_set_hostname(pod, service):
        address["hostname"] = pod["spec"]["hostname"]
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        address["nodeName"] = node_name
    address["targetRef"] = target_ref(pod)
    return address


def endpoint_port(service_port: Mapping[str, Any], number: int) -> Object:
    """A Service port with the pod's port number (``endpointPortFromServicePort``)."""
    port: Object = {}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    port["port"] = number
    port["protocol"] = service_port.get("protocol") or "TCP"
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def _port_key(port: Mapping[str, Any] | None) -> tuple[str, int, str, str]:
    if port is None:
        return ("", -1, "", "")
    return (
        str(port.get("name", "")),
        int(port["port"]),
        str(port["protocol"]),
        str(port.get("appProtocol", "")),
    )


def _address_key(address: Mapping[str, Any]) -> tuple[str, str]:
    return (str(address["ip"]), str((address.get("targetRef") or {}).get("uid", "")))


def compute_subsets(service: Mapping[str, Any], pods: list[Object]) -> tuple[list[Object], int, int]:
    """The Service's subsets from its pods, repacked; and how many ready and not-ready addresses.

    Every (pod, port) pair is one entry; then ``RepackSubsets``: addresses are grouped by the exact
    set of ports they serve, so each subset is "these addresses, on these ports", sorted by IP.
    """
    spec = service.get("spec") or {}
    tolerate_unready = bool(spec.get("publishNotReadyAddresses"))
    ports = spec.get("ports") or []
    # port -> address key -> (address, ready)
    by_port: dict[tuple[str, int, str, str], dict[tuple[str, str], tuple[Object, bool]]] = {}
    port_objects: dict[tuple[str, int, str, str], Object | None] = {}
    ready_count = not_ready_count = 0
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, include_terminating=tolerate_unready):
            continue
        address = endpoint_address(pod, service)
        ready = tolerate_unready or is_pod_ready(pod)
        entries: list[Object | None] = []
        if not ports:
            if is_headless(service):  # a headless Service may have no ports
                entries.append(None)
        else:
            for service_port in ports:
                number = find_port(pod, service_port)
                if number is not None:
                    entries.append(endpoint_port(service_port, number))
        for port in entries:
            key = _port_key(port)
            port_objects[key] = port
            by_port.setdefault(key, {})[_address_key(address)] = (address, ready)
            if ready:
                ready_count += 1
            else:
                not_ready_count += 1
    # Group the ports by the (identical) sets of addresses serving them.
    groups: dict[tuple[tuple[tuple[str, str], bool], ...], list[tuple[str, int, str, str]]] = {}
    addresses_of: dict[
        tuple[tuple[tuple[str, str], bool], ...], dict[tuple[str, str], tuple[Object, bool]]
    ] = {}
    for port_key in sorted(by_port):
        members = by_port[port_key]
        signature = tuple(sorted((k, r) for k, (_, r) in members.items()))
        groups.setdefault(signature, []).append(port_key)
        addresses_of[signature] = members
    subsets: list[Object] = []
    for signature, port_keys in groups.items():
        members = addresses_of[signature]
        ordered = [members[k] for k in sorted(members)]
        subset: Object = {}
        ready_addresses = [copy.deepcopy(a) for a, r in ordered if r]
        not_ready_addresses = [copy.deepcopy(a) for a, r in ordered if not r]
        if ready_addresses:
            subset["addresses"] = ready_addresses
        if not_ready_addresses:
            subset["notReadyAddresses"] = not_ready_addresses
        subset_ports = [port_objects[k] for k in port_keys if port_objects[k] is not None]
        if subset_ports:
            subset["ports"] = subset_ports
        subsets.append(subset)
    subsets.sort(
        key=lambda s: [_address_key(a) for a in s.get("addresses", []) + s.get("notReadyAddresses", [])]
    )
    return subsets, ready_count, not_ready_count


def _without_resource_versions(subsets: Any) -> Any:
    """Subsets compared as upstream's ``EndpointSubsetsEqualIgnoreResourceVersion`` does."""
    cleaned = copy.deepcopy(subsets or [])
    for subset in cleaned:
        for field in ("addresses", "notReadyAddresses"):
            for address in subset.get(field) or []:
                (address.get("targetRef") or {}).pop("resourceVersion", None)
        for port in subset.get("ports") or []:
            port.setdefault("protocol", "TCP")
    return cleaned


def desired_labels(service: Mapping[str, Any]) -> dict[str, str]:
    """The Service's labels, plus ``service.kubernetes.io/headless`` for a headless Service."""
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    labels.pop(HEADLESS_LABEL, None)
    if is_headless(service):
        labels[HEADLESS_LABEL] = ""
    return labels


def endpoints_up_to_date(
    current: Mapping[str, Any], service: Mapping[str, Any], subsets: list[Object]
) -> bool:
    """Nothing to write: same subsets and the Service's labels (upstream ignores the headless label)."""
    labels = dict((current.get("metadata") or {}).get("labels") or {})
    labels.pop(HEADLESS_LABEL, None)
    service_labels = dict((service.get("metadata") or {}).get("labels") or {})
    return (
        _without_resource_versions(current.get("subsets")) == _without_resource_versions(subsets)
        and labels == service_labels
    )


# -- the controller -----------------------------------------------------------------------------


class EndpointsController:
    """The reconciler: one Service's Endpoints per call (``syncService``)."""

    def __init__(self, manager: Manager) -> None:
        self.services = manager.informer_for(SERVICES)
        self.endpoints = manager.informer_for(ENDPOINTS)
        self.pods = manager.informer_for(PODS)
        self.recorder = manager.event_recorder(EVENT_SOURCE)
        self.triggers = TriggerTimeTracker()
        self._api = manager.client.resource(ENDPOINTS.group, ENDPOINTS.version, ENDPOINTS.plural)

    async def reconcile(self, request: Request) -> Result:
        service = self.services.indexer.get_by_key(request.key)
        api = self._api.in_namespace(request.namespace)
        if service is None:
            # The Service is gone: so are its Endpoints.
            with contextlib.suppress(NotFound):
                await api.delete(request.name)
            self.triggers.delete(request.namespace, request.name)
            return Result()
        if service_selector(service) is None or (service.get("spec") or {}).get("type") == "ExternalName":
            return Result()  # the user's to manage
        pods = pods_for_service(self.pods.indexer, service)
        subsets, ready, not_ready = compute_subsets(service, pods)
        trigger_time = self.triggers.compute(service, pods)
        current = self.endpoints.indexer.get_by_key(request.key)
        if current is not None and endpoints_up_to_date(current, service, subsets):
            return Result()
        body: Object = (
            copy.deepcopy(current)
            if current is not None
            else {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": request.name, "namespace": request.namespace},
            }
        )
        meta = body.setdefault("metadata", {})
        meta["labels"] = desired_labels(service)
        annotations = dict(meta.get("annotations") or {})
        if trigger_time:
            annotations[LAST_CHANGE_TRIGGER_TIME] = format_time(trigger_time)
        else:
            annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
        meta["annotations"] = annotations
        body["subsets"] = subsets
        logger.debug("%s: %s ready=%d not-ready=%d", NAME, request.key, ready, not_ready)
        service_ref = {**service, "kind": "Service", "apiVersion": "v1"}
        try:
            if current is None:
                await api.create(body)
            else:
                await api.update(body)
        except APIError as error:
            if current is None:
                message = f"Failed to create endpoint for service {request.key}: {error}"
                reason = "FailedToCreateEndpoint"
            else:
                message = f"Failed to update endpoint {request.key}: {error}"
                reason = "FailedToUpdateEndpoint"
            self.recorder.event(service_ref, EVENT_TYPE_WARNING, reason, message)
            raise
        return Result()


def add_to_manager(manager: Manager, *, workers: int = 1) -> Controller:
    """Build the endpoints controller: for Services, woken by their pods and by deleted Endpoints."""
    reconciler = EndpointsController(manager)
    controller = manager.new_controller(NAME, reconciler, for_=SERVICES, workers=workers)
    controller.watch(reconciler.pods, pod_to_services(reconciler.services.indexer))

    def on_endpoints_deleted(obj: Object | DeletedFinalStateUnknown) -> None:
        # Only deletions (``onEndpointsDelete``): Endpoints written by users for Services that do
        # not exist yet are left alone.
        if isinstance(obj, DeletedFinalStateUnknown):
            controller.enqueue(Request.from_key(obj.key))
        else:
            controller.enqueue(Request.for_object(obj))

    reconciler.endpoints.add_event_handler(ResourceEventHandlerFuncs(delete_func=on_endpoints_deleted))
    return controller


__all__ = [
    "NAME",
    "EndpointsController",
    "add_to_manager",
    "compute_subsets",
    "desired_labels",
    "endpoint_address",
    "endpoints_up_to_date",
]
