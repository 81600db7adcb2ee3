"""Who may see a cluster, by the name the settings give it: ``settings.KUBELAB_CLUSTER_ACCESS`` is
``"courses.access.user_may_view"``, and the trace socket (``controlplane.consumers.access``), which may
not import the web app, looks the rule up by that name.

The rule itself, and the rest of its API, is the classrooms' (``courses.classrooms.access``).
"""

from __future__ import annotations

from courses.classrooms.access import user_may_view

__all__ = ["user_may_view"]
