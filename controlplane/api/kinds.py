"""The built-in kinds this API server serves, with upstream's names, scopes, verbs and storage keys.

Each entry is what discovery publishes for the resource (compare ``kubectl api-resources`` against a
real cluster) plus where it is stored. Per-kind rules are strategies; kinds without special rules use
the plain ``Strategy``.
"""

from __future__ import annotations

from controlplane.api.resources import CREATE_ONLY, CRUD, ResourceRegistry, ResourceType, Subresource
from controlplane.api.strategy import Strategy
from controlplane.api.validation import is_dns1123_label

RW = ("get", "patch", "update")


class StatusStrategy(Strategy):
    """Kinds whose ``status`` is written only through ``/status`` (by controllers and kubelets)."""

    status_subresource = True


class WorkloadStrategy(StatusStrategy):
    """Deployments, ReplicaSets: status subresource and a generation that counts spec changes."""

    tracks_generation = True


class PodStrategy(StatusStrategy):
    """Pods: graceful deletion; status from the kubelet only (``pkg/registry/core/pod/strategy.go``)."""

    graceful_deletion = True

    def reset_status(self, obj: dict[str, object]) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}


class NamespaceStrategy(StatusStrategy):
    """Namespaces: DNS-label names, phase Active, and the ``kubernetes`` finalizer."""

    name_validator = staticmethod(is_dns1123_label)

    def reset_status(self, obj: dict[str, object]) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("finalizers", ["kubernetes"])


class ServiceStrategy(StatusStrategy):
    name_validator = staticmethod(is_dns1123_label)


def builtin_types() -> ResourceRegistry:
    """Every resource the lab's API server serves, in discovery order."""
    pod_subresources = (
        Subresource("status", RW),
        Subresource("binding", CREATE_ONLY, kind="Binding"),
        Subresource("log", ("get",)),
        Subresource("eviction", CREATE_ONLY, kind="Eviction", group="policy", version="v1"),
    )
    scale = Subresource("scale", RW, kind="Scale", group="autoscaling", version="v1")
    core = [
        ResourceType(
            "",
            "v1",
            "Namespace",
            "namespaces",
            "namespace",
            False,
            CRUD,
            ("ns",),
            subresources=(Subresource("status", RW), Subresource("finalize", ("update",))),
            storage_prefix="/registry/namespaces",
            strategy=NamespaceStrategy(),
        ),
        ResourceType(
            "",
            "v1",
            "Pod",
            "pods",
            "pod",
            True,
            CRUD,
            ("po",),
            ("all",),
            pod_subresources,
            "/registry/pods",
            PodStrategy(),
        ),
        ResourceType(
            "",
            "v1",
            "Node",
            "nodes",
            "node",
            False,
            CRUD,
            ("no",),
            subresources=(Subresource("status", RW),),
            storage_prefix="/registry/minions",
            strategy=StatusStrategy(),
        ),
        ResourceType(
            "",
            "v1",
            "Service",
            "services",
            "service",
            True,
            CRUD,
            ("svc",),
            ("all",),
            (Subresource("status", RW),),
            "/registry/services/specs",
            ServiceStrategy(),
        ),
        ResourceType(
            "",
            "v1",
            "Endpoints",
            "endpoints",
            "endpoints",
            True,
            CRUD,
            ("ep",),
            storage_prefix="/registry/services/endpoints",
        ),
        ResourceType(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            "configmap",
            True,
            CRUD,
            ("cm",),
            storage_prefix="/registry/configmaps",
        ),
        ResourceType("", "v1", "Secret", "secrets", "secret", True, CRUD, storage_prefix="/registry/secrets"),
        ResourceType(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            True,
            CRUD,
            ("sa",),
            subresources=(
                Subresource(
                    "token", CREATE_ONLY, kind="TokenRequest", group="authentication.k8s.io", version="v1"
                ),
            ),
            storage_prefix="/registry/serviceaccounts",
        ),
        ResourceType(
            "", "v1", "Event", "events", "event", True, CRUD, ("ev",), storage_prefix="/registry/events"
        ),
    ]
    apps = [
        ResourceType(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            "deployment",
            True,
            CRUD,
            ("deploy",),
            ("all",),
            (Subresource("status", RW), scale),
            "/registry/deployments",
            WorkloadStrategy(),
        ),
        ResourceType(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            "replicaset",
            True,
            CRUD,
            ("rs",),
            ("all",),
            (Subresource("status", RW), scale),
            "/registry/replicasets",
            WorkloadStrategy(),
        ),
    ]
    others = [
        ResourceType(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            "lease",
            True,
            CRUD,
            storage_prefix="/registry/leases",
        ),
        ResourceType(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            "event",
            True,
            CRUD,
            ("ev",),
            storage_prefix="/registry/events",
        ),
        ResourceType(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            "endpointslice",
            True,
            CRUD,
            storage_prefix="/registry/endpointslices",
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            "role",
            True,
            CRUD,
            storage_prefix="/registry/roles",
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            True,
            CRUD,
            storage_prefix="/registry/rolebindings",
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            False,
            CRUD,
            storage_prefix="/registry/clusterroles",
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            False,
            CRUD,
            storage_prefix="/registry/clusterrolebindings",
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            "selfsubjectaccessreview",
            False,
            CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            "selfsubjectrulesreview",
            False,
            CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            "subjectaccessreview",
            False,
            CREATE_ONLY,
        ),
        ResourceType(
            "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", "tokenreview", False, CREATE_ONLY
        ),
        ResourceType(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            "selfsubjectreview",
            False,
            CREATE_ONLY,
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            False,
            CRUD,
            categories=("api-extensions",),
            storage_prefix="/registry/mutatingwebhookconfigurations",
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            False,
            CRUD,
            categories=("api-extensions",),
            storage_prefix="/registry/validatingwebhookconfigurations",
        ),
        ResourceType(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            "flowschemas",
            "flowschema",
            False,
            CRUD,
            subresources=(Subresource("status", RW),),
            storage_prefix="/registry/flowschemas",
            strategy=StatusStrategy(),
        ),
        ResourceType(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            "prioritylevelconfigurations",
            "prioritylevelconfiguration",
            False,
            CRUD,
            subresources=(Subresource("status", RW),),
            storage_prefix="/registry/prioritylevelconfigurations",
            strategy=StatusStrategy(),
        ),
    ]
    return ResourceRegistry(core + apps + others)
