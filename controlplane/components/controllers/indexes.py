"""Cache indexes several controllers share: "which pods run on node X?" without scanning every pod.

Controllers share one pod informer (one watch, one cache). An index is added to that shared cache once,
under one name, and every controller that needs it asks for it by that name (upstream registers
``spec.nodeName`` on the pod informer the same way, ``controller.AddPodNodeNameIndexer``).
"""

from __future__ import annotations

from typing import Final

from controlplane.api.meta import Object
from controlplane.client.cache import field_index_func
from controlplane.client.informer import SharedIndexInformer

#: The name of the pod index by ``spec.nodeName`` (``controller.PodNodeNameKeyIndex``).
POD_NODE_NAME_INDEX: Final = "spec.nodeName"


def ensure_pod_node_name_index(pods: SharedIndexInformer) -> None:
    """Add the ``spec.nodeName`` index to the shared pod informer unless a controller already has."""
    if POD_NODE_NAME_INDEX not in pods.indexer.get_indexers():
        pods.add_indexers({POD_NODE_NAME_INDEX: field_index_func("spec.nodeName")})


def pods_on_node(pods: SharedIndexInformer, node_name: str) -> list[Object]:
    """The cached pods bound to ``node_name``."""
    return [p for p in pods.indexer.by_index(POD_NODE_NAME_INDEX, node_name) if p]


__all__ = ["POD_NODE_NAME_INDEX", "ensure_pod_node_name_index", "pods_on_node"]
