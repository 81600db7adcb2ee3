"""The lab's pieces of page, as template tags (``{% load lab %}``), so that the cluster page and, later,
a chapter page compose the same markup:

- ``{% topology cluster %}``: a cluster's live topology, its configuration for static/topology/topology.js
  (``#topology-config``), the timeline controls, the diagram with its inspector, the narration;
- ``{% topology_status cluster %}``: the timing profile and the trace stream's state, which topology.js
  keeps up to date (it needs them: place them anywhere inside the topology's root);
- ``{% etcd_panel cluster %}``: the cluster's store, key by key (optional).

``cluster`` is a ``courses.lab.selectors.ClusterSummary``. All three go inside one element marked
``data-topology="root"``, which the page's module script mounts:
``import { start } from ".../topology/topology.js"; start(root)`` (templates/courses/lab/cluster.html).
"""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

from courses.lab.selectors import ClusterSummary, TopologyConfig, topology_config

register = template.Library()


def _config(cluster: ClusterSummary) -> TopologyConfig:
    return topology_config(cluster=cluster.name, timing_profile=settings.KUBELAB_TIMING_PROFILE)


@register.inclusion_tag("courses/lab/_topology.html")
def topology(cluster: ClusterSummary) -> dict[str, Any]:
    """The live topology of ``cluster`` (templates/courses/lab/_topology.html)."""
    return {"cluster": cluster, "topology": _config(cluster)}


@register.inclusion_tag("courses/lab/_topology_status.html")
def topology_status(cluster: ClusterSummary) -> dict[str, Any]:
    """The timing profile and the stream's state of ``cluster``'s topology (…/_topology_status.html)."""
    return {"cluster": cluster, "topology": _config(cluster)}


@register.inclusion_tag("courses/lab/_etcd_panel.html")
def etcd_panel(cluster: ClusterSummary) -> dict[str, Any]:
    """The etcd panel of ``cluster`` (templates/courses/lab/_etcd_panel.html)."""
    return {"cluster": cluster}
