"""Per-kind strategies: what the API server fills in, checks and refuses for each kind of object.

Upstream keeps one ``strategy.go`` per kind (``pkg/registry/<group>/<kind>/``), with the defaulting
in ``pkg/apis/<group>/v1/defaults.go`` and the rules in ``pkg/apis/<group>/validation``. The lab keeps
one module per *group of related kinds*, each opening with what its kinds are for and why their rules
are what they are:

- ``pods``: pod defaults, the pod-spec rules (shared with workload templates), why a pod's spec is
  (mostly) immutable, QoS classes;
- ``workloads``: Deployments and ReplicaSets (selectors, templates, rollout strategy, generation);
- ``daemonsets``: DaemonSets (update strategies, the template generation) and ControllerRevisions;
- ``statefulsets``: StatefulSets (pod management policies, partitions, the fields fixed at creation);
- ``autoscaling``: HorizontalPodAutoscalers in v2 and v1 (metric sources, behavior policies);
- ``batch``: Jobs and CronJobs (generated selectors, restart policies, cron schedules);
- ``replicationcontrollers``: core ReplicationControllers (map selectors defaulted from the template)
  and PodTemplates;
- ``storage``: PersistentVolumes, PersistentVolumeClaims (immutable once bound) and StorageClasses;
- ``networking``: Ingresses, IngressClasses and NetworkPolicies (stored and validated only);
- ``services``: Services (cluster IP and node port allocation), Endpoints, EndpointSlices;
- ``namespaces``, ``nodes``, ``serviceaccounts``, ``leases``;
- ``config``: ConfigMaps and Secrets (keys, base64, 1 MiB, secret types, ``immutable``);
- ``rbac``: Roles, ClusterRoles and their bindings;
- ``policy``: PodDisruptionBudgets (minAvailable or maxUnavailable, the disruption status);
- ``scheduling``: PriorityClasses (the reserved ``system-`` names, the user maximum, immutable values);
- ``events``: core ``v1`` and ``events.k8s.io/v1`` Events;
- ``certificates``: CertificateSigningRequests (the requester recorded by the server, ``/approval``
  and ``/status`` each changing one part);
- ``flowcontrol``: FlowSchemas and PriorityLevelConfigurations (API Priority and Fairness: unions
  that must agree with their ``type``, ``"*"`` alone, dealable queues, the mandatory objects' fixed
  specs).

``base`` holds ``Strategy``, the hooks the registry calls and the behaviour of a kind without special
rules (upstream's ``k8s.io/apiserver/pkg/registry/rest`` strategy interfaces). ``common`` holds what
the kinds here share: the base class (defaults before prepare), field paths, and values
rendered the way upstream's field errors print them, so that a 422 reads exactly like kube-apiserver's.
"""

from __future__ import annotations

from controlplane.api.strategies.autoscaling import (
    HorizontalPodAutoscalerStrategy,
    HorizontalPodAutoscalerV1Strategy,
)
from controlplane.api.strategies.batch import CronJobStrategy, JobStrategy
from controlplane.api.strategies.certificates import CertificateSigningRequestStrategy
from controlplane.api.strategies.common import UndecodableObject
from controlplane.api.strategies.config import ConfigMapStrategy, SecretStrategy
from controlplane.api.strategies.daemonsets import ControllerRevisionStrategy, DaemonSetStrategy
from controlplane.api.strategies.events import EventStrategy, EventsV1EventStrategy
from controlplane.api.strategies.flowcontrol import (
    FlowSchemaStrategy,
    PriorityLevelConfigurationStrategy,
)
from controlplane.api.strategies.leases import LeaseStrategy
from controlplane.api.strategies.namespaces import NamespaceFinalizeStrategy, NamespaceStrategy
from controlplane.api.strategies.networking import (
    IngressClassStrategy,
    IngressStrategy,
    NetworkPolicyStrategy,
)
from controlplane.api.strategies.nodes import NodeStrategy
from controlplane.api.strategies.pods import PodBindingStrategy, PodStrategy
from controlplane.api.strategies.policy import PodDisruptionBudgetStrategy
from controlplane.api.strategies.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from controlplane.api.strategies.replicationcontrollers import (
    PodTemplateStrategy,
    ReplicationControllerStrategy,
)
from controlplane.api.strategies.scheduling import PriorityClassStrategy
from controlplane.api.strategies.serviceaccounts import ServiceAccountStrategy
from controlplane.api.strategies.services import (
    Claim,
    EndpointSliceStrategy,
    EndpointsStrategy,
    ServiceStrategy,
)
from controlplane.api.strategies.statefulsets import StatefulSetStrategy
from controlplane.api.strategies.storage import (
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
    StorageClassStrategy,
)
from controlplane.api.strategies.workloads import DeploymentStrategy, ReplicaSetStrategy

__all__ = [
    "CertificateSigningRequestStrategy",
    "Claim",
    "ClusterRoleBindingStrategy",
    "ClusterRoleStrategy",
    "ConfigMapStrategy",
    "ControllerRevisionStrategy",
    "CronJobStrategy",
    "DaemonSetStrategy",
    "DeploymentStrategy",
    "EndpointSliceStrategy",
    "EndpointsStrategy",
    "EventStrategy",
    "EventsV1EventStrategy",
    "FlowSchemaStrategy",
    "HorizontalPodAutoscalerStrategy",
    "HorizontalPodAutoscalerV1Strategy",
    "IngressClassStrategy",
    "IngressStrategy",
    "JobStrategy",
    "LeaseStrategy",
    "NamespaceFinalizeStrategy",
    "NamespaceStrategy",
    "NetworkPolicyStrategy",
    "NodeStrategy",
    "PersistentVolumeClaimStrategy",
    "PersistentVolumeStrategy",
    "PodBindingStrategy",
    "PodDisruptionBudgetStrategy",
    "PodStrategy",
    "PodTemplateStrategy",
    "PriorityClassStrategy",
    "PriorityLevelConfigurationStrategy",
    "ReplicaSetStrategy",
    "ReplicationControllerStrategy",
    "RoleBindingStrategy",
    "RoleStrategy",
    "SecretStrategy",
    "ServiceAccountStrategy",
    "ServiceStrategy",
    "StatefulSetStrategy",
    "StorageClassStrategy",
    "UndecodableObject",
]
