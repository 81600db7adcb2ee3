"""The Scale: what ``/scale`` shows of a workload, so that one client can resize any kind.

``kubectl scale``, the HorizontalPodAutoscaler controller and client-go's scale client know nothing of
Deployments, StatefulSets or a CRD's custom kinds: they read and write an ``autoscaling/v1`` **Scale**,
a view the API server makes of the object (``spec.replicas`` it wants, ``status.replicas`` it has,
``status.selector`` to find its pods) and maps back onto the object's own fields on a write.

Upstream writes it from Go's ``autoscaling/v1.Scale`` (staging/src/k8s.io/api/autoscaling/v1/
types.go): ``spec.replicas`` and ``status.selector`` are ``omitempty``, ``status.replicas`` is not,
so a Deployment scaled to zero shows ``"spec": {}`` and ``"status": {"replicas": 0}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api.meta import Object

#: The object's metadata a Scale carries (``scaleFromDeployment`` and its siblings).
SCALE_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def scale_object(meta: Mapping[str, Any], replicas: int, current: int, selector: str) -> Object:
    """The Scale of an object with ``meta``, wanting ``replicas``, having ``current``, its pods
    found by ``selector`` (a label selector's string form, ``""`` for none)."""
    status: Object = {"replicas": current}
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in SCALE_METADATA if k in meta},
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }
