"""Pods: defaults, validation and the rules for changing a pod once it exists.

A pod is the unit the scheduler places and the kubelet runs, and most of its spec is **immutable once
created**. The kubelet has already pulled images, mounted volumes, joined the pod to its network and
started processes from that spec: changing a container's command, ports or volumes in place would
mean silently restarting the pod as something else. So an update may change only what can be applied
live: a container's ``image`` (the kubelet restarts that one container), ``activeDeadlineSeconds``
(only shortened), new ``tolerations`` (added, never removed or edited), and
``terminationGracePeriodSeconds`` from negative to 1. Anything else is refused with upstream's famous
``spec: Forbidden: pod updates may not change fields other than ...``. To change a pod, you replace
it; that is what Deployments and ReplicaSets do for you.

What the API server **fills in** (``pkg/apis/core/v1/defaults.go``): ``restartPolicy: Always``,
``dnsPolicy: ClusterFirst``, ``schedulerName: default-scheduler``, ``terminationGracePeriodSeconds:
30``, an empty ``securityContext``; per container ``imagePullPolicy`` (``Always`` for ``:latest`` or
no tag, else ``IfNotPresent``), ``terminationMessagePath``/``Policy``, port protocol ``TCP``, and
requests copied from limits (a container that sets only limits requests what it limits). Not here,
because upstream does them in *admission* plugins: ``serviceAccountName: default`` (ServiceAccount)
and the 300 s not-ready/unreachable tolerations (DefaultTolerationSeconds). ``priority`` and
``preemptionPolicy`` also come from an admission plugin (Priority); the lab applies its built-in
answers here.

The **status** starts as ``phase: Pending`` with a ``qosClass`` computed from the resources
(``pkg/apis/core/helper/qos``): *Guaranteed* when every container limits CPU and memory and requests
exactly that, *BestEffort* when nothing is requested or limited, else *Burstable*. The kubelet evicts
BestEffort pods first under memory pressure. Status is written only through ``pods/status``.

The pod-spec functions here are shared with the workloads (a Deployment's template is validated like
a pod's, at ``spec.template.spec``). Upstream: ``pkg/apis/core/validation/validation.go``
(``ValidatePodCreate``, ``ValidatePodSpec``, ``ValidatePodUpdate``) and
``pkg/registry/core/pod/strategy.go``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.quantity import Quantity, QuantityError, parse_json_quantity
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    UndecodableObject,
    as_dict,
    as_list,
    as_str,
    child,
    dns_label,
    dns_subdomain,
    go_pointer,
    inclusive_range,
    index,
    invalid_go,
    is_int,
    is_valid_port_name,
    is_valid_port_num,
    key,
    label_name,
    nonnegative,
    not_found,
    semantic,
    spec_of,
    supported,
    valid_ip,
    validate_label_selector,
    validate_port_num_or_name,
)
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    not_supported,
    required,
    validate_labels,
    validate_object_meta_update,
)

MAX_INT32: Final = 2**31 - 1
RESTART_POLICIES: Final = ["Always", "OnFailure", "Never"]
DNS_POLICIES: Final = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PULL_POLICIES: Final = ["Always", "IfNotPresent", "Never"]  # sets.List order
PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
TERMINATION_MESSAGE_POLICIES: Final = ["File", "FallbackToLogsOnError"]
TAINT_EFFECTS: Final = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
TOLERATION_OPERATORS: Final = ["Equal", "Exists"]
PREEMPTION_POLICIES: Final = ["PreemptLowerPriority", "Never"]
HOST_PATH_TYPES: Final = [
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
]
MOUNT_PROPAGATIONS: Final = ["Bidirectional", "HostToContainer", "None"]
URI_SCHEMES: Final = ["HTTP", "HTTPS"]
FILE_MODE_ERROR: Final = "must be a number between 0 and 0777 (octal), both inclusive"
DEFAULT_TERMINATION_MESSAGE_PATH: Final = "/dev/termination-log"
DEFAULT_MODE: Final = 0o644

#: Every volume source upstream knows, in ``validateVolumeSource``'s order (only one may be set).
VOLUME_SOURCES: Final = (
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
)

#: The message ``ValidatePodUpdate`` starts with, verbatim (``updatablePodSpecFields``).
POD_UPDATE_FORBIDDEN: Final = "pod updates may not change fields other than " + ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)

#: Built-in priority classes (``pkg/apis/scheduling``): what the Priority admission plugin resolves.
SYSTEM_PRIORITY_CLASSES: Final = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}

# -- images ----------------------------------------------------------------------------------------

_ALNUM = "[a-z0-9]+"
_SEPARATOR = "(?:[._]|__|[-]+)"
_PATH_COMPONENT = f"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_REFERENCE_RE = re.compile(
    rf"^(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def image_tag(image: str) -> str:
    """``parsers.ParseImageName``'s tag: ``latest`` when neither tag nor digest, "" if unparsable."""
    match = _REFERENCE_RE.match(image)
    if match is None:
        return ""
    if match.group("tag"):
        return match.group("tag")
    return "" if match.group("digest") else "latest"


# -- defaulting ------------------------------------------------------------------------------------


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
    # The Priority admission plugin (plugin/pkg/admission/priority): the class's value, 0 without one.
    if spec.get("priority") is None:
        class_name = as_str(spec.get("priorityClassName"))
        if not class_name:
            spec["priority"] = 0
        elif class_name in SYSTEM_PRIORITY_CLASSES:
            spec["priority"] = SYSTEM_PRIORITY_CLASSES[class_name]
    if spec.get("preemptionPolicy") is None and spec.get("priority") is not None:
        spec["preemptionPolicy"] = "PreemptLowerPriority"


# -- QoS (pkg/apis/core/helper/qos/qos.go ComputePodQOS) -------------------------------------------


def pod_qos_class(spec: Mapping[str, Any]) -> str:
    """BestEffort, Burstable or Guaranteed, from the containers' CPU and memory requests and limits."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    containers = [*as_list(spec.get("containers")), *as_list(spec.get("initContainers"))]
    for container in containers:
        resources = as_dict(as_dict(container).get("resources"))
        for name, value in as_dict(resources.get("requests")).items():
            quantity = _quantity_or_none(value)
            if name in ("cpu", "memory") and quantity is not None and quantity.sign() > 0:
                requests[name] = requests[name] + quantity if name in requests else quantity
        found: set[str] = set()
        for name, value in as_dict(resources.get("limits")).items():
            quantity = _quantity_or_none(value)
            if name in ("cpu", "memory") and quantity is not None and quantity.sign() > 0:
                found.add(name)
                limits[name] = limits[name] + quantity if name in limits else quantity
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, request in requests.items():
            if name not in limits or limits[name] != request:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _quantity_or_none(value: Any) -> Quantity | None:
    try:
        return parse_json_quantity(value)
    except QuantityError:
        return None


# -- validation: resources -------------------------------------------------------------------------

#: ``standardResources`` (``pkg/apis/core/helper/helpers.go``): names that need no domain prefix.
STANDARD_RESOURCES: Final = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
        "requests.storage",
    }
)
STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed``: native resources except hugepages; extended resources are exact."""
    return _is_native(name) and not _is_hugepages(name)


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errors = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if errors:
        return errors
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not _is_hugepages(name):
            return [invalid(path, name, "must be a standard resource type or fully qualified")]
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            return [invalid(path, name, "must be a standard resource for containers")]
    elif not _is_native(name) and (name.startswith("requests.") or is_qualified_name("requests." + name)):
        return [invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _validate_quantity_value(name: str, quantity: Quantity, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: not negative; whole numbers for integer resources."""
    errors = []
    if quantity.sign() < 0:
        errors.append(invalid(path, str(quantity), "must be greater than or equal to 0"))
    if not _is_native(name) and quantity.nanos % 10**9:
        errors.append(invalid_go(path, str(quantity), "must be an integer", str(quantity)))
    return errors


def validate_resource_requirements(resources: Any, path: str) -> list[FieldError]:
    """``validateResourceRequirements`` for a container: names, quantities, requests <= limits."""
    resources = as_dict(resources)
    errors: list[FieldError] = []
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    limits = {name: _quantity_or_none(value) for name, value in as_dict(resources.get("limits")).items()}
    requests = {name: _quantity_or_none(value) for name, value in as_dict(resources.get("requests")).items()}
    cpu_or_memory = hugepages = False
    for name, quantity in limits.items():
        field = key(lim_path, name)
        errors += _validate_container_resource_name(name, field)
        if quantity is not None:
            errors += _validate_quantity_value(name, quantity, field)
        hugepages = hugepages or _is_hugepages(name)
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    for name, quantity in requests.items():
        field = key(req_path, name)
        errors += _validate_container_resource_name(name, field)
        if quantity is None:
            continue
        errors += _validate_quantity_value(name, quantity, field)
        limit = limits.get(name)
        if name in limits and limit is not None:
            if quantity != limit and not _overcommit_allowed(name):
                errors.append(invalid(req_path, str(quantity), f"must be equal to {name} limit of {limit}"))
            elif quantity > limit:
                errors.append(
                    invalid(req_path, str(quantity), f"must be less than or equal to {name} limit of {limit}")
                )
        elif not _overcommit_allowed(name):
            errors.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        hugepages = hugepages or _is_hugepages(name)
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    if hugepages and not cpu_or_memory:
        errors.append(forbidden(path, "HugePages require cpu or memory"))
    return errors


# -- validation: env -------------------------------------------------------------------------------

ENV_FIELD_PATHS: Final = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
]
RESOURCE_FIELD_PATHS: Final = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
]
_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")


def is_config_map_key(value: str) -> list[str]:
    """``validation.IsConfigMapKey``: keys of ConfigMaps and Secrets (they become file names)."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.match(value):
        errors.append(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
            "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        )
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def is_relaxed_env_var_name(value: str) -> list[str]:
    """``IsRelaxedEnvVarName``: printable ASCII except '=' (RelaxedEnvironmentVariableValidation, GA)."""
    errors = []
    if not value:
        errors.append("environment variable name must be non-empty")
    if any(ord(c) > 126 or ord(c) < 32 or c == "=" for c in value):
        errors.append(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
        )
    return errors


def _validate_key_selector(selector: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateConfigMapKeySelector`` / ``validateSecretKeySelector``."""
    errors = [
        invalid(child(path, "name"), as_str(selector.get("name")), msg)
        for msg in is_dns1123_subdomain(as_str(selector.get("name")))
    ]
    key_value = as_str(selector.get("key"))
    if not key_value:
        errors.append(required(child(path, "key")))
    else:
        errors += [invalid(child(path, "key"), key_value, msg) for msg in is_config_map_key(key_value)]
    return errors


#: What ``ConvertDownwardAPIFieldLabel`` accepts (``pkg/apis/core/pods/helpers.go``).
_DOWNWARD_API_LABELS: Final = frozenset(
    {
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    }
)


def _validate_field_selector(selector: Mapping[str, Any], valid: list[str], path: str) -> list[FieldError]:
    """``validateObjectFieldSelector`` (the downward API's ``fieldRef``)."""
    if not selector.get("apiVersion"):
        return [required(child(path, "apiVersion"))]
    field_path = as_str(selector.get("fieldPath"))
    if not field_path:
        return [required(child(path, "fieldPath"))]
    converted, problem = field_path, ""
    subscripted = field_path.endswith("']") and "['" in field_path and not field_path.startswith("['")
    base, _, subscript = field_path[:-2].partition("['") if subscripted else (field_path, "", "")
    if selector.get("apiVersion") != "v1":
        problem = f"unsupported pod version: {selector.get('apiVersion')}"
    elif subscripted and base not in ("metadata.annotations", "metadata.labels"):
        problem = f"field label does not support subscript: {field_path}"
    elif not subscripted and field_path == "spec.host":
        converted = "spec.nodeName"  # old clients' name for it
    elif not subscripted and field_path not in _DOWNWARD_API_LABELS:
        problem = f"field label not supported: {field_path}"
    if problem:
        return [invalid(child(path, "fieldPath"), field_path, f"error converting fieldPath: {problem}")]
    if subscripted:
        name = subscript.lower() if base == "metadata.annotations" else subscript
        return [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if converted not in valid:
        return [not_supported(child(path, "fieldPath"), converted, sorted(valid))]
    return []


def validate_env(env: Any, path: str) -> list[FieldError]:
    """``ValidateEnv``: names, and ``valueFrom`` naming exactly one source (and not with ``value``)."""
    errors: list[FieldError] = []
    for i, var in enumerate(as_list(env)):
        var = as_dict(var)
        item = index(path, i)
        name = as_str(var.get("name"))
        if not name:
            errors.append(required(child(item, "name")))
        else:
            errors += [invalid(child(item, "name"), name, msg) for msg in is_relaxed_env_var_name(name)]
        value_from = var.get("valueFrom")
        if value_from is None:
            continue
        value_from = as_dict(value_from)
        vf_path = child(item, "valueFrom")
        sources = 0
        if isinstance(value_from.get("fieldRef"), dict):
            sources += 1
            errors += _validate_field_selector(
                value_from["fieldRef"], ENV_FIELD_PATHS, child(vf_path, "fieldRef")
            )
        if isinstance(value_from.get("resourceFieldRef"), dict):
            sources += 1
            resource = as_str(value_from["resourceFieldRef"].get("resource"))
            rf_path = child(vf_path, "resourceFieldRef")
            if not resource:
                errors.append(required(child(rf_path, "resource")))
            elif resource not in RESOURCE_FIELD_PATHS and not resource.startswith(
                ("requests.hugepages-", "limits.hugepages-")
            ):
                errors.append(not_supported(child(rf_path, "resource"), resource, RESOURCE_FIELD_PATHS))
        if isinstance(value_from.get("configMapKeyRef"), dict):
            sources += 1
            errors += _validate_key_selector(value_from["configMapKeyRef"], child(vf_path, "configMapKeyRef"))
        if isinstance(value_from.get("secretKeyRef"), dict):
            sources += 1
            errors += _validate_key_selector(value_from["secretKeyRef"], child(vf_path, "secretKeyRef"))
        if sources == 0:
            errors.append(
                invalid(
                    vf_path,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                    "`secretKeyRef`",
                )
            )
        elif var.get("value"):
            errors.append(invalid(vf_path, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            errors.append(invalid(vf_path, "", "may not have more than one field specified at a time"))
    return errors


def validate_env_from(env_from: Any, path: str) -> list[FieldError]:
    """``ValidateEnvFrom``: each entry names one ConfigMap or Secret, with an optional prefix."""
    errors: list[FieldError] = []
    for i, source in enumerate(as_list(env_from)):
        source = as_dict(source)
        item = index(path, i)
        prefix = as_str(source.get("prefix"))
        if prefix:
            errors += [invalid(child(item, "prefix"), prefix, msg) for msg in is_relaxed_env_var_name(prefix)]
        count = 0
        for field in ("configMapRef", "secretRef"):
            ref = source.get(field)
            if isinstance(ref, dict):
                count += 1
                name = as_str(ref.get("name"))
                if not name:
                    errors.append(required(child(child(item, field), "name")))
                else:
                    errors += [
                        invalid(child(child(item, field), "name"), name, msg)
                        for msg in is_dns1123_subdomain(name)
                    ]
        if count == 0:
            errors.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errors.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errors


# -- validation: volumes ---------------------------------------------------------------------------


def _validate_mode(mode: Any, path: str) -> list[FieldError]:
    if mode is not None and (not is_int(mode) or mode < 0 or mode > 0o777):
        return [invalid(path, mode, FILE_MODE_ERROR)]
    return []


def _no_backsteps(target: str, path: str) -> list[FieldError]:
    if ".." in target.replace("\\", "/").split("/"):
        return [invalid(path, target, "must not contain '..'")]
    return []


def _local_descending_path(target: str, path: str) -> list[FieldError]:
    errors = []
    if target.startswith("/"):
        errors.append(invalid(path, target, "must be a relative path"))
    return errors + _no_backsteps(target, path)


def _local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    errors = _local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errors.append(invalid(path, target, "must not start with '..'"))
    return errors


def _validate_key_to_path(item: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = []
    if not item.get("key"):
        errors.append(required(child(path, "key")))
    target = as_str(item.get("path"))
    if not target:
        errors.append(required(child(path, "path")))
    errors += _local_non_reserved_path(target, child(path, "path"))
    return errors + _validate_mode(item.get("mode"), child(path, "mode"))


def _validate_items(items: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, item in enumerate(as_list(items)):
        errors += _validate_key_to_path(as_dict(item), index(path, i))
    return errors


def _validate_source(name: str, body: Mapping[str, Any], path: str) -> list[FieldError]:
    """The checks of the sources the lab's kubelet supports; the others are accepted as they are."""
    errors: list[FieldError] = []
    if name == "emptyDir":
        size = body.get("sizeLimit")
        quantity = _quantity_or_none(size) if size is not None else None
        if quantity is not None and quantity.sign() < 0:
            errors.append(
                forbidden(child(path, "sizeLimit"), "SizeLimit field must be a valid resource quantity")
            )
    elif name == "hostPath":
        target = as_str(body.get("path"))
        if not target:
            return [required(child(path, "path"))]
        errors += _no_backsteps(target, child(path, "path"))
        kind = body.get("type")
        if kind is not None and kind not in HOST_PATH_TYPES:
            errors.append(not_supported(child(path, "type"), kind, HOST_PATH_TYPES))
    elif name == "secret":
        if not body.get("secretName"):
            errors.append(required(child(path, "secretName")))
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
        errors += _validate_items(body.get("items"), child(path, "items"))
    elif name == "configMap":
        if not body.get("name"):
            errors.append(required(child(path, "name")))
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
        errors += _validate_items(body.get("items"), child(path, "items"))
    elif name == "persistentVolumeClaim":
        if not body.get("claimName"):
            errors.append(required(child(path, "claimName")))
    elif name == "downwardAPI":
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
    elif name == "projected":
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
        errors += _validate_projection_sources(body, path)
    return errors


def _validate_projection_sources(projection: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateProjectionSources``: each source one kind; file paths unique across sources."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, source in enumerate(as_list(projection.get("sources"))):
        source = as_dict(source)
        src_path = index(child(path, "sources"), i)
        count = 0
        for kind in ("secret", "configMap"):
            body = source.get(kind)
            if not isinstance(body, dict):
                continue
            count += 1
            if not body.get("name"):
                errors.append(required(child(child(src_path, kind), "name")))
            for j, item in enumerate(as_list(body.get("items"))):
                item = as_dict(item)
                errors += _validate_key_to_path(item, index(child(child(src_path, kind), "items"), j))
                target = as_str(item.get("path"))
                if target:
                    if target in seen:
                        errors.append(invalid(path, as_str(body.get("name")), "conflicting duplicate paths"))
                    seen.add(target)
        if isinstance(source.get("downwardAPI"), dict):
            count += 1
            for item in as_list(source["downwardAPI"].get("items")):
                target = as_str(as_dict(item).get("path"))
                if not target:
                    errors.append(required(child(child(src_path, "downwardAPI"), "path")))
                elif target in seen:
                    errors.append(invalid(path, target, "conflicting duplicate paths"))
                seen.add(target)
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            count += 1
            token_path = child(src_path, "serviceAccountToken")
            seconds = token.get("expirationSeconds")
            if is_int(seconds) and seconds < 600:
                errors.append(
                    invalid(
                        child(token_path, "expirationSeconds"),
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    )
                )
            if is_int(seconds) and seconds > 2**32:
                errors.append(
                    invalid(
                        child(token_path, "expirationSeconds"),
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                )
            target = as_str(token.get("path"))
            if not target:
                errors.append(required(child(path, "path")))
            else:
                errors += _local_non_reserved_path(target, child(path, "path"))
        if isinstance(source.get("clusterTrustBundle"), dict):
            count += 1
        if count > 1:
            errors.append(forbidden(src_path, "may not specify more than 1 volume type per source"))
    return errors


def validate_volumes(volumes: Any, path: str) -> tuple[dict[str, dict[str, Any]], list[FieldError]]:
    """``ValidateVolumes``: unique DNS-label names and exactly one source; returns the valid volumes."""
    errors: list[FieldError] = []
    valid: dict[str, dict[str, Any]] = {}
    for i, volume in enumerate(as_list(volumes)):
        volume = as_dict(volume)
        item = index(path, i)
        name = as_str(volume.get("name"))
        volume_errors: list[FieldError] = []
        count = 0
        for source in VOLUME_SOURCES:
            body = volume.get(source)
            if body is None:
                continue
            if count > 0:
                volume_errors.append(
                    forbidden(child(item, source), "may not specify more than 1 volume type")
                )
                continue
            count += 1
            volume_errors += _validate_source(source, as_dict(body), child(item, source))
        if count == 0:
            volume_errors.append(required(item, "must specify a volume type"))
        if not name:
            volume_errors.append(required(child(item, "name")))
        else:
            volume_errors += dns_label(name, child(item, "name"))
        if name in valid:
            volume_errors.append(
                FieldError("Duplicate value", "FieldValueDuplicate", child(item, "name"), "", name, True)
            )
        if volume_errors:
            errors += volume_errors
        else:
            valid[name] = volume
    return valid, errors


def _validate_volume_mounts(mounts: Any, volumes: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateVolumeMounts`` (note upstream's ``subPath`` errors carry no index)."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, mount in enumerate(as_list(mounts)):
        mount = as_dict(mount)
        item = index(path, i)
        name = as_str(mount.get("name"))
        if not name:
            errors.append(required(child(item, "name")))
        if name not in volumes:
            errors.append(not_found(child(item, "name"), name))
        mount_path = as_str(mount.get("mountPath"))
        if not mount_path:
            errors.append(required(child(item, "mountPath")))
        if mount_path in seen:
            errors.append(invalid(child(item, "mountPath"), mount_path, "must be unique"))
        seen.add(mount_path)
        sub_path = as_str(mount.get("subPath"))
        if sub_path:
            errors += _local_descending_path(sub_path, child(path, "subPath"))
        sub_path_expr = as_str(mount.get("subPathExpr"))
        if sub_path_expr:
            if sub_path:
                errors.append(
                    invalid(
                        child(item, "subPathExpr"),
                        sub_path_expr,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            errors += _local_descending_path(sub_path_expr, child(path, "subPathExpr"))
        propagation = mount.get("mountPropagation")
        if propagation is not None and propagation not in MOUNT_PROPAGATIONS:
            errors.append(not_supported(child(path, "mountPropagation"), propagation, MOUNT_PROPAGATIONS))
    return errors


# -- validation: containers ------------------------------------------------------------------------


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


def _validate_security_context(context: Any, path: str) -> list[FieldError]:
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
    errors += _validate_volume_mounts(container.get("volumeMounts"), volumes, child(path, "volumeMounts"))
    errors += supported(container.get("imagePullPolicy"), child(path, "imagePullPolicy"), PULL_POLICIES)
    errors += validate_resource_requirements(container.get("resources"), child(path, "resources"))
    errors += _validate_security_context(container.get("securityContext"), child(path, "securityContext"))
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


# -- validation: scheduling ------------------------------------------------------------------------


def validate_tolerations(tolerations: Any, path: str) -> list[FieldError]:
    """``ValidateTolerations``: key, operator (Equal/Exists) and effect."""
    errors: list[FieldError] = []
    for i, toleration in enumerate(as_list(tolerations)):
        toleration = as_dict(toleration)
        item = index(path, i)
        tol_key = as_str(toleration.get("key"))
        operator = as_str(toleration.get("operator"))
        effect = as_str(toleration.get("effect"))
        value = as_str(toleration.get("value"))
        if tol_key:
            errors += label_name(tol_key, child(item, "key"))
        if not tol_key and operator != "Exists":
            errors.append(
                invalid(
                    child(item, "operator"),
                    operator,
                    "operator must be Exists when `key` is empty, which means "
                    '"match all values and all keys"',
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.append(
                invalid(
                    child(item, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            messages = is_label_value(value)
            if messages:
                errors.append(invalid(child(item, "operator"), value, ";".join(messages)))
        elif operator == "Exists":
            if value:
                errors.append(
                    invalid(child(item, "operator"), value, "value must be empty when `operator` is 'Exists'")
                )
        else:
            errors.append(not_supported(child(item, "operator"), operator, TOLERATION_OPERATORS))
        if effect:
            errors += validate_taint_effect(effect, child(item, "effect"))
    return errors


def validate_taint_effect(effect: str, path: str, *, allow_empty: bool = True) -> list[FieldError]:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect not in TAINT_EFFECTS:
        return [not_supported(path, effect, TAINT_EFFECTS)]
    return []


def _validate_node_selector_requirement(
    requirement: Mapping[str, Any], path: str, *, strict_values: bool
) -> list[FieldError]:
    errors: list[FieldError] = []
    operator = requirement.get("operator")
    values = as_list(requirement.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(
                required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                forbidden(
                    child(path, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(
                required(
                    child(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
    else:
        errors.append(invalid(child(path, "operator"), as_str(operator), "not a valid selector operator"))
    errors += label_name(as_str(requirement.get("key")), child(path, "key"))
    if strict_values:
        for i, value in enumerate(values):
            errors += [
                invalid(index(child(path, "values"), i), value, m) for m in is_label_value(as_str(value))
            ]
    return errors


def _validate_node_selector_term(
    term: Mapping[str, Any], path: str, *, strict_values: bool
) -> list[FieldError]:
    errors: list[FieldError] = []
    for j, requirement in enumerate(as_list(term.get("matchExpressions"))):
        errors += _validate_node_selector_requirement(
            as_dict(requirement), index(child(path, "matchExpressions"), j), strict_values=strict_values
        )
    for j, requirement in enumerate(as_list(term.get("matchFields"))):
        requirement = as_dict(requirement)
        req_path = index(child(path, "matchFields"), j)
        if requirement.get("operator") in ("In", "NotIn"):
            if len(as_list(requirement.get("values"))) != 1:
                errors.append(
                    required(
                        child(req_path, "values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    )
                )
        else:
            errors.append(
                invalid(
                    child(req_path, "operator"),
                    as_str(requirement.get("operator")),
                    "not a valid selector operator",
                )
            )
        if requirement.get("key") != "metadata.name":
            errors.append(
                invalid(
                    child(req_path, "key"), as_str(requirement.get("key")), "not a valid field selector key"
                )
            )
    return errors


def _validate_pod_affinity_term(term: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = validate_label_selector(term.get("labelSelector"), child(path, "labelSelector"))
    errors += validate_label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector"))
    for name in as_list(term.get("namespaces")):
        errors += [invalid(child(path, "namespace"), name, m) for m in _dns_label_messages(as_str(name))]
    topology_key = as_str(term.get("topologyKey"))
    if not topology_key:
        errors.append(required(child(path, "topologyKey"), "can not be empty"))
    return errors + label_name(topology_key, child(path, "topologyKey"))


def _dns_label_messages(value: str) -> list[str]:
    from controlplane.api.validation import is_dns1123_label

    return is_dns1123_label(value)


def validate_affinity(affinity: Any, path: str) -> list[FieldError]:
    """``validateAffinity``: node affinity terms and pod (anti-)affinity terms."""
    if affinity is None:
        return []
    affinity = as_dict(affinity)
    errors: list[FieldError] = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, dict):
        node_path = child(path, "nodeAffinity")
        required_terms = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required_terms is not None:
            req_path = child(
                child(node_path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"
            )
            terms = as_list(as_dict(required_terms).get("nodeSelectorTerms"))
            if not terms:
                errors.append(required(req_path, "must have at least one node selector term"))
            for i, term in enumerate(terms):
                errors += _validate_node_selector_term(as_dict(term), index(req_path, i), strict_values=True)
        for i, preferred in enumerate(as_list(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            preferred = as_dict(preferred)
            item = index(child(node_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
            weight = preferred.get("weight")
            if not is_int(weight) or not 0 < weight <= 100:
                errors.append(invalid(child(item, "weight"), weight, "must be in the range 1-100"))
            errors += _validate_node_selector_term(
                as_dict(preferred.get("preference")), child(item, "preference"), strict_values=False
            )
    for kind in ("podAffinity", "podAntiAffinity"):
        body = affinity.get(kind)
        if not isinstance(body, dict):
            continue
        kind_path = child(path, kind)
        for i, term in enumerate(as_list(body.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errors += _validate_pod_affinity_term(
                as_dict(term), index(child(kind_path, "requiredDuringSchedulingIgnoredDuringExecution"), i)
            )
        for i, weighted in enumerate(as_list(body.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            weighted = as_dict(weighted)
            item = index(child(kind_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
            weight = weighted.get("weight")
            if not is_int(weight) or not 0 < weight <= 100:
                errors.append(invalid(child(item, "weight"), weight, "must be in the range 1-100"))
            errors += _validate_pod_affinity_term(
                as_dict(weighted.get("podAffinityTerm")), child(item, "podAffinityTerm")
            )
    return errors


# -- validation: the pod spec ----------------------------------------------------------------------


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
    errors += _validate_security_context(spec.get("securityContext"), child(path, "securityContext"))
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


# -- pod updates -----------------------------------------------------------------------------------


def _only_added_tolerations(new: Any, old: Any, path: str) -> list[FieldError]:
    """``validateOnlyAddedTolerations``: each old toleration is still there (``tolerationSeconds`` aside)."""

    def strip(toleration: Any) -> Any:
        return {k: v for k, v in semantic(as_dict(toleration)).items() if k != "tolerationSeconds"}

    new_list = [strip(t) for t in as_list(new)]
    for toleration in as_list(old):
        if strip(toleration) not in new_list:
            return [forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def _spec_diff(old: Any, new: Any) -> str:
    """A short diff of two pod specs, in the spirit of the ``cmp.Diff`` upstream appends.

    (go-cmp's own output is explicitly unstable and Go-struct shaped; this lists the changed fields.)
    """
    lines: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k), b.get(k), f"{where}.{k}" if where else k)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{i}]")
            return
        if a is not None:
            lines.append(f"- \t{where}: {json.dumps(a, separators=(',', ':'))},")
        if b is not None:
            lines.append(f"+ \t{where}: {json.dumps(b, separators=(',', ':'))},")

    walk(semantic(old), semantic(new), "")
    return "  core.PodSpec{\n" + "\n".join(lines) + ("\n" if lines else "") + "  }\n"


def validate_pod_update(obj: Object, old: Object, *, allow_binding: bool) -> list[FieldError]:
    """``ValidatePodUpdate``: the few fields of a running pod's spec that may change."""
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    errors: list[FieldError] = []
    for field in ("containers", "initContainers"):
        new_list, old_list = as_list(spec.get(field)), as_list(old_spec.get(field))
        if len(new_list) != len(old_list):
            return [*errors, forbidden(child("spec", field), "pod updates may not add or remove containers")]
        for i, container in enumerate(new_list):
            image = as_str(as_dict(container).get("image"))
            if not image:
                errors.append(required(child(index(child("spec", field), i), "image")))
            if image != image.strip():
                errors.append(
                    invalid(
                        child(index(child("spec", field), i), "image"),
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if deadline is not None:
        if not is_int(deadline) or not 0 <= deadline <= MAX_INT32:
            return [*errors, invalid("spec.activeDeadlineSeconds", deadline, inclusive_range(0, MAX_INT32))]
        if is_int(old_deadline) and old_deadline < deadline:
            message = "must be less than or equal to previous value"
            return [*errors, invalid("spec.activeDeadlineSeconds", deadline, message)]
    elif old_deadline is not None:
        errors.append(
            invalid_go(
                "spec.activeDeadlineSeconds",
                go_pointer(None),
                "must not update from a positive integer to nil value",
            )
        )
    errors += _only_added_tolerations(
        spec.get("tolerations"), old_spec.get("tolerations"), "spec.tolerations"
    )

    munged = deep_copy(spec)
    for field in ("containers", "initContainers"):
        for container, old_container in zip(
            as_list(munged.get(field)), as_list(old_spec.get(field)), strict=False
        ):
            if isinstance(container, dict):
                container["image"] = as_dict(old_container).get("image")
    munged["activeDeadlineSeconds"] = old_deadline
    munged["tolerations"] = old_spec.get("tolerations")
    munged["schedulingGates"] = old_spec.get("schedulingGates")
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        munged.get("terminationGracePeriodSeconds"),
    )
    if is_int(old_grace) and old_grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if allow_binding and not old_spec.get("nodeName") and munged.get("nodeName"):
        # Transitional: the lab's registry routes pods/binding through the main update path; upstream's
        # BindingREST sets spec.nodeName outside the strategy. See PodBindingStrategy.
        munged["nodeName"] = old_spec.get("nodeName")
    if semantic(munged) != semantic(old_spec):
        errors.append(forbidden("spec", f"{POD_UPDATE_FORBIDDEN}\n{_spec_diff(old_spec, munged)}"))
    return errors


# -- pod status updates ----------------------------------------------------------------------------


def validate_pod_status_update(obj: Object, old: Object) -> list[FieldError]:
    """``ValidatePodStatusUpdate``: the parts a kubelet could get wrong."""
    status, old_status = as_dict(obj.get("status")), as_dict(old.get("status"))
    errors: list[FieldError] = []
    for i, condition in enumerate(as_list(status.get("conditions"))):
        kind = as_str(as_dict(condition).get("type"))
        if kind not in ("PodScheduled", "Ready", "Initialized"):
            errors += [
                invalid(child(index("metadata.conditions", i), "Type"), kind, m)
                for m in is_qualified_name(kind)
            ]
    nominated = as_str(status.get("nominatedNodeName"))
    if nominated and nominated != old_status.get("nominatedNodeName"):
        errors += dns_subdomain(nominated, "status.nominatedNodeName")
    if status.get("qosClass") != old_status.get("qosClass"):
        errors.append(invalid("status.qosClass", as_str(status.get("qosClass")), "field is immutable"))
    restart = as_dict(old.get("spec")).get("restartPolicy")
    if restart != "Always":
        new_by_name = {as_dict(s).get("name"): as_dict(s) for s in as_list(status.get("containerStatuses"))}
        for i, old_container in enumerate(as_list(old_status.get("containerStatuses"))):
            terminated = as_dict(as_dict(as_dict(old_container).get("state")).get("terminated"))
            if not terminated:
                continue
            if terminated.get("exitCode", 0) != 0 and restart == "OnFailure":
                continue
            new = new_by_name.get(as_dict(old_container).get("name"))
            if new is not None and not as_dict(new.get("state")).get("terminated"):
                errors.append(
                    forbidden(
                        child(index("status.containerStatuses", i), "state"),
                        "may not be transitioned to non-terminated state",
                    )
                )
    for i, pod_ip in enumerate(as_list(status.get("podIPs"))):
        errors += valid_ip(as_str(as_dict(pod_ip).get("ip")), index("status.podIPs", i))
    return errors


# -- the strategy ----------------------------------------------------------------------------------


class PodStrategy(CoreKindStrategy):
    """Pods (``pkg/registry/core/pod/strategy.go``): status from the kubelet, graceful deletion,
    ``metadata.generation`` counting spec changes (PodObservedGenerationTracking), QoS at creation."""

    status_subresource = True
    tracks_generation = True
    graceful_deletion = True
    #: Whether a plain update may set ``spec.nodeName`` (upstream: never; only ``pods/binding`` may,
    #: and the registry applies a binding without this strategy).
    binding_through_update = False
    #: ``podStatusStrategy.PrepareForUpdate``: old kubelets corrupted ownerReferences through
    #: ``pods/status``, which broke garbage collection, so the endpoint may not touch them.
    status_resets_metadata = ("ownerReferences",)

    def default(self, obj: Object) -> None:
        spec = spec_of(obj)
        default_pod_spec(spec)
        default_pod_only(spec)

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(spec_of(obj))}

    def deletion_grace_period(self, obj: Object, requested: int | None) -> int:
        """``CheckGracefulDelete``: a pod no kubelet runs (not scheduled, or already finished) has
        nobody to wait for and goes at once (``pkg/registry/core/pod/strategy.go``)."""
        period = super().deletion_grace_period(obj, requested)
        if not spec_of(obj).get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        return period

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodCreate``: the pod, then what only a *new* pod may not have."""
        errors = self._validate_metadata_and_spec(obj, namespaced=namespaced)
        spec = as_dict(obj.get("spec"))
        if as_list(spec.get("ephemeralContainers")):
            errors.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and as_list(spec.get("schedulingGates")):
            errors.append(
                forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")
            )
        return errors

    def _validate_metadata_and_spec(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``validatePodMetadataAndSpec``: what a pod must satisfy on create and on every update."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        spec = as_dict(obj.get("spec"))
        errors += validate_pod_spec(spec, "spec", is_pod=True)
        if not as_str(spec.get("serviceAccountName")):
            for vi, volume in enumerate(as_list(spec.get("volumes"))):
                for si, source in enumerate(
                    as_list(as_dict(as_dict(volume).get("projected")).get("sources"))
                ):
                    if as_dict(source).get("serviceAccountToken") is not None:
                        errors.append(
                            forbidden(
                                f"spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken",
                                "must not be specified when serviceAccountName is not set",
                            )
                        )
        for field in ("containers", "initContainers"):
            for i, container in enumerate(as_list(spec.get(field))):
                image = as_str(as_dict(container).get("image"))
                if image != image.strip():
                    errors.append(
                        invalid(
                            f"spec.{field}[{i}].image", image, "must not have leading or trailing whitespace"
                        )
                    )
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodUpdate``: metadata, the whole pod again, then what may not change."""
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        errors += self._validate_metadata_and_spec(obj, namespaced=namespaced)
        return errors + validate_pod_update(obj, old, allow_binding=self.binding_through_update)

    def prepare_for_status_update(self, obj: Object, old: Object) -> None:
        status = as_dict(obj.get("status"))
        super().prepare_for_status_update(obj, old)
        old_status = as_dict(old.get("status"))
        if not status.get("qosClass") and old_status.get("qosClass"):
            status["qosClass"] = old_status["qosClass"]  # old kubelets dropped it: keep it immutable
        if not status.get("observedGeneration") and old_status.get("observedGeneration"):
            status["observedGeneration"] = old_status["observedGeneration"]

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return super().validate_status_update(obj, old, namespaced=namespaced) + validate_pod_status_update(
            obj, old
        )


class PodBindingStrategy(PodStrategy):
    """``pods/binding`` (``pkg/registry/core/pod/storage/storage.go`` ``assignPod``): only ``spec.nodeName``
    (and the PodScheduled condition) change; the rest of the pod is the stored one."""

    binding_through_update = True

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        node_name = as_dict(obj.get("spec")).get("nodeName")
        conditions = as_dict(obj.get("status")).get("conditions")
        obj.clear()
        obj.update(deep_copy(old))
        spec_of(obj)["nodeName"] = node_name
        if conditions is not None:
            obj.setdefault("status", {})["conditions"] = conditions
        if old.get("spec") != obj.get("spec"):
            obj["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        node_name = as_str(as_dict(obj.get("spec")).get("nodeName"))
        if not node_name:
            return [required("target.name")]
        return [invalid("target.name", node_name, m) for m in is_dns1123_subdomain(node_name)]


__all__ = [
    "POD_UPDATE_FORBIDDEN",
    "PodBindingStrategy",
    "PodStrategy",
    "default_container",
    "default_pod_only",
    "default_pod_spec",
    "default_resource_list",
    "image_tag",
    "is_config_map_key",
    "pod_qos_class",
    "validate_affinity",
    "validate_containers",
    "validate_env",
    "validate_pod_spec",
    "validate_pod_template_meta",
    "validate_pod_update",
    "validate_resource_requirements",
    "validate_taint_effect",
    "validate_tolerations",
    "validate_volumes",
]
