"""The field manager and strict decoding: what every write costs the API server before it is stored.

Every create, update and patch runs the field manager (``metadata.managedFields``: compare the old
and new object, move field ownership, encode the sets again) and every create/update body is
decoded strictly (unknown and duplicate fields, then pruned). In a busy cluster (``python -m bench
cluster --only throughput``) these dominate the API server's CPU, so they get a micro-benchmark of
their own, on objects shaped like the ones that run writes:

``update.pod_create.per_s``
    A Pod created by the ReplicaSet controller (defaults set, owner reference, no managed fields yet).
``update.pod_status.per_s``
    The kubelet's ``pods/status`` write that takes a scheduled Pod to Running (conditions, container
    statuses, IPs), through the ``status`` subresource's field manager.
``update.event_create.per_s``
    An Event created by a kubelet: the most frequent write of a cluster start.
``update.deployment_status.per_s``
    The Deployment controller's ``deployments/status`` write (replica counts and conditions).
``apply.deployment.per_s``
    ``kubectl apply --server-side`` of a Deployment onto its live object, one changed field.
``strict.pod.per_s`` / ``strict.event.per_s``
    ``decode_strictly``'s work on a create body: unknown and duplicate fields from the raw JSON, then
    the unknown fields pruned.

Each figure is the best of ``--rounds`` rounds of ``--duration`` seconds, in operations per second;
informational, no targets.
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Callable

from bench.report import Reporter
from bench.timing import rate_for
from controlplane.api import strict
from controlplane.api.fieldmanager import typed
from controlplane.api.fieldmanager.fieldpath import Set, make_path
from controlplane.api.fieldmanager.managedfields import FieldManager
from controlplane.api.meta import Object

NOW = "2025-01-01T10:00:00Z"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("fieldmanager")
    group.add_argument("--duration", type=float, help="seconds per round (1; --quick 0.3)")
    group.add_argument("--rounds", type=int, help="rounds per figure, best kept (5; --quick 2)")


# -- objects as the cluster writes them -------------------------------------------------------------


def pod(name: str = "web-5b6d7cf5cf-snhf4") -> Object:
    """A Pod as the ReplicaSet controller creates it, after defaulting."""
    container = {
        "name": "app",
        "image": "nginx",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
        "imagePullPolicy": "Always",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "web-5b6d7cf5cf-",
            "labels": {"app": "web", "pod-template-hash": "5b6d7cf5cf"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-5b6d7cf5cf",
                    "uid": "ff890186-ae19-46f2-afb5-0acc34d17cfa",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "namespace": "default",
            "name": name,
            "uid": "6e9911fe-d32a-46b4-9f0e-86d86def83bc",
            "creationTimestamp": NOW,
        },
        "spec": {
            "containers": [container],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "enableServiceLinks": True,
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
        },
    }


def scheduled_pod() -> Object:
    """The Pod after binding: a node, and the scheduler's condition."""
    out = pod()
    out["spec"]["nodeName"] = "node-3"
    out["status"] = {
        "phase": "Pending",
        "qosClass": "Burstable",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW}
        ],
    }
    return out


def running_pod(live: Object) -> Object:
    """What the kubelet writes to ``pods/status`` once the container runs."""
    out = copy.deepcopy(live)
    conditions = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    out["status"] = {
        "phase": "Running",
        "qosClass": "Burstable",
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": NOW} for t in conditions],
        "hostIP": "172.18.0.4",
        "hostIPs": [{"ip": "172.18.0.4"}],
        "startTime": NOW,
        "containerStatuses": [
            {
                "name": "app",
                "state": {"running": {"startedAt": NOW}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": "docker.io/library/nginx:latest",
                "imageID": "docker.io/library/nginx@sha256:86cee2c10898a48ff47a0626f8202a2408b5893aff5df58a",
                "started": True,
                "containerID": "containerd://70fe4dc2dadbf08ae5e479b147da6a8e71d346a81625dc393a28d524f1",
            }
        ],
        "podIP": "10.244.3.2",
        "podIPs": [{"ip": "10.244.3.2"}],
    }
    return out


def event() -> Object:
    """An Event as a kubelet creates it."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": "node-1.18ecd0888353e200",
            "namespace": "default",
            "uid": "ccb9cc00-4184-40d6-b76a-645bd30f4ae2",
            "creationTimestamp": NOW,
        },
        "involvedObject": {"kind": "Node", "name": "node-1", "uid": "node-1", "apiVersion": "v1"},
        "reason": "Starting",
        "message": "Starting kubelet.",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "count": 1,
        "firstTimestamp": NOW,
        "lastTimestamp": NOW,
        "reportingComponent": "kubelet",
        "reportingInstance": "node-1",
    }


def deployment_config(image: str = "nginx") -> Object:
    """What a user applies."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "MODE", "value": "prod"}],
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ]
                },
            },
        },
    }


def deployment_status(live: Object) -> Object:
    out = copy.deepcopy(live)
    out["status"] = {
        "observedGeneration": 1,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [
            {
                "type": t,
                "status": "True",
                "lastUpdateTime": NOW,
                "lastTransitionTime": NOW,
                "reason": r,
                "message": m,
            }
            for t, r, m in (
                ("Available", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                ("Progressing", "NewReplicaSetAvailable", 'ReplicaSet "web-5b6d7cf5cf" has progressed.'),
            )
        ],
    }
    return out


# -- field managers as the API server builds them ---------------------------------------------------


def field_manager(group: str, version: str, kind: str, subresource: str = "") -> FieldManager:
    """``apiserver.patching.field_manager`` for a kind with a status subresource."""
    node = typed.root_for_kind(group, version, kind)
    assert node is not None, kind
    if subresource == "status":
        reset: Set | None = Set([make_path("spec"), make_path("metadata")])
    elif kind == "Event":
        reset = None
    else:
        reset = Set([make_path("status")])
    return FieldManager(
        group=group,
        version=version,
        kind=kind,
        node=node,
        now=lambda: NOW,
        subresource=subresource,
        reset_fields=reset,
    )


def scenarios() -> dict[str, Callable[[], object]]:
    """Each measured operation, its inputs built once (the field manager never modifies them)."""
    pods = field_manager("", "v1", "Pod")
    pod_status = field_manager("", "v1", "Pod", "status")
    events = field_manager("", "v1", "Event")
    deployments = field_manager("apps", "v1", "Deployment")
    deployment_statuses = field_manager("apps", "v1", "Deployment", "status")

    new_pod = pod()
    created = pods.update(None, new_pod, "kube-controller-manager")
    bound = scheduled_pod()
    bound["metadata"]["managedFields"] = created["metadata"]["managedFields"]
    running = running_pod(bound)
    new_event = event()

    applied = deployments.apply(None, deployment_config(), "kubectl", force=False, namespace="default")
    applied["metadata"]["uid"] = "7d5a5243-19f2-4faf-a528-5e43cfbd7f77"
    reconfigured = deployment_config(image="nginx:1.27")
    with_status = deployment_status(applied)

    pod_body = json.dumps(new_pod).encode()
    pod_node = typed.root_for_kind("", "v1", "Pod")
    event_body = json.dumps(new_event).encode()
    event_node = typed.root_for_kind("", "v1", "Event")
    assert pod_node is not None and event_node is not None

    def decode(document: Object, raw: bytes, node: typed.Schema) -> object:
        strict.unknown_and_duplicate_fields(document, node, raw=raw)
        return strict.prune_unknown(document, node)

    return {
        "update.pod_create": lambda: pods.update(None, new_pod, "kube-controller-manager"),
        "update.pod_status": lambda: pod_status.update(bound, running, "kubelet"),
        "update.event_create": lambda: events.update(None, new_event, "kubelet"),
        "update.deployment_status": lambda: deployment_statuses.update(
            applied, with_status, "kube-controller-manager"
        ),
        "apply.deployment": lambda: deployments.apply(
            applied, reconfigured, "kubectl", force=False, namespace="default"
        ),
        "strict.pod": lambda: decode(new_pod, pod_body, pod_node),
        "strict.event": lambda: decode(new_event, event_body, event_node),
    }


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    quick = bool(options.quick)
    duration = options.duration if options.duration is not None else (0.3 if quick else 1.0)
    rounds = options.rounds if options.rounds is not None else (2 if quick else 5)
    for name, step in scenarios().items():
        metric = f"{name}.per_s"
        if not reporter.selected(metric):
            continue
        step()  # warm caches, as a running server has
        best = max(rate_for(duration, step).per_second for _ in range(rounds))
        reporter.emit(metric, best, "ops/s", us_per_op=round(1e6 / best, 1) if best else None)
