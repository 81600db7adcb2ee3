"""The kinds the built-in controllers watch and own, named once: a ``Kind`` says where the API serves a
resource (group, version, plural) and what its objects call themselves in ``ownerReferences``."""

from __future__ import annotations

from typing import Final

from controlplane.client.manager import Kind

PODS: Final = Kind("", "v1", "pods", "Pod")
NODES: Final = Kind("", "v1", "nodes", "Node")
NAMESPACES: Final = Kind("", "v1", "namespaces", "Namespace")
SERVICES: Final = Kind("", "v1", "services", "Service")
ENDPOINTS: Final = Kind("", "v1", "endpoints", "Endpoints")
SERVICEACCOUNTS: Final = Kind("", "v1", "serviceaccounts", "ServiceAccount")
CONFIGMAPS: Final = Kind("", "v1", "configmaps", "ConfigMap")
LEASES: Final = Kind("coordination.k8s.io", "v1", "leases", "Lease")
ENDPOINT_SLICES: Final = Kind("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
DEPLOYMENTS: Final = Kind("apps", "v1", "deployments", "Deployment")
REPLICASETS: Final = Kind("apps", "v1", "replicasets", "ReplicaSet")
DAEMONSETS: Final = Kind("apps", "v1", "daemonsets", "DaemonSet")
STATEFULSETS: Final = Kind("apps", "v1", "statefulsets", "StatefulSet")
CONTROLLER_REVISIONS: Final = Kind("apps", "v1", "controllerrevisions", "ControllerRevision")
JOBS: Final = Kind("batch", "v1", "jobs", "Job")
CRONJOBS: Final = Kind("batch", "v1", "cronjobs", "CronJob")
REPLICATION_CONTROLLERS: Final = Kind("", "v1", "replicationcontrollers", "ReplicationController")
PERSISTENT_VOLUMES: Final = Kind("", "v1", "persistentvolumes", "PersistentVolume")
PERSISTENT_VOLUME_CLAIMS: Final = Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
STORAGE_CLASSES: Final = Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass")
PODDISRUPTIONBUDGETS: Final = Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
CERTIFICATE_SIGNING_REQUESTS: Final = Kind(
    "certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest"
)
HORIZONTAL_POD_AUTOSCALERS: Final = Kind(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"
)
