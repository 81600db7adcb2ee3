"""The bootstrap policy: the ClusterRoles and ClusterRoleBindings every cluster starts with.

A fresh kube-apiserver creates (and on every start reconciles) upstream's default roles: its
``rbac/bootstrap-roles`` post-start hook. Among them:

- ``cluster-admin`` (everything), bound to the group ``system:masters``: that binding, not a special
  case, is why ``admin`` can do anything here (upstream also lets ``system:masters`` past every
  authorizer; Kubelab keeps it to the binding so students can see it, and delete it at their peril).
- ``admin``, ``edit``, ``view``: user-facing roles to bind in a namespace. They are **aggregated**:
  their rules are gathered from every ClusterRole labelled ``rbac.authorization.k8s.io/aggregate-to-
  admin`` (-edit, -view) ``: "true"`` (see :mod:`.aggregation`), so a CRD's author can extend them.
- ``system:basic-user``, ``system:discovery``, ``system:public-info-viewer``: what every
  authenticated user may do (ask what it may do; read discovery, ``/version`` and ``/healthz``).
- the components' roles: ``system:kube-scheduler`` (+ ``system:volume-scheduler``),
  ``system:kube-controller-manager``, ``system:node-proxier`` (kube-proxy), ``system:node`` (kubelets,
  whose binding has no subjects any more: the Node authorizer decides for them), ``system:monitoring``,
  and one ``system:controller:<name>`` role per controller of kube-controller-manager.

Each object carries the label ``kubernetes.io/bootstrapping: rbac-defaults`` and the annotation
``rbac.authorization.kubernetes.io/autoupdate: "true"``: on start, missing rules and subjects are
added back; set the annotation to ``"false"`` to keep your own changes.

**Kubelab deviation: the controller manager's rights.** Upstream kube-controller-manager runs with
``--use-service-account-credentials=true``: each controller uses its own ServiceAccount
(``kube-system/replicaset-controller``...) bound to its ``system:controller:<name>`` role. Kubelab's
controller manager runs every controller with one credential, ``system:kube-controller-manager``
(upstream's ``--use-service-account-credentials=false``), which upstream says must then be granted the
controllers' roles. So each ``system:controller:*`` binding of a controller Kubelab runs
(``KCM_CONTROLLER_ROLES``) names that user besides the upstream ServiceAccount.

Data: ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`` and ``controller_policy.go``, as
generated in ``testdata/cluster-roles.yaml`` and ``controller-roles.yaml`` (kubernetes commit
025f2834a128798cef30018a5e6a6ae82b5ad885). Left out: the feature-gated roles, and the namespaced
Roles of ``namespace_policy.go`` (leader locking on ConfigMaps, the extension API servers'
authentication reader, bootstrap signers), which serve things Kubelab does not run. The reconciliation
is ``pkg/registry/rbac/reconciliation`` (``computeReconciledRole``, without removing extra permissions).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.identity import (
    AUTHENTICATED,
    KUBE_CONTROLLER_MANAGER,
    KUBE_PROXY,
    KUBE_SCHEDULER,
    SERVICE_ACCOUNTS,
    SYSTEM_MASTERS,
    UNAUTHENTICATED,
)

GROUP: Final = "rbac.authorization.k8s.io"
API_VERSION: Final = f"{GROUP}/v1"
BOOTSTRAP_LABEL: Final = ("kubernetes.io/bootstrapping", "rbac-defaults")
AUTOUPDATE: Final = "rbac.authorization.kubernetes.io/autoupdate"
AGGREGATE_TO: Final = "rbac.authorization.k8s.io/aggregate-to-"
CONTROLLER_PREFIX: Final = "system:controller:"
#: The group ``system:monitoring`` (upstream ``user.MonitoringGroup``).
MONITORING: Final = "system:monitoring"

READ: Final = "get list watch"
WRITE: Final = "create delete deletecollection patch update"
READ_WRITE: Final = f"{READ} {WRITE}"

CORE, APPS, AUTHN, AUTHZ, AUTOSCALING, BATCH = (
    "",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
)
CERTS, COORD, DISCOVERY, EVENTS, EXT, NETWORKING = (
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "networking.k8s.io",
)
POLICY, STORAGE, NODE_GROUP, ADMISSION_REG = (
    "policy",
    "storage.k8s.io",
    "node.k8s.io",
    "admissionregistration.k8s.io",
)


def rule(verbs: str, groups: Sequence[str], resources: str, names: str = "") -> dict[str, list[str]]:
    """A resource rule, as upstream's ``NewRule(verbs...).Groups(...).Resources(...).Names(...)``:
    verbs, resources and names sorted, groups in the order given."""
    built = {
        "verbs": sorted(set(verbs.split())),
        "apiGroups": list(groups),
        "resources": sorted(set(resources.split())),
    }
    if names:
        built["resourceNames"] = sorted(names.split())
    return built


def urls(verbs: str, paths: str) -> dict[str, list[str]]:
    """A non-resource rule (``NewRule(verbs...).URLs(...)``)."""
    return {"nonResourceURLs": sorted(paths.split()), "verbs": sorted(verbs.split())}


def events_rule() -> dict[str, list[str]]:
    """upstream ``eventsRule()``."""
    return rule("create update patch", (CORE, EVENTS), "events")


def _role(
    name: str,
    rules: Iterable[Mapping[str, Any]] = (),
    *,
    labels: Mapping[str, str] | None = None,
    aggregate_from: str = "",
) -> Object:
    role: Object = {
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1], **(labels or {})},
            "annotations": {AUTOUPDATE: "true"},
        },
    }
    if aggregate_from:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]
        }
        role["rules"] = []
    else:
        role["rules"] = [dict(r) for r in rules]
    return role


def _aggregated_into(target: str) -> dict[str, str]:
    return {AGGREGATE_TO + target: "true"}


def _subject(kind: str, name: str, namespace: str = "") -> dict[str, str]:
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": namespace}
    return {"apiGroup": GROUP, "kind": kind, "name": name}


def _binding(name: str, subjects: Iterable[Mapping[str, str]], role: str = "") -> Object:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1]},
            "annotations": {AUTOUPDATE: "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role or name},
        "subjects": [dict(s) for s in subjects],
    }


def cluster_roles() -> list[Object]:
    """Upstream's ``ClusterRoles()`` (``testdata/cluster-roles.yaml``)."""
    approver = "system:certificates.k8s.io:"
    return [
        _role("cluster-admin", [rule("*", ("*",), "*"), urls("*", "*")]),
        _role("admin", aggregate_from="admin"),
        _role("edit", labels=_aggregated_into("admin"), aggregate_from="edit"),
        _role("view", labels=_aggregated_into("edit"), aggregate_from="view"),
        _role(
            "system:aggregate-to-admin",
            [
                rule("create", (AUTHZ,), "localsubjectaccessreviews"),
                rule(READ_WRITE, (GROUP,), "rolebindings roles"),
            ],
            labels=_aggregated_into("admin"),
        ),
        _role(
            "system:aggregate-to-edit",
            [
                rule(
                    READ,
                    (CORE,),
                    "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy",
                ),
                rule("impersonate", (CORE,), "serviceaccounts"),
                rule(WRITE, (CORE,), "pods pods/attach pods/exec pods/portforward pods/proxy"),
                rule("create", (CORE,), "pods/eviction"),
                rule(
                    WRITE,
                    (CORE,),
                    "configmaps events persistentvolumeclaims replicationcontrollers "
                    "replicationcontrollers/scale secrets serviceaccounts services services/proxy",
                ),
                rule("create", (CORE,), "serviceaccounts/token"),
                rule(
                    WRITE,
                    (APPS,),
                    "daemonsets deployments deployments/rollback deployments/scale replicasets "
                    "replicasets/scale statefulsets statefulsets/scale",
                ),
                rule(WRITE, (AUTOSCALING,), "horizontalpodautoscalers"),
                rule(WRITE, (BATCH,), "cronjobs jobs"),
                rule(
                    WRITE,
                    (EXT,),
                    "daemonsets deployments deployments/rollback deployments/scale ingresses "
                    "networkpolicies replicasets replicasets/scale replicationcontrollers/scale",
                ),
                rule(WRITE, (POLICY,), "poddisruptionbudgets"),
                rule(WRITE, (NETWORKING,), "ingresses networkpolicies"),
                rule(READ_WRITE, (COORD,), "leases"),
            ],
            labels=_aggregated_into("edit"),
        ),
        _role(
            "system:aggregate-to-view",
            [
                rule(
                    READ,
                    (CORE,),
                    "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods "
                    "replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                    "services/status",
                ),
                rule(
                    READ,
                    (CORE,),
                    "bindings events limitranges namespaces/status pods/log pods/status "
                    "replicationcontrollers/status resourcequotas resourcequotas/status",
                ),
                rule(READ, (CORE,), "namespaces"),
                rule(READ, (DISCOVERY,), "endpointslices"),
                rule(
                    READ,
                    (APPS,),
                    "controllerrevisions daemonsets daemonsets/status deployments deployments/scale "
                    "deployments/status replicasets replicasets/scale replicasets/status statefulsets "
                    "statefulsets/scale statefulsets/status",
                ),
                rule(READ, (AUTOSCALING,), "horizontalpodautoscalers horizontalpodautoscalers/status"),
                rule(READ, (BATCH,), "cronjobs cronjobs/status jobs jobs/status"),
                rule(
                    READ,
                    (EXT,),
                    "daemonsets daemonsets/status deployments deployments/scale deployments/status "
                    "ingresses ingresses/status networkpolicies replicasets replicasets/scale "
                    "replicasets/status replicationcontrollers/scale",
                ),
                rule(READ, (POLICY,), "poddisruptionbudgets poddisruptionbudgets/status"),
                rule(READ, (NETWORKING,), "ingresses ingresses/status networkpolicies"),
            ],
            labels=_aggregated_into("view"),
        ),
        _role(
            "system:auth-delegator",
            [rule("create", (AUTHN,), "tokenreviews"), rule("create", (AUTHZ,), "subjectaccessreviews")],
        ),
        _role(
            "system:basic-user",
            [
                rule("create", (AUTHZ,), "selfsubjectaccessreviews selfsubjectrulesreviews"),
                rule("create", (AUTHN,), "selfsubjectreviews"),
            ],
        ),
        _role(
            approver + "certificatesigningrequests:nodeclient",
            [rule("create", (CERTS,), "certificatesigningrequests/nodeclient")],
        ),
        _role(
            approver + "certificatesigningrequests:selfnodeclient",
            [rule("create", (CERTS,), "certificatesigningrequests/selfnodeclient")],
        ),
        _role(
            approver + "kube-apiserver-client-approver",
            [rule("approve", (CERTS,), "signers", "kubernetes.io/kube-apiserver-client")],
        ),
        _role(
            approver + "kube-apiserver-client-kubelet-approver",
            [rule("approve", (CERTS,), "signers", "kubernetes.io/kube-apiserver-client-kubelet")],
        ),
        _role(
            approver + "kubelet-serving-approver",
            [rule("approve", (CERTS,), "signers", "kubernetes.io/kubelet-serving")],
        ),
        _role(
            approver + "legacy-unknown-approver",
            [rule("approve", (CERTS,), "signers", "kubernetes.io/legacy-unknown")],
        ),
        _role(
            "system:discovery",
            [
                urls(
                    "get",
                    "/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz /version "
                    "/version/",
                )
            ],
        ),
        _role(
            "system:heapster",
            [rule(READ, (CORE,), "events namespaces nodes pods"), rule(READ, (EXT,), "deployments")],
        ),
        _role("system:kube-aggregator", [rule(READ, (CORE,), "endpoints services")]),
        _role(
            "system:kube-controller-manager",
            [
                events_rule(),
                rule("create", (COORD,), "leases"),
                rule("get update", (COORD,), "leases", "kube-controller-manager"),
                rule("create", (CORE,), "secrets serviceaccounts"),
                rule("delete", (CORE,), "secrets"),
                rule("get", (CORE,), "configmaps namespaces secrets serviceaccounts"),
                rule("update", (CORE,), "secrets serviceaccounts"),
                rule("create", (AUTHN,), "tokenreviews"),
                rule("create", (AUTHZ,), "subjectaccessreviews"),
                rule("list watch", ("*",), "*"),
                rule("create", (CORE,), "serviceaccounts/token"),
            ],
        ),
        _role("system:kube-dns", [rule("list watch", (CORE,), "endpoints services")]),
        _role(
            "system:kube-scheduler",
            [
                events_rule(),
                rule("create", (COORD,), "leases"),
                rule("get update", (COORD,), "leases", "kube-scheduler"),
                rule(READ, (CORE,), "nodes"),
                rule("delete get list watch", (CORE,), "pods"),
                rule("create", (CORE,), "bindings pods/binding"),
                rule("patch update", (CORE,), "pods/status"),
                rule(READ, (CORE,), "replicationcontrollers services"),
                rule(READ, (APPS, EXT), "replicasets"),
                rule(READ, (APPS,), "statefulsets"),
                rule(READ, (POLICY,), "poddisruptionbudgets"),
                rule(READ, (CORE,), "persistentvolumeclaims persistentvolumes"),
                rule("create", (AUTHN,), "tokenreviews"),
                rule("create", (AUTHZ,), "subjectaccessreviews"),
                rule(READ, (STORAGE,), "csinodes"),
                rule(READ, (CORE,), "namespaces"),
                rule(READ, (STORAGE,), "csidrivers"),
                rule(READ, (STORAGE,), "csistoragecapacities"),
            ],
        ),
        _role(
            "system:kubelet-api-admin",
            [
                rule(READ, (CORE,), "nodes"),
                rule("proxy", (CORE,), "nodes"),
                rule("*", (CORE,), "nodes/log nodes/metrics nodes/proxy nodes/stats"),
            ],
        ),
        _role(
            "system:monitoring",
            [urls("get", "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz /readyz/*")],
        ),
        _role(
            "system:node",
            [
                rule("create", (AUTHN,), "tokenreviews"),
                rule("create", (AUTHZ,), "localsubjectaccessreviews subjectaccessreviews"),
                rule(READ, (CORE,), "services"),
                rule("create get list watch", (CORE,), "nodes"),
                rule("patch update", (CORE,), "nodes/status"),
                rule("patch update", (CORE,), "nodes"),
                rule("create patch update", (CORE,), "events"),
                rule(READ, (CORE,), "pods"),
                rule("create delete", (CORE,), "pods"),
                rule("patch update", (CORE,), "pods/status"),
                rule("create", (CORE,), "pods/eviction"),
                rule(READ, (CORE,), "configmaps secrets"),
                rule("get", (CORE,), "persistentvolumeclaims persistentvolumes"),
                rule("get", (CORE,), "endpoints"),
                rule("create get list watch", (CERTS,), "certificatesigningrequests"),
                rule("create delete get patch update", (COORD,), "leases"),
                rule("get", (STORAGE,), "volumeattachments"),
                rule("create", (CORE,), "serviceaccounts/token"),
                rule("get patch update", (CORE,), "persistentvolumeclaims/status"),
                rule(READ, (STORAGE,), "csidrivers"),
                rule("create delete get patch update", (STORAGE,), "csinodes"),
                rule(READ, (NODE_GROUP,), "runtimeclasses"),
            ],
        ),
        _role(
            "system:node-bootstrapper",
            [rule("create get list watch", (CERTS,), "certificatesigningrequests")],
        ),
        _role(
            "system:node-problem-detector",
            [rule("get", (CORE,), "nodes"), rule("patch", (CORE,), "nodes/status"), events_rule()],
        ),
        _role(
            "system:node-proxier",
            [
                rule("list watch", (CORE,), "endpoints services"),
                rule(READ, (CORE,), "nodes"),
                events_rule(),
                rule("list watch", (DISCOVERY,), "endpointslices"),
            ],
        ),
        _role(
            "system:persistent-volume-provisioner",
            [
                rule("create delete get list watch", (CORE,), "persistentvolumes"),
                rule("get list update watch", (CORE,), "persistentvolumeclaims"),
                rule(READ, (STORAGE,), "storageclasses"),
                rule("watch", (CORE,), "events"),
                events_rule(),
            ],
        ),
        _role("system:public-info-viewer", [urls("get", "/healthz /livez /readyz /version /version/")]),
        _role(
            "system:service-account-issuer-discovery",
            [urls("get", "/.well-known/openid-configuration /openid/v1/jwks")],
        ),
        _role(
            "system:volume-scheduler",
            [
                rule("get list patch update watch", (CORE,), "persistentvolumes"),
                rule(READ, (STORAGE,), "storageclasses"),
                rule("get list patch update watch", (CORE,), "persistentvolumeclaims"),
            ],
        ),
    ]


def _controller(name: str, *rules: Mapping[str, Any]) -> Object:
    return _role(CONTROLLER_PREFIX + name, rules)


def controller_roles() -> list[Object]:
    """Upstream's ``ControllerRoles()`` (``controller_policy.go``; feature-gated ones left out)."""
    return [
        _controller(
            "attachdetach-controller",
            rule("list watch", (CORE,), "persistentvolumes persistentvolumeclaims"),
            rule(READ, (CORE,), "nodes"),
            rule("patch update", (CORE,), "nodes/status"),
            rule("list watch", (CORE,), "pods"),
            events_rule(),
            rule("get create delete list watch", (STORAGE,), "volumeattachments"),
            rule(READ, (STORAGE,), "csidrivers"),
            rule(READ, (STORAGE,), "csinodes"),
        ),
        _controller(
            "clusterrole-aggregation-controller",
            rule("escalate get list watch update patch", (GROUP,), "clusterroles"),
        ),
        _controller(
            "cronjob-controller",
            rule("get list watch update", (BATCH,), "cronjobs"),
            rule("get list watch create update delete patch", (BATCH,), "jobs"),
            rule("update", (BATCH,), "cronjobs/status"),
            rule("update", (BATCH,), "cronjobs/finalizers"),
            rule("list watch delete", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "daemon-set-controller",
            rule(READ, (EXT, APPS), "daemonsets"),
            rule("update", (EXT, APPS), "daemonsets/status"),
            rule("update", (EXT, APPS), "daemonsets/finalizers"),
            rule("list watch", (CORE,), "nodes"),
            rule("list watch create delete patch", (CORE,), "pods"),
            rule("create", (CORE,), "pods/binding"),
            rule("get list watch create delete update patch", (APPS,), "controllerrevisions"),
            events_rule(),
        ),
        _controller(
            "deployment-controller",
            rule("get list watch update", (EXT, APPS), "deployments"),
            rule("update", (EXT, APPS), "deployments/status"),
            rule("update", (EXT, APPS), "deployments/finalizers"),
            rule("get list watch create update patch delete", (APPS, EXT), "replicasets"),
            rule("get list watch update", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "disruption-controller",
            rule(READ, (EXT, APPS), "deployments"),
            rule(READ, (APPS, EXT), "replicasets"),
            rule(READ, (CORE,), "replicationcontrollers"),
            rule(READ, (POLICY,), "poddisruptionbudgets"),
            rule(READ, (APPS,), "statefulsets"),
            rule("update", (POLICY,), "poddisruptionbudgets/status"),
            rule("patch update", (CORE,), "pods/status"),
            rule("get", ("*",), "*/scale"),
            events_rule(),
        ),
        _controller(
            "endpoint-controller",
            rule(READ, (CORE,), "services pods"),
            rule("get list watch create update delete", (CORE,), "endpoints"),
            rule("create", (CORE,), "endpoints/restricted"),
            events_rule(),
        ),
        _controller(
            "endpointslice-controller",
            rule(READ, (CORE,), "services pods nodes"),
            rule("update", (CORE,), "services/finalizers"),
            rule("get list watch create update delete", (DISCOVERY,), "endpointslices"),
            events_rule(),
        ),
        _controller(
            "endpointslicemirroring-controller",
            rule(READ, (CORE,), "services endpoints"),
            rule("update", (CORE,), "services/finalizers"),
            rule("update", (CORE,), "endpoints/finalizers"),
            rule("get list watch create update delete", (DISCOVERY,), "endpointslices"),
            events_rule(),
        ),
        _controller(
            "expand-controller",
            rule("get list watch update patch", (CORE,), "persistentvolumes"),
            rule("update patch", (CORE,), "persistentvolumeclaims/status"),
            rule(READ, (CORE,), "persistentvolumeclaims"),
            events_rule(),
            rule("get", (CORE,), "services"),
        ),
        _controller(
            "ephemeral-volume-controller",
            rule(READ, (CORE,), "pods"),
            rule("update", (CORE,), "pods/finalizers"),
            rule("get list watch create", (CORE,), "persistentvolumeclaims"),
            events_rule(),
        ),
        _controller(
            "generic-garbage-collector",
            rule("get list watch patch update delete", ("*",), "*"),
            events_rule(),
        ),
        _controller(
            "horizontal-pod-autoscaler",
            rule(READ, (AUTOSCALING,), "horizontalpodautoscalers"),
            rule("update", (AUTOSCALING,), "horizontalpodautoscalers/status"),
            rule("get update", ("*",), "*/scale"),
            rule("list watch", (CORE,), "pods"),
            rule("list watch", ("metrics.k8s.io",), "pods"),
            rule(READ, ("custom.metrics.k8s.io",), "*"),
            rule(READ, ("external.metrics.k8s.io",), "*"),
            events_rule(),
        ),
        _controller(
            "job-controller",
            rule("get list watch update patch", (BATCH,), "jobs"),
            rule("update", (BATCH,), "jobs/status"),
            rule("update", (BATCH,), "jobs/finalizers"),
            rule("list watch create delete patch", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "namespace-controller",
            rule("get list watch delete", (CORE,), "namespaces"),
            rule("update", (CORE,), "namespaces/finalize namespaces/status"),
            rule("get list watch delete deletecollection", ("*",), "*"),
        ),
        _controller(
            "node-controller",
            rule("get list watch update delete patch", (CORE,), "nodes"),
            rule("patch update", (CORE,), "nodes/status"),
            rule("patch update", (CORE,), "pods/status"),
            rule("list watch get delete", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "persistent-volume-binder",
            rule("get list watch update create delete", (CORE,), "persistentvolumes"),
            rule("update", (CORE,), "persistentvolumes/status"),
            rule("get list watch update", (CORE,), "persistentvolumeclaims"),
            rule("update", (CORE,), "persistentvolumeclaims/status"),
            rule("list watch get create delete", (CORE,), "pods"),
            rule(READ, (STORAGE,), "storageclasses"),
            rule("list watch", (CORE,), "nodes"),
            events_rule(),
            rule("watch", (CORE,), "events"),
            rule("get", (CORE,), "services"),
        ),
        _controller(
            "pod-garbage-collector",
            rule("list watch delete", (CORE,), "pods"),
            rule(READ, (CORE,), "nodes"),
            rule("patch", (CORE,), "pods/status"),
        ),
        _controller(
            "replicaset-controller",
            rule("get list watch update", (APPS, EXT), "replicasets"),
            rule("update", (APPS, EXT), "replicasets/status"),
            rule("update", (APPS, EXT), "replicasets/finalizers"),
            rule("list watch patch create delete", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "replication-controller",
            rule("get list watch update", (CORE,), "replicationcontrollers"),
            rule("update", (CORE,), "replicationcontrollers/status"),
            rule("update", (CORE,), "replicationcontrollers/finalizers"),
            rule("list watch patch create delete", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "resourcequota-controller",
            rule("list watch", ("*",), "*"),
            rule("update", (CORE,), "resourcequotas/status"),
            events_rule(),
        ),
        _controller(
            "route-controller",
            rule("list watch", (CORE,), "nodes"),
            rule("patch", (CORE,), "nodes/status"),
            events_rule(),
        ),
        _controller("service-account-controller", rule("create", (CORE,), "serviceaccounts"), events_rule()),
        _controller(
            "service-controller",
            rule(READ, (CORE,), "services"),
            rule("patch update", (CORE,), "services/status"),
            rule("list watch", (CORE,), "nodes"),
            events_rule(),
        ),
        _controller(
            "statefulset-controller",
            rule("list watch", (CORE,), "pods"),
            rule(READ, (APPS,), "statefulsets"),
            rule("update", (APPS,), "statefulsets/status"),
            rule("update", (APPS,), "statefulsets/finalizers"),
            rule("get create delete update patch", (CORE,), "pods"),
            rule("get create delete update patch list watch", (APPS,), "controllerrevisions"),
            rule("get create list watch", (CORE,), "persistentvolumeclaims"),
            rule("update delete", (CORE,), "persistentvolumeclaims"),
            rule("update", (CORE,), "pods/finalizers"),
            events_rule(),
        ),
        _controller(
            "ttl-controller",
            rule("update patch list watch", (CORE,), "nodes"),
            events_rule(),
        ),
        _controller(
            "certificate-controller",
            rule("get list watch delete", (CERTS,), "certificatesigningrequests"),
            rule(
                "update",
                (CERTS,),
                "certificatesigningrequests/status certificatesigningrequests/approval",
            ),
            rule("approve", (CERTS,), "signers", "kubernetes.io/kube-apiserver-client-kubelet"),
            rule(
                "sign",
                (CERTS,),
                "signers",
                "kubernetes.io/legacy-unknown kubernetes.io/kube-apiserver-client "
                "kubernetes.io/kube-apiserver-client-kubelet kubernetes.io/kubelet-serving",
            ),
            rule("create", (AUTHZ,), "subjectaccessreviews"),
            events_rule(),
        ),
        _controller(
            "pvc-protection-controller",
            rule("get list watch update", (CORE,), "persistentvolumeclaims"),
            rule("list watch get", (CORE,), "pods"),
            events_rule(),
        ),
        _controller(
            "pv-protection-controller",
            rule("get list watch update", (CORE,), "persistentvolumes"),
            events_rule(),
        ),
        _controller(
            "ttl-after-finished-controller",
            rule("get list watch delete", (BATCH,), "jobs"),
            events_rule(),
        ),
        _controller(
            "root-ca-cert-publisher",
            rule("create update", (CORE,), "configmaps"),
            events_rule(),
        ),
        _controller(
            "validatingadmissionpolicy-status-controller",
            rule(READ, (ADMISSION_REG,), "validatingadmissionpolicies"),
            rule("get patch update", (ADMISSION_REG,), "validatingadmissionpolicies/status"),
            events_rule(),
        ),
        _controller(
            "legacy-service-account-token-cleaner",
            rule("get", (CORE,), "configmaps", "kube-apiserver-legacy-service-account-token-tracking"),
            rule("patch delete", (CORE,), "secrets"),
        ),
    ]


#: The ``system:controller:*`` roles of the controllers Kubelab's controller manager runs, by its
#: controller names (``controllermanager.CONTROLLERS``; upstream's ``startXController`` functions name
#: the ServiceAccount each uses). Their bindings also name ``system:kube-controller-manager``.
KCM_CONTROLLER_ROLES: Final[Mapping[str, str]] = {
    "replicaset-controller": "replicaset-controller",
    "deployment-controller": "deployment-controller",
    "replicationcontroller-controller": "replication-controller",
    "persistentvolume-binder-controller": "persistent-volume-binder",
    # The simulated external provisioner needs what the binder may do (create and delete volumes).
    "simulated-volume-provisioner": "persistent-volume-binder",
    "daemonset-controller": "daemon-set-controller",
    "statefulset-controller": "statefulset-controller",
    "job-controller": "job-controller",
    "cronjob-controller": "cronjob-controller",
    "ttl-after-finished-controller": "ttl-after-finished-controller",
    "disruption-controller": "disruption-controller",
    "horizontal-pod-autoscaler-controller": "horizontal-pod-autoscaler",
    "node-lifecycle-controller": "node-controller",
    "taint-eviction-controller": "node-controller",
    "endpoints-controller": "endpoint-controller",
    "endpointslice-controller": "endpointslice-controller",
    "garbage-collector-controller": "generic-garbage-collector",
    "namespace-controller": "namespace-controller",
    "resourcequota-controller": "resourcequota-controller",
    "serviceaccount-controller": "service-account-controller",
    "root-ca-certificate-publisher-controller": "root-ca-cert-publisher",
    # Upstream's bootstrap-signer rights are namespaced Roles (namespace_policy.go), not bootstrapped
    # here: its one write, an update of kube-public/cluster-info, is the publisher's ConfigMap update.
    "bootstrap-signer-controller": "root-ca-cert-publisher",
    # The three CSR controllers share upstream's certificate-controller ServiceAccount.
    "certificatesigningrequest-signing-controller": "certificate-controller",
    "certificatesigningrequest-approving-controller": "certificate-controller",
    "certificatesigningrequest-cleaner-controller": "certificate-controller",
}


def cluster_role_bindings() -> list[Object]:
    """Upstream's ``ClusterRoleBindings()`` (``testdata/cluster-role-bindings.yaml``)."""
    return [
        _binding("cluster-admin", [_subject("Group", SYSTEM_MASTERS)]),
        _binding("system:monitoring", [_subject("Group", MONITORING)]),
        _binding("system:discovery", [_subject("Group", AUTHENTICATED)]),
        _binding("system:basic-user", [_subject("Group", AUTHENTICATED)]),
        _binding(
            "system:public-info-viewer",
            [_subject("Group", AUTHENTICATED), _subject("Group", UNAUTHENTICATED)],
        ),
        _binding("system:node-proxier", [_subject("User", KUBE_PROXY)]),
        _binding("system:kube-controller-manager", [_subject("User", KUBE_CONTROLLER_MANAGER)]),
        _binding("system:kube-dns", [_subject("ServiceAccount", "kube-dns", "kube-system")]),
        _binding("system:kube-scheduler", [_subject("User", KUBE_SCHEDULER)]),
        _binding("system:volume-scheduler", [_subject("User", KUBE_SCHEDULER)]),
        # Since 1.8 the kubelets' rights come from the Node authorizer: the binding has no subjects.
        _binding("system:node", []),
        _binding(
            "system:service-account-issuer-discovery",
            [_subject("Group", SERVICE_ACCOUNTS)],
        ),
    ]


def controller_role_bindings() -> list[Object]:
    """Upstream's ``ControllerRoleBindings()`` (each role to ``kube-system/<controller>``), plus
    ``system:kube-controller-manager`` on the roles of the controllers Kubelab runs (the deviation
    explained in the module docstring)."""
    used = set(KCM_CONTROLLER_ROLES.values())
    bindings = []
    for role in controller_roles():
        name = role["metadata"]["name"]
        short = name[len(CONTROLLER_PREFIX) :]
        subjects = [_subject("ServiceAccount", short, "kube-system")]
        if short in used:
            subjects.append(_subject("User", KUBE_CONTROLLER_MANAGER))
        bindings.append(_binding(name, subjects))
    return bindings


def policy() -> tuple[list[Object], list[Object]]:
    """Every bootstrap ClusterRole and ClusterRoleBinding, as stored."""
    return cluster_roles() + controller_roles(), cluster_role_bindings() + controller_role_bindings()


# -- reconciliation (pure) -------------------------------------------------------------------------


def _merge_map(existing: Mapping[str, str] | None, expected: Mapping[str, str]) -> dict[str, str]:
    merged = dict(existing or {})
    for key, value in expected.items():
        merged.setdefault(key, value)
    return merged


def reconcile(existing: Object, expected: Object) -> Object | None:
    """The object to write so that ``existing`` holds everything ``expected`` has, or None if it does.

    Upstream's ``computeReconciledRole``/``computeReconciledRoleBinding`` with ``Confirm`` and without
    removing extras: labels and annotations are added, missing rules (or subjects) appended, the
    aggregation rule restored. An object annotated ``autoupdate: "false"`` is left alone.
    """
    meta = existing.get("metadata") or {}
    if (meta.get("annotations") or {}).get(AUTOUPDATE) == "false":
        return None
    result = copy.deepcopy(existing)
    result_meta = result.setdefault("metadata", {})
    expected_meta = expected["metadata"]
    result_meta["labels"] = _merge_map(result_meta.get("labels"), expected_meta.get("labels") or {})
    result_meta["annotations"] = _merge_map(
        result_meta.get("annotations"), expected_meta.get("annotations") or {}
    )
    if "roleRef" in expected:
        subjects = list(result.get("subjects") or [])
        for subject in expected["subjects"]:
            if not any(_same_subject(subject, s) for s in subjects):
                subjects.append(dict(subject))
        result["subjects"] = subjects
    else:
        if "aggregationRule" in expected:
            result["aggregationRule"] = copy.deepcopy(expected["aggregationRule"])
        else:
            rules = list(result.get("rules") or [])
            for wanted in expected.get("rules") or []:
                if not any(_same_rule(wanted, r) for r in rules):
                    rules.append(dict(wanted))
            result["rules"] = rules
    return None if result == existing else result


def _same_subject(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ("kind", "name", "namespace")
    return all((a.get(k) or "") == (b.get(k) or "") for k in keys)


def _same_rule(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
    return all(sorted(a.get(k) or []) == sorted(b.get(k) or []) for k in keys)


__all__ = [
    "AGGREGATE_TO",
    "AUTOUPDATE",
    "KCM_CONTROLLER_ROLES",
    "cluster_role_bindings",
    "cluster_roles",
    "controller_role_bindings",
    "controller_roles",
    "policy",
    "reconcile",
    "rule",
    "urls",
]
