"""The FlowSchemas and PriorityLevelConfigurations every API server starts with.

Upstream's ``k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go``, as of Kubernetes 1.3x:

- **mandatory** objects, which every API server needs and restores if they are deleted or edited:
  the ``exempt`` level (never queued) with the ``exempt`` FlowSchema (group ``system:masters``), and
  the ``catch-all`` level (a few seats, Reject) with the ``catch-all`` FlowSchema (everyone, matched
  last);
- **suggested** objects, a sensible split of the rest: ``system`` and ``node-high`` for the kubelets,
  ``leader-election`` for leases, ``workload-high`` for the scheduler, the controller manager and
  kube-system's ServiceAccounts, ``workload-low`` for other ServiceAccounts, ``global-default`` for
  everyone else; and ``probes`` exempting ``/healthz``, ``/readyz`` and ``/livez``.

Each carries the annotation ``apf.kubernetes.io/autoupdate-spec: "true"``: the API server keeps its
spec as written here. An administrator who edits a suggested object and wants to keep the edit sets
the annotation to ``"false"`` (``ensurer.py``).

Levels are listed by name, FlowSchemas by matching precedence (how ``kubectl get`` shows them).
"""

from __future__ import annotations

import copy

from controlplane.api.meta import Object
from controlplane.api.strategies.flowcontrol import (
    MANDATORY_FLOW_SCHEMA_SPECS,
    MANDATORY_PRIORITY_LEVEL_SPECS,
)
from controlplane.identity import (
    AUTHENTICATED,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    NODES,
    SERVICE_ACCOUNTS,
    UNAUTHENTICATED,
)

API_VERSION = "flowcontrol.apiserver.k8s.io/v1"
#: Whether the API server keeps the object's spec as it ships it (``flowcontrol.AutoUpdateAnnotationKey``).
AUTO_UPDATE_ANNOTATION = "apf.kubernetes.io/autoupdate-spec"

EXEMPT = "exempt"
CATCH_ALL = "catch-all"
#: The names of the mandatory objects (levels and FlowSchemas share them).
MANDATORY = (EXEMPT, CATCH_ALL)


def _metadata(name: str) -> Object:
    return {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}}


def _level(name: str, spec: Object) -> Object:
    return {
        "apiVersion": API_VERSION,
        "kind": "PriorityLevelConfiguration",
        "metadata": _metadata(name),
        "spec": spec,
    }


def _limited(shares: int, lendable: int, queues: int, hand_size: int, queue_length_limit: int) -> Object:
    return {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": {
                "type": "Queue",
                "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit},
            },
        },
    }


def _group(name: str) -> Object:
    return {"kind": "Group", "group": {"name": name}}


def _user(name: str) -> Object:
    return {"kind": "User", "user": {"name": name}}


def _kube_system_service_account(name: str) -> Object:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}}


def _resources(
    verbs: list[str], groups: list[str], resources: list[str], namespaces: list[str], cluster: bool
) -> Object:
    rule: Object = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if cluster:
        rule["clusterScope"] = True
    if namespaces:
        rule["namespaces"] = namespaces
    return rule


#: Every verb, group, resource and namespace, cluster-scoped too (``ruleRscAll``), and every URL.
_ALL_RESOURCES = _resources(["*"], ["*"], ["*"], ["*"], True)
_ALL_URLS = {"verbs": ["*"], "nonResourceURLs": ["*"]}


def _flow_schema(name: str, level: str, precedence: int, distinguisher: str, rules: list[Object]) -> Object:
    spec: Object = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if distinguisher:
        spec["distinguisherMethod"] = {"type": distinguisher}
    spec["rules"] = rules
    return {"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": _metadata(name), "spec": spec}


def _everything(*subjects: Object) -> list[Object]:
    return [{"subjects": list(subjects), "resourceRules": [_ALL_RESOURCES], "nonResourceRules": [_ALL_URLS]}]


_LEADER_VERBS = ["get", "create", "update"]

# The mandatory specs are the ones validation holds these objects to (``controlplane.api.strategies.
# flowcontrol``, as upstream's validation reads ``internalbootstrap``): one definition for both.
MANDATORY_PRIORITY_LEVELS: tuple[Object, ...] = tuple(
    _level(name, copy.deepcopy(spec)) for name, spec in MANDATORY_PRIORITY_LEVEL_SPECS.items()
)

SUGGESTED_PRIORITY_LEVELS: tuple[Object, ...] = (
    _level("global-default", _limited(20, 50, 128, 6, 50)),
    _level("leader-election", _limited(10, 0, 16, 4, 50)),
    _level("node-high", _limited(40, 25, 64, 6, 50)),
    _level("system", _limited(30, 33, 64, 6, 50)),
    _level("workload-high", _limited(40, 50, 128, 6, 50)),
    _level("workload-low", _limited(100, 90, 128, 6, 50)),
)

MANDATORY_FLOW_SCHEMAS: tuple[Object, ...] = tuple(
    {
        "apiVersion": API_VERSION,
        "kind": "FlowSchema",
        "metadata": _metadata(name),
        "spec": copy.deepcopy(spec),
    }
    for name, spec in MANDATORY_FLOW_SCHEMA_SPECS.items()
)

SUGGESTED_FLOW_SCHEMAS: tuple[Object, ...] = (
    _flow_schema(
        "probes",
        EXEMPT,
        2,
        "",
        [
            {
                "subjects": [_group(UNAUTHENTICATED), _group(AUTHENTICATED)],
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}
                ],
            }
        ],
    ),
    _flow_schema(
        "system-leader-election",
        "leader-election",
        100,
        "ByUser",
        [
            {
                "subjects": [
                    _user(KUBE_CONTROLLER_MANAGER),
                    _user(KUBE_SCHEDULER),
                    _kube_system_service_account("*"),
                ],
                "resourceRules": [
                    _resources(_LEADER_VERBS, ["coordination.k8s.io"], ["leases"], ["kube-system"], False)
                ],
            }
        ],
    ),
    _flow_schema(
        "endpoint-controller",
        "workload-high",
        150,
        "ByUser",
        [
            {
                "subjects": [
                    _user(KUBE_CONTROLLER_MANAGER),
                    _kube_system_service_account("endpoint-controller"),
                    _kube_system_service_account("endpointslicemirroring-controller"),
                ],
                "resourceRules": [_resources(_LEADER_VERBS, [""], ["endpoints"], ["*"], False)],
            }
        ],
    ),
    _flow_schema(
        "workload-leader-election",
        "leader-election",
        200,
        "ByUser",
        [
            {
                "subjects": [_kube_system_service_account("*")],
                "resourceRules": [
                    _resources(_LEADER_VERBS, ["coordination.k8s.io"], ["leases"], ["*"], False)
                ],
            }
        ],
    ),
    _flow_schema(
        "system-node-high",
        "node-high",
        400,
        "ByUser",
        [
            {
                "subjects": [_group(NODES)],
                "resourceRules": [
                    _resources(["*"], [""], ["nodes", "nodes/status"], ["*"], True),
                    _resources(["*"], ["coordination.k8s.io"], ["leases"], ["*"], False),
                ],
            }
        ],
    ),
    _flow_schema("system-nodes", "system", 500, "ByUser", _everything(_group(NODES))),
    _flow_schema(
        "kube-controller-manager",
        "workload-high",
        800,
        "ByNamespace",
        _everything(_user(KUBE_CONTROLLER_MANAGER)),
    ),
    _flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace", _everything(_user(KUBE_SCHEDULER))),
    _flow_schema(
        "kube-system-service-accounts",
        "workload-high",
        900,
        "ByNamespace",
        _everything(_kube_system_service_account("*")),
    ),
    _flow_schema("service-accounts", "workload-low", 9000, "ByUser", _everything(_group(SERVICE_ACCOUNTS))),
    _flow_schema(
        "global-default",
        "global-default",
        9900,
        "ByUser",
        _everything(_group(UNAUTHENTICATED), _group(AUTHENTICATED)),
    ),
)


def priority_levels() -> list[Object]:
    """Every bootstrap PriorityLevelConfiguration (a fresh copy), mandatory first."""
    return copy.deepcopy([*MANDATORY_PRIORITY_LEVELS, *SUGGESTED_PRIORITY_LEVELS])


def flow_schemas() -> list[Object]:
    """Every bootstrap FlowSchema (a fresh copy), by matching precedence."""
    everything = [*MANDATORY_FLOW_SCHEMAS, *SUGGESTED_FLOW_SCHEMAS]
    return copy.deepcopy(
        sorted(everything, key=lambda fs: (fs["spec"]["matchingPrecedence"], fs["metadata"]["name"]))
    )
