"""Validation of containers and init containers: ports, probes, lifecycle hooks, security.

A pod runs its *init containers* one after another to completion, then its regular containers side by
side. An init container with ``restartPolicy: Always`` is a *sidecar*: it keeps running, so it alone
among init containers may have probes and a ``postStart``/``preStop`` hook. Names are unique across
both lists (a container is addressed by name: ``kubectl logs -c``, ``containerStatuses``).

Probes (liveness, readiness, startup) and hooks name exactly one handler: ``exec``, ``httpGet`` or
``tcpSocket``, plus ``grpc`` for probes and ``sleep`` for hooks. Ports are 1-65535 with unique names,
and no two ports may claim the same protocol, host IP and host port, because the node could not
give it to both.

Upstream: ``pkg/apis/core/validation/validation.go`` (``validateContainers``,
``validateInitContainers``, ``validateContainerCommon``, ``validateContainerPorts``, ``validateProbe``,
``validateHandler``, ``AccumulateUniqueHostPorts``, ``ValidateSecurityContext``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.strategies.common import (
    as_dict,
    as_list,
    as_str,
    child,
    dns_label,
    inclusive_range,
    index,
    is_int,
    is_valid_port_name,
    is_valid_port_num,
    nonnegative,
    supported,
    validate_port_num_or_name,
)
from controlplane.api.strategies.pods.env import validate_env, validate_env_from
from controlplane.api.strategies.pods.resources import validate_resource_requirements
from controlplane.api.strategies.pods.volumes import validate_volume_mounts
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
)

PULL_POLICIES: Final = ["Always", "IfNotPresent", "Never"]  # sets.List order

PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]

TERMINATION_MESSAGE_POLICIES: Final = ["File", "FallbackToLogsOnError"]

URI_SCHEMES: Final = ["HTTP", "HTTPS"]


def _validate_container_ports(ports: Any, path: str) -> list[FieldError]:
    """``validateContainerPorts``."""
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(as_list(ports)):
        port = as_dict(port)
        item = index(path, i)
        name = as_str(port.get("name"))
        if name:
            messages = is_valid_port_name(name)
            if messages:
                errors += [invalid(child(item, "name"), name, msg) for msg in messages]
            elif name in names:
                errors.append(
                    FieldError("Duplicate value", "FieldValueDuplicate", child(item, "name"), "", name, True)
                )
            else:
                names.add(name)
        container_port = port.get("containerPort")
        if not container_port:
            errors.append(required(child(item, "containerPort")))
        else:
            errors += [
                invalid(child(item, "containerPort"), container_port, m)
                for m in is_valid_port_num(container_port)
            ]
        host_port = port.get("hostPort")
        if host_port:
            errors += [invalid(child(item, "hostPort"), host_port, m) for m in is_valid_port_num(host_port)]
        errors += supported(port.get("protocol"), child(item, "protocol"), PROTOCOLS)
    return errors


def _validate_handler(handler: Mapping[str, Any], path: str, *, sleep: bool, grpc: bool) -> list[FieldError]:
    """``validateHandler``: exactly one of exec, httpGet, tcpSocket, grpc (probes), sleep (hooks)."""
    errors: list[FieldError] = []
    kinds = ["exec", "httpGet", "tcpSocket"] + (["grpc"] if grpc else []) + (["sleep"] if sleep else [])
    count = 0
    for kind in kinds:
        body = handler.get(kind)
        if body is None:
            continue
        if count > 0:
            errors.append(forbidden(child(path, kind), "may not specify more than 1 handler type"))
            continue
        count += 1
        body = as_dict(body)
        sub = child(path, kind)
        if kind == "exec" and not as_list(body.get("command")):
            errors.append(required(child(sub, "command")))
        elif kind == "httpGet":
            if not body.get("path"):
                errors.append(required(child(sub, "path")))
            errors += validate_port_num_or_name(body.get("port"), child(sub, "port"))
            if body.get("scheme") not in URI_SCHEMES:
                errors.append(not_supported(child(sub, "scheme"), body.get("scheme"), URI_SCHEMES))
        elif kind == "tcpSocket":
            errors += validate_port_num_or_name(body.get("port"), child(sub, "port"))
        elif kind == "grpc":
            errors += validate_port_num_or_name(body.get("port", 0), child(sub, "port"))
    if count == 0:
        errors.append(required(path, "must specify a handler type"))
    return errors


def _validate_probe(probe: Any, path: str, *, liveness_or_startup: bool, readiness: bool) -> list[FieldError]:
    if probe is None:
        return []
    probe = as_dict(probe)
    errors = _validate_handler(probe, path, sleep=False, grpc=True)
    for field in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        errors += nonnegative(probe.get(field), child(path, field))
    grace = probe.get("terminationGracePeriodSeconds")
    if is_int(grace) and grace <= 0:
        errors.append(invalid(child(path, "terminationGracePeriodSeconds"), grace, "must be greater than 0"))
    if liveness_or_startup and probe.get("successThreshold", 1) != 1:
        errors.append(invalid(child(path, "successThreshold"), probe.get("successThreshold"), "must be 1"))
    if readiness and grace is not None:
        errors.append(
            invalid(
                child(path, "terminationGracePeriodSeconds"), grace, "must not be set for readinessProbes"
            )
        )
    return errors


def _validate_probes_and_lifecycle(container: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if lifecycle.get(hook) is not None:
                errors += _validate_handler(
                    as_dict(lifecycle[hook]), child(child(path, "lifecycle"), hook), sleep=True, grpc=False
                )
    errors += _validate_probe(
        container.get("livenessProbe"),
        child(path, "livenessProbe"),
        liveness_or_startup=True,
        readiness=False,
    )
    errors += _validate_probe(
        container.get("readinessProbe"),
        child(path, "readinessProbe"),
        liveness_or_startup=False,
        readiness=True,
    )
    errors += _validate_probe(
        container.get("startupProbe"), child(path, "startupProbe"), liveness_or_startup=True, readiness=False
    )
    return errors


def validate_security_context(context: Any, path: str) -> list[FieldError]:
    """The numeric ranges of ``ValidateSecurityContext`` / ``validatePodSpecSecurityContext``."""
    errors: list[FieldError] = []
    context = as_dict(context)
    for field in ("runAsUser", "runAsGroup", "fsGroup"):
        value = context.get(field)
        if is_int(value) and not 0 <= value <= 0xFFFFFFFF:
            errors.append(invalid(child(path, field), value, inclusive_range(0, 0xFFFFFFFF)))
    for i, gid in enumerate(as_list(context.get("supplementalGroups"))):
        if is_int(gid) and not 0 <= gid <= 0xFFFFFFFF:
            errors.append(
                invalid(index(child(path, "supplementalGroups"), i), gid, inclusive_range(0, 0xFFFFFFFF))
            )
    return errors


def _validate_container_common(
    container: Mapping[str, Any], volumes: Mapping[str, Any], path: str
) -> list[FieldError]:
    """``validateContainerCommon``: what regular and init containers share."""
    errors: list[FieldError] = []
    name = as_str(container.get("name"))
    if not name:
        errors.append(required(child(path, "name")))
    else:
        errors += dns_label(name, child(path, "name"))
    if not as_str(container.get("image")):
        errors.append(required(child(path, "image")))
    errors += supported(
        container.get("terminationMessagePolicy"),
        child(path, "terminationMessagePolicy"),
        TERMINATION_MESSAGE_POLICIES,
    )
    errors += _validate_container_ports(container.get("ports"), child(path, "ports"))
    errors += validate_env(container.get("env"), child(path, "env"))
    errors += validate_env_from(container.get("envFrom"), child(path, "envFrom"))
    errors += validate_volume_mounts(container.get("volumeMounts"), volumes, child(path, "volumeMounts"))
    errors += supported(container.get("imagePullPolicy"), child(path, "imagePullPolicy"), PULL_POLICIES)
    errors += validate_resource_requirements(container.get("resources"), child(path, "resources"))
    errors += validate_security_context(container.get("securityContext"), child(path, "securityContext"))
    return errors


def _host_port_conflicts(containers: list[Any], path: str) -> list[FieldError]:
    """``AccumulateUniqueHostPorts``: two ports may not claim the same protocol/hostIP/hostPort."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for ci, container in enumerate(containers):
        for pi, port in enumerate(as_list(as_dict(container).get("ports"))):
            port = as_dict(port)
            host_port = port.get("hostPort")
            if not host_port:
                continue
            text = f"{as_str(port.get('protocol'))}/{as_str(port.get('hostIP'))}/{host_port}"
            if text in seen:
                errors.append(
                    FieldError(
                        "Duplicate value",
                        "FieldValueDuplicate",
                        child(index(child(index(path, ci), "ports"), pi), "hostPort"),
                        "",
                        text,
                        True,
                    )
                )
            seen.add(text)
    return errors


def validate_containers(containers: Any, volumes: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateContainers``: at least one; each valid; names unique; host ports not shared."""
    containers = as_list(containers)
    if not containers:
        return [required(path)]
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, container in enumerate(containers):
        container = as_dict(container)
        item = index(path, i)
        errors += _validate_container_common(container, volumes, item)
        name = as_str(container.get("name"))
        if name in names:
            errors.append(
                FieldError("Duplicate value", "FieldValueDuplicate", child(item, "name"), "", name, True)
            )
        else:
            names.add(name)
        errors += _validate_probes_and_lifecycle(container, item)
        if container.get("restartPolicy") is not None:
            errors.append(forbidden(child(item, "restartPolicy"), "may not be set for non-init containers"))
    return errors + _host_port_conflicts(containers, path)


def validate_init_containers(
    init: Any, regular: Any, volumes: Mapping[str, Any], path: str
) -> list[FieldError]:
    """``validateInitContainers``: names unique with the regular ones; probes only for sidecars."""
    errors: list[FieldError] = []
    names = {as_str(as_dict(c).get("name")) for c in as_list(regular)}
    for i, container in enumerate(as_list(init)):
        container = as_dict(container)
        item = index(path, i)
        errors += _validate_container_common(container, volumes, item)
        restart = container.get("restartPolicy")
        if restart is not None and restart != "Always":
            errors.append(not_supported(child(item, "restartPolicy"), restart, ["Always"]))
        name = as_str(container.get("name"))
        if name in names:
            errors.append(
                FieldError("Duplicate value", "FieldValueDuplicate", child(item, "name"), "", name, True)
            )
        elif name:
            names.add(name)
        errors += _host_port_conflicts([container], path)
        if restart == "Always":
            errors += _validate_probes_and_lifecycle(container, item)
        else:
            for field in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if container.get(field) is not None:
                    errors.append(
                        forbidden(
                            child(item, field),
                            "may not be set for init containers without restartPolicy=Always",
                        )
                    )
    return errors
