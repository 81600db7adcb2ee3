"""Which pods back a Service, and on which port: the rules both endpoints controllers share.

A Service's ``selector`` is a set of labels; every pod in the Service's namespace carrying all of them
backs the Service. Not every such pod is an endpoint, though:

- a pod without an IP yet (not started) is skipped, and so is a pod that has finished (phase
  ``Succeeded`` or ``Failed``);
- a pod being deleted (``deletionTimestamp`` set) is *terminating*: the Endpoints object drops it
  (unless the Service sets ``publishNotReadyAddresses``), EndpointSlices keep it with
  ``terminating: true`` so that kube-proxy can drain it gracefully;
- a pod whose ``Ready`` condition is not ``True`` is listed, but as *not ready*: clients are not sent
  to it until its readiness probe passes.

Each Service port names a ``targetPort``: a number, used as is, or the **name** of a container port,
looked up in each pod (so pods of two versions may serve the same Service on different numbers). A
pod without a container port of that name (and protocol) is not an endpoint for that port.

The ``endpoints.kubernetes.io/last-change-trigger-time`` annotation records when the change that
caused this update happened (a pod's readiness transition, or the Service's creation), so one can
measure how long it took to reach the endpoints (``TriggerTimeTracker``).

Upstream: ``staging/src/k8s.io/endpointslice/util/controller_utils.go`` (``ShouldPodBeInEndpoints``,
``ShouldSetHostname``), ``pkg/api/v1/pod/util.go`` (``FindPort``, ``IsPodReady``),
``pkg/controller/util/endpoint/trigger_time_tracker.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api.meta import Object, parse_timestamp
from controlplane.client.cache import NAMESPACE_INDEX, Indexer
from controlplane.client.reconciler import MapFunc, Request
from controlplane.components.controllers.nodehealth import get_condition

#: The annotation with the time of the change that caused the update (``v1.EndpointsLastChangeTriggerTime``).
LAST_CHANGE_TRIGGER_TIME: Final = "endpoints.kubernetes.io/last-change-trigger-time"
#: The label marking the endpoints of a headless Service (``v1.IsHeadlessService``).
HEADLESS_LABEL: Final = "service.kubernetes.io/headless"


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None) -> bool:
    """A Service selector (a plain map) matches labels that contain every one of its pairs."""
    if not selector:
        return False
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


def service_selector(service: Mapping[str, Any]) -> dict[str, Any] | None:
    return (service.get("spec") or {}).get("selector") or None


def is_headless(service: Mapping[str, Any]) -> bool:
    """``clusterIP: None``: no virtual IP; DNS answers with the pods' addresses."""
    return (service.get("spec") or {}).get("clusterIP") == "None"


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    condition = get_condition(pod.get("status"), "Ready")
    return condition is not None and condition.get("status") == "True"


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_pod_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_ip(pod: Mapping[str, Any]) -> str | None:
    """The pod's (IPv4) address, if it has one yet."""
    status = pod.get("status") or {}
    if status.get("podIP"):
        return str(status["podIP"])
    for entry in status.get("podIPs") or []:
        if entry.get("ip"):
            return str(entry["ip"])
    return None


def should_pod_be_in_endpoints(pod: Mapping[str, Any], *, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: not finished, has an IP, and (unless asked) not terminating."""
    if is_pod_terminal(pod) or pod_ip(pod) is None:
        return False
    return include_terminating or not is_pod_terminating(pod)


def should_set_hostname(pod: Mapping[str, Any], service: Mapping[str, Any]) -> bool:
    """A pod with ``hostname`` whose ``subdomain`` is the Service's name gets a DNS name through it."""
    spec = pod.get("spec") or {}
    pod_meta, svc_meta = pod.get("metadata") or {}, service.get("metadata") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == svc_meta.get("name")
        and pod_meta.get("namespace") == svc_meta.get("namespace")
    )


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """The pod's port number for a Service port (``FindPort``); None if the pod has no such port.

    A numeric ``targetPort`` is used as is (defaulted to ``port``); a name is looked up among the
    container ports (and restartable init containers, i.e. sidecars) with the same protocol.
    """
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if not isinstance(target, str) or not target:
        return None
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in list(spec.get("containers") or []) + sidecars:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def target_ref(pod: Mapping[str, Any]) -> Object:
    meta = pod.get("metadata") or {}
    ref = {
        "kind": "Pod",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }
    return {k: v for k, v in ref.items() if v}


def services_for_pod(services: Indexer, pod: Mapping[str, Any]) -> list[Object]:
    """The Services of the pod's namespace whose selector matches it (``GetPodServiceMemberships``)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    labels = (pod.get("metadata") or {}).get("labels")
    return [
        s
        for s in services.by_index(NAMESPACE_INDEX, namespace)
        if selector_matches(service_selector(s), labels)
    ]


def pod_to_services(services: Indexer) -> MapFunc:
    """A ``MapFunc``: a pod's changes reconcile every Service selecting it."""

    def map_pod(pod: Mapping[str, Any]) -> list[Request]:
        return [Request.for_object(s) for s in services_for_pod(services, pod)]

    return map_pod


def pods_for_service(pods: Indexer, service: Mapping[str, Any]) -> list[Object]:
    """The cached pods the Service selects (none without a selector)."""
    selector = service_selector(service)
    if not selector:
        return []
    namespace = str((service.get("metadata") or {}).get("namespace") or "")
    return [
        p
        for p in pods.by_index(NAMESPACE_INDEX, namespace)
        if selector_matches(selector, (p.get("metadata") or {}).get("labels"))
    ]


# -- last-change-trigger-time -------------------------------------------------------------------


@dataclass
class _ServiceState:
    pod_trigger_times: dict[str, float] = field(default_factory=dict)
    service_trigger_time: float = 0.0


@dataclass
class TriggerTimeTracker:
    """When did the change that this endpoints update reflects happen? (``TriggerTimeTracker``)

    For each Service it remembers the trigger times it last saw: each pod's Ready condition
    ``lastTransitionTime``, and the Service's creation. The answer is the *earliest* of those that
    changed since the previous call (0.0 if none did: then the annotation is cleared).
    """

    states: dict[str, _ServiceState] = field(default_factory=dict)

    def compute(self, service: Mapping[str, Any], pods: list[Object]) -> float:
        meta = service.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        state = self.states.setdefault(key, _ServiceState())
        earliest = 0.0

        def consider(t: float) -> None:
            nonlocal earliest
            earliest = t if earliest == 0.0 else min(earliest, t)

        pod_times: dict[str, float] = {}
        for pod in pods:
            ready = get_condition(pod.get("status"), "Ready")
            t = parse_timestamp(ready.get("lastTransitionTime")) if ready else None
            if t is None:
                continue
            name = str((pod.get("metadata") or {}).get("name"))
            pod_times[name] = t
            if t > state.pod_trigger_times.get(name, 0.0):
                consider(t)
        service_time = parse_timestamp(meta.get("creationTimestamp")) or 0.0
        if service_time > state.service_trigger_time:
            consider(service_time)
        state.pod_trigger_times = pod_times
        state.service_trigger_time = service_time
        return earliest

    def delete(self, namespace: str, name: str) -> None:
        self.states.pop(f"{namespace}/{name}", None)


__all__ = [
    "HEADLESS_LABEL",
    "LAST_CHANGE_TRIGGER_TIME",
    "TriggerTimeTracker",
    "find_port",
    "is_headless",
    "is_pod_ready",
    "is_pod_terminal",
    "is_pod_terminating",
    "pod_ip",
    "pod_to_services",
    "pods_for_service",
    "selector_matches",
    "service_selector",
    "services_for_pod",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
    "target_ref",
]
