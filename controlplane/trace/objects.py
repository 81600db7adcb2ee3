"""What the diagram draws of a stored object: a few facts, never its contents.

The topology diagram shows the cluster as etcd holds it: which Nodes exist and whether they are Ready,
which Pods exist, on which node, in which phase, and which are being deleted; which component holds a
leader Lease. It must agree with what ``kubectl get`` lists, whatever happened before the page opened,
so it never guesses these from the requests it saw: it reads them from the store.

Two places need them, and both use this module:

- a ``store.txn`` event names each key it wrote (``writes``); for a Pod, a Node or a leader Lease the
  write also carries these facts (``{"type": "PUT", "key": "/registry/pods/default/web",
  "pod": {...}}``), read from the bytes the store committed, so the diagram follows every change the
  moment it is traced, from the one place every write passes;
- the state a page starts from (``controlplane/diagram.py``) reads every Node, Pod and leader Lease
  at one revision.

The facts are names, phases and conditions, never data: a Secret is never decoded here. A value that
is not a JSON object (encrypted at rest) has no facts. Keys follow kube-apiserver's layout
(``/registry/<resource>/<namespace>/<name>``; Nodes are stored as "minions", for history).
"""

from __future__ import annotations

import json
from typing import Any

NODES_PREFIX = "/registry/minions/"
PODS_PREFIX = "/registry/pods/"
#: Leader-election Leases live in kube-system (a node's heartbeat Lease is in kube-node-lease).
LEADER_LEASES_PREFIX = "/registry/leases/kube-system/"
#: The API servers' identity Leases, also in kube-system (``apiserver/identitylease.py``): nobody
#: leads through them, so the diagram draws no leader for them.
IDENTITY_LEASES_PREFIX = LEADER_LEASES_PREFIX + "apiserver-"


def is_leader_lease(key: str) -> bool:
    """Whether ``key`` is a leader-election Lease's (in kube-system, not an API server's identity)."""
    return key.startswith(LEADER_LEASES_PREFIX) and not key.startswith(IDENTITY_LEASES_PREFIX)


Facts = dict[str, Any]


def stored_object(value: bytes) -> dict[str, Any] | None:
    """A stored value as a JSON object, or None when it is not one (encrypted at rest, or damaged)."""
    if value[:1] != b"{":
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _parts(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return _mapping(obj.get("metadata")), _mapping(obj.get("spec")), _mapping(obj.get("status"))


def node_facts(key: str, obj: dict[str, Any]) -> Facts:
    """A Node: ``{"name": "node-1", "ready": "True", "unschedulable": false}``.

    ``ready`` is the Ready condition's status (``"True"``, ``"False"``, ``"Unknown"``), or None while
    the node has none yet.
    """
    metadata, spec, status = _parts(obj)
    conditions = status.get("conditions")
    ready = next(
        (
            condition.get("status")
            for condition in (conditions if isinstance(conditions, list) else [])
            if isinstance(condition, dict) and condition.get("type") == "Ready"
        ),
        None,
    )
    return {
        "name": str(metadata.get("name") or key.rsplit("/", 1)[-1]),
        "ready": ready if isinstance(ready, str) else None,
        "unschedulable": bool(spec.get("unschedulable")),
    }


def pod_facts(key: str, obj: dict[str, Any]) -> Facts:
    """A Pod: ``{"namespace", "name", "generateName", "node", "phase", "deleting"}``.

    ``node`` is empty while the pod is not scheduled; ``generateName`` is the prefix its owner asked
    for (``web-7d4b9c8f5-``), so the diagram can show the part of the name that tells pods apart.
    """
    metadata, spec, status = _parts(obj)
    parts = key.split("/")  # /registry/pods/<namespace>/<name>
    return {
        "namespace": str(metadata.get("namespace") or (parts[3] if len(parts) > 4 else "")),
        "name": str(metadata.get("name") or parts[-1]),
        "generateName": str(metadata.get("generateName") or ""),
        "node": str(spec.get("nodeName") or ""),
        "phase": str(status.get("phase") or "Pending"),
        "deleting": bool(metadata.get("deletionTimestamp")),
    }


def lease_facts(key: str, obj: dict[str, Any]) -> Facts:
    """A leader-election Lease: ``{"name": "kube-scheduler", "holder": "<identity>"}`` (holder may be
    empty: released)."""
    metadata, spec, _ = _parts(obj)
    return {
        "name": str(metadata.get("name") or key.rsplit("/", 1)[-1]),
        "holder": str(spec.get("holderIdentity") or ""),
    }


def kind_of(key: str) -> str | None:
    """``"pod"``, ``"node"`` or ``"lease"`` for a key whose facts the diagram draws, else None."""
    if key.startswith(PODS_PREFIX):
        return "pod"
    if key.startswith(NODES_PREFIX):
        return "node"
    if is_leader_lease(key):
        return "lease"
    return None


_FACTS = {"pod": pod_facts, "node": node_facts, "lease": lease_facts}


def facts(key: str, value: bytes) -> tuple[str, Facts] | None:
    """``(kind, facts)`` of a stored value the diagram draws, or None (another resource, or not
    readable)."""
    kind = kind_of(key)
    if kind is None:
        return None
    obj = stored_object(value)
    if obj is None:
        return None
    return kind, _FACTS[kind](key, obj)


__all__ = [
    "IDENTITY_LEASES_PREFIX",
    "LEADER_LEASES_PREFIX",
    "NODES_PREFIX",
    "PODS_PREFIX",
    "Facts",
    "facts",
    "is_leader_lease",
    "kind_of",
    "lease_facts",
    "node_facts",
    "pod_facts",
    "stored_object",
]
