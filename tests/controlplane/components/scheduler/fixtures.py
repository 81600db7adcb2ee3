"""Small node and pod dicts for the scheduler tests."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }


def pod(
    name: str,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": body}
