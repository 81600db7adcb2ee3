"""Pods: defaults, validation and the rules for changing a pod once it exists.

A pod is the unit the scheduler places and the kubelet runs. This package is everything the API
server knows about pods that the generic registry does not, one concept per module, in the order a
create request meets them:

- ``images``: image references and the tag that decides ``imagePullPolicy``;
- ``defaults``: what the API server fills in (``pkg/apis/core/v1/defaults.go``);
- ``qos``: the QoS class a new pod's status starts with (``pkg/apis/core/helper/qos``);
- ``resources``, ``env``, ``volumes``, ``containers``, ``scheduling``: the rules for each part of a
  pod spec, and ``spec``, ``ValidatePodSpec``, which runs them all (``pkg/apis/core/validation/
  validation.go``); workload templates (``workloads``) are validated by the same functions;
- ``updates``: why most of a pod's spec is immutable once created (``ValidatePodUpdate``);
- ``status``: what ``pods/status`` checks in a kubelet's report (``ValidatePodStatusUpdate``);
- ``strategy``: ``PodStrategy`` and ``PodBindingStrategy``, the registry's hooks that tie the rest
  together (``pkg/registry/core/pod/strategy.go``): graceful deletion, status, binding.

Import from the package (``from controlplane.api.strategies.pods import PodStrategy``): it re-exports
every public name of its modules, so callers need not know which module holds what.
"""

from __future__ import annotations

from controlplane.api.strategies.pods.containers import (
    PROTOCOLS,
    PULL_POLICIES,
    TERMINATION_MESSAGE_POLICIES,
    URI_SCHEMES,
    validate_containers,
    validate_init_containers,
)
from controlplane.api.strategies.pods.defaults import (
    DEFAULT_MODE,
    DEFAULT_TERMINATION_MESSAGE_PATH,
    default_container,
    default_pod_only,
    default_pod_spec,
    default_resource_list,
    default_volume,
)
from controlplane.api.strategies.pods.env import (
    ENV_FIELD_PATHS,
    RESOURCE_FIELD_PATHS,
    is_config_map_key,
    is_relaxed_env_var_name,
    validate_env,
    validate_env_from,
)
from controlplane.api.strategies.pods.images import image_tag
from controlplane.api.strategies.pods.qos import pod_qos_class
from controlplane.api.strategies.pods.resources import (
    STANDARD_CONTAINER_RESOURCES,
    STANDARD_RESOURCES,
    validate_resource_requirements,
)
from controlplane.api.strategies.pods.scheduling import (
    TAINT_EFFECTS,
    TOLERATION_OPERATORS,
    validate_affinity,
    validate_taint_effect,
    validate_tolerations,
)
from controlplane.api.strategies.pods.spec import (
    DNS_POLICIES,
    MAX_INT32,
    PREEMPTION_POLICIES,
    RESTART_POLICIES,
    validate_pod_spec,
    validate_pod_template_meta,
)
from controlplane.api.strategies.pods.status import validate_pod_status_update
from controlplane.api.strategies.pods.strategy import PodBindingStrategy, PodStrategy
from controlplane.api.strategies.pods.updates import POD_UPDATE_FORBIDDEN, validate_pod_update
from controlplane.api.strategies.pods.volumes import (
    FILE_MODE_ERROR,
    HOST_PATH_TYPES,
    MOUNT_PROPAGATIONS,
    VOLUME_SOURCES,
    validate_volumes,
)

__all__ = [
    "DEFAULT_MODE",
    "DEFAULT_TERMINATION_MESSAGE_PATH",
    "DNS_POLICIES",
    "ENV_FIELD_PATHS",
    "FILE_MODE_ERROR",
    "HOST_PATH_TYPES",
    "MAX_INT32",
    "MOUNT_PROPAGATIONS",
    "POD_UPDATE_FORBIDDEN",
    "PREEMPTION_POLICIES",
    "PROTOCOLS",
    "PULL_POLICIES",
    "RESOURCE_FIELD_PATHS",
    "RESTART_POLICIES",
    "STANDARD_CONTAINER_RESOURCES",
    "STANDARD_RESOURCES",
    "TAINT_EFFECTS",
    "TERMINATION_MESSAGE_POLICIES",
    "TOLERATION_OPERATORS",
    "URI_SCHEMES",
    "VOLUME_SOURCES",
    "PodBindingStrategy",
    "PodStrategy",
    "default_container",
    "default_pod_only",
    "default_pod_spec",
    "default_resource_list",
    "default_volume",
    "image_tag",
    "is_config_map_key",
    "is_relaxed_env_var_name",
    "pod_qos_class",
    "validate_affinity",
    "validate_containers",
    "validate_env",
    "validate_env_from",
    "validate_init_containers",
    "validate_pod_spec",
    "validate_pod_status_update",
    "validate_pod_template_meta",
    "validate_pod_update",
    "validate_resource_requirements",
    "validate_taint_effect",
    "validate_tolerations",
    "validate_volumes",
]
