"""Who may see a cluster, by the name the settings give it: ``settings.KUBELAB_CLUSTER_ACCESS`` is
``"courses.access.user_may_view"``, and the trace socket (``controlplane.consumers.access``), which may
not import the web app, looks the rule up by that name; ``settings.KUBELAB_TRACE_SCOPE`` likewise names
``"courses.access.user_trace_scope"``, the part of a cluster's trace a viewer sees.

The rule itself, and the rest of its API, is the classrooms' (``courses.classrooms.access``).
"""

from __future__ import annotations

from courses.classrooms.access import user_may_view, user_trace_scope

__all__ = ["user_may_view", "user_trace_scope"]
