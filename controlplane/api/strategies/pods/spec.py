"""Validation of a whole pod spec: the entry point that calls all the others.

``validate_pod_spec`` is upstream's ``ValidatePodSpec`` (``pkg/apis/core/validation/validation.go``):
volumes first (containers refer to them), then containers and init containers, then the pod-level
fields (``restartPolicy``, ``dnsPolicy``, ``nodeSelector``, ``activeDeadlineSeconds``, tolerations,
affinity, priority...), in upstream's order, which is the order ``kubectl`` prints a 422's causes in.

It is shared: a Pod is validated at ``spec``, and a Deployment's or ReplicaSet's pod template at
``spec.template.spec`` (``workloads`` imports it, with ``validate_pod_template_meta``, upstream's
``ValidatePodTemplateSpec``). ``is_pod`` switches the few rules that differ between the two.
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
    dns_subdomain,
    inclusive_range,
    index,
    is_int,
    supported,
    valid_ip,
)
from controlplane.api.strategies.pods.containers import (
    validate_containers,
    validate_init_containers,
    validate_security_context,
)
from controlplane.api.strategies.pods.scheduling import validate_affinity, validate_tolerations
from controlplane.api.strategies.pods.volumes import validate_volumes
from controlplane.api.validation import (
    FieldError,
    invalid,
    required,
    validate_labels,
)

MAX_INT32: Final = 2**31 - 1

RESTART_POLICIES: Final = ["Always", "OnFailure", "Never"]

DNS_POLICIES: Final = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]

PREEMPTION_POLICIES: Final = ["PreemptLowerPriority", "Never"]


def validate_pod_spec(spec: Mapping[str, Any], path: str, *, is_pod: bool) -> list[FieldError]:
    """``ValidatePodSpec``, in upstream's order (the order kubectl prints the causes in).

    ``is_pod`` is upstream's ``ResourceIsPod`` option: a template may leave a host-network port's
    ``hostPort`` 0 (it is defaulted when the pod is made), a pod may not.
    """
    errors: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errors.append(required(child(path, "terminationGracePeriodSeconds")))
    volumes, volume_errors = validate_volumes(spec.get("volumes"), child(path, "volumes"))
    errors += volume_errors
    errors += validate_containers(spec.get("containers"), volumes, child(path, "containers"))
    errors += validate_init_containers(
        spec.get("initContainers"), spec.get("containers"), volumes, child(path, "initContainers")
    )
    if spec.get("hostNetwork") is True:
        for ci, container in enumerate(as_list(spec.get("containers"))):
            for pi, port in enumerate(as_list(as_dict(container).get("ports"))):
                host_port, container_port = (
                    as_dict(port).get("hostPort") or 0,
                    as_dict(port).get("containerPort"),
                )
                if (is_pod or host_port != 0) and host_port != container_port:
                    errors.append(
                        invalid(
                            f"{path}.containers[{ci}].ports[{pi}].hostPort",
                            host_port,
                            "must match `containerPort` when `hostNetwork` is true",
                        )
                    )
    errors += supported(spec.get("restartPolicy"), child(path, "restartPolicy"), RESTART_POLICIES)
    errors += supported(spec.get("dnsPolicy"), child(path, "dnsPolicy"), DNS_POLICIES)
    errors += validate_labels(spec.get("nodeSelector"), child(path, "nodeSelector"))
    errors += validate_security_context(spec.get("securityContext"), child(path, "securityContext"))
    errors += validate_affinity(spec.get("affinity"), child(path, "affinity"))
    if spec.get("dnsPolicy") == "None":
        dns_config = spec.get("dnsConfig")
        if dns_config is None:
            errors.append(
                required(child(path, "dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None")
            )
        elif not as_list(as_dict(dns_config).get("nameservers")):
            errors.append(
                required(
                    child(child(path, "dnsConfig"), "nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                )
            )
    for i, server in enumerate(as_list(as_dict(spec.get("dnsConfig")).get("nameservers"))):
        errors += valid_ip(as_str(server), index(child(child(path, "dnsConfig"), "nameservers"), i))
    service_account = as_str(spec.get("serviceAccountName"))
    if service_account:
        errors += dns_subdomain(service_account, child(path, "serviceAccountName"))
    node_name = as_str(spec.get("nodeName"))
    if node_name:
        errors += dns_subdomain(node_name, child(path, "nodeName"))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not is_int(deadline) or not 1 <= deadline <= MAX_INT32):
        errors.append(invalid(child(path, "activeDeadlineSeconds"), deadline, inclusive_range(1, MAX_INT32)))
    for field in ("hostname", "subdomain"):
        value = as_str(spec.get(field))
        if value:
            errors += dns_label(value, child(path, field))
    errors += validate_tolerations(spec.get("tolerations"), child(path, "tolerations"))
    priority_class = as_str(spec.get("priorityClassName"))
    if priority_class:
        errors += dns_subdomain(priority_class, child(path, "priorityClassName"))
    if spec.get("preemptionPolicy") is not None:
        errors += supported(
            spec.get("preemptionPolicy"), child(path, "preemptionPolicy"), PREEMPTION_POLICIES
        )
    return errors


def validate_pod_template_meta(template: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidatePodTemplateSpec``'s metadata checks (upstream's paths omit ``metadata``, sic)."""
    from controlplane.api.validation import validate_annotations

    meta = as_dict(template.get("metadata"))
    return validate_labels(meta.get("labels"), child(path, "labels")) + validate_annotations(
        meta.get("annotations"), child(path, "annotations")
    )
