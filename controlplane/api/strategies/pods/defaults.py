"""Defaulting: the fields the API server fills in before it validates and stores a pod.

Clients send terse objects; the stored object is complete, so every later reader (the scheduler, the
kubelet, ``kubectl get -o yaml``) sees the same, explicit answer. Upstream's defaulters live in
``pkg/apis/core/v1/defaults.go`` (``SetDefaults_PodSpec``, ``SetDefaults_Pod``, ``SetDefaults_Container``,
``SetDefaults_Volume``...) and run while the request body is decoded, *before* the strategy's
``PrepareForCreate`` (``pkg/registry/core/pod/strategy.go``) and before validation.

Pod specs and pod templates share most defaults (``default_pod_spec``: ``restartPolicy: Always``,
``dnsPolicy: ClusterFirst``, ``schedulerName``, ``terminationGracePeriodSeconds: 30``, per container
``imagePullPolicy`` and ``terminationMessagePath``/``Policy``, port protocol ``TCP``, volume modes).
A *Pod* alone gets more (``default_pod_only``): requests copied from limits, ``enableServiceLinks``
and host ports under ``hostNetwork``; templates stay terse so a Deployment's spec reads as written.

Not here, because upstream does them in *admission* plugins: ``serviceAccountName: default``
(ServiceAccount), ``spec.priority`` and ``spec.preemptionPolicy`` from the pod's PriorityClass
(Priority) and the 300 s not-ready/unreachable tolerations (DefaultTolerationSeconds).
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.api.strategies.common import (
    UndecodableObject,
    as_dict,
    as_list,
    as_str,
)
from controlplane.api.strategies.pods.images import image_tag
from controlplane.api.strategies.pods.volumes import VOLUME_SOURCES

DEFAULT_TERMINATION_MESSAGE_PATH: Final = "/dev/termination-log"

DEFAULT_MODE: Final = 0o644


def default_resource_list(resources: Any) -> None:
    """``SetDefaults_ResourceList``: every quantity parsed and rounded up to milli-units.

    A quantity that does not parse is a decode error upstream (400), reported here the same way.
    """
    if not isinstance(resources, dict):
        return
    for name, value in list(resources.items()):
        try:
            quantity = parse_json_quantity(value)
        except QuantityError as error:
            raise UndecodableObject(str(error)) from None
        resources[name] = str(quantity.round_up(-3))


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _default_handler(probe)


def _default_handler(handler: Any) -> None:
    http_get = as_dict(handler).get("httpGet") if isinstance(handler, dict) else None
    if isinstance(http_get, dict):
        if not http_get.get("path"):
            http_get["path"] = "/"
        if not http_get.get("scheme"):
            http_get["scheme"] = "HTTP"


def default_container(container: dict[str, Any]) -> None:
    """``SetDefaults_Container`` and the defaults of what a container holds."""
    if not container.get("imagePullPolicy"):
        tag = image_tag(as_str(container.get("image")))
        container["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = DEFAULT_TERMINATION_MESSAGE_PATH
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    for port in as_list(container.get("ports")):
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = "TCP"  # ContainerPort.Protocol: +default="TCP"
    for env in as_list(container.get("env")):
        field_ref = as_dict(as_dict(env).get("valueFrom")).get("fieldRef")
        if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
            field_ref["apiVersion"] = "v1"  # SetDefaults_ObjectFieldSelector
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            _default_handler(lifecycle.get(hook))
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}  # a non-pointer struct: always serialized, as {}
    default_resource_list(resources.get("limits"))
    default_resource_list(resources.get("requests"))


def default_volume(volume: dict[str, Any]) -> None:
    """``SetDefaults_Volume`` and the volume sources' defaults (modes 0644, hostPath type "")."""
    if not any(volume.get(source) is not None for source in VOLUME_SOURCES):
        volume["emptyDir"] = {}  # a volume with no source is an emptyDir
    for source in ("secret", "configMap", "projected", "downwardAPI"):
        body = volume.get(source)
        if isinstance(body, dict) and body.get("defaultMode") is None:
            body["defaultMode"] = DEFAULT_MODE
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    empty_dir = volume.get("emptyDir")
    if isinstance(empty_dir, dict) and empty_dir.get("sizeLimit") is not None:
        try:
            empty_dir["sizeLimit"] = str(parse_json_quantity(empty_dir["sizeLimit"]))
        except QuantityError as error:
            raise UndecodableObject(str(error)) from None
    for source in as_list(as_dict(volume.get("projected")).get("sources")):
        token = as_dict(source).get("serviceAccountToken")
        if isinstance(token, dict) and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
        downward = as_dict(source).get("downwardAPI")
        for item in as_list(as_dict(downward).get("items")):
            field_ref = as_dict(item).get("fieldRef")
            if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
                field_ref["apiVersion"] = "v1"
    for item in as_list(as_dict(volume.get("downwardAPI")).get("items")):
        field_ref = as_dict(item).get("fieldRef")
        if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
            field_ref["apiVersion"] = "v1"


def default_pod_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec``: what every pod spec gets, in pods and in templates alike."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for field in ("containers", "initContainers"):
        for container in as_list(spec.get(field)):
            if isinstance(container, dict):
                default_container(container)
    for volume in as_list(spec.get("volumes")):
        if isinstance(volume, dict):
            default_volume(volume)
    overhead = spec.get("overhead")
    default_resource_list(overhead)


def default_pod_only(spec: dict[str, Any]) -> None:
    """``SetDefaults_Pod``: defaults a *Pod* gets but a pod template does not (so templates stay terse)."""
    for field in ("containers", "initContainers"):
        for container in as_list(spec.get(field)):
            resources = as_dict(as_dict(container).get("resources"))
            limits = resources.get("limits")
            if isinstance(limits, dict) and limits:
                requests = resources.get("requests")
                if not isinstance(requests, dict):
                    requests = resources["requests"] = {}
                for name, value in limits.items():
                    requests.setdefault(name, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for field in ("containers", "initContainers"):
            for container in as_list(spec.get(field)):
                for port in as_list(as_dict(container).get("ports")):
                    if isinstance(port, dict) and not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
