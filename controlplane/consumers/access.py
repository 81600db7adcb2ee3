"""Access: who may watch a cluster's trace.

The trace shows everything a cluster does: who asked for what, what RBAC decided, which keys were
written. So a socket may watch a cluster only if its user may see that cluster. For now:

- staff and superusers may watch every cluster;
- any signed-in user may watch every cluster (classrooms come later: then a student sees the
  clusters of their classroom, an instructor those of the classrooms they teach);
- an anonymous visitor may watch the demo cluster (``KUBELAB_DEMO_CLUSTER``) only, and only while
  ``KUBELAB_DEMO_ANONYMOUS`` is on (the default, so that ``make run`` shows it at once).

``may_view`` is the one place that decides; the classrooms will extend it, and the consumer only asks
(so does the topology page's etcd panel, ``courses.views.etcd_keys``: who may watch a cluster may
look into its store).
It is asked before the cluster is looked up, so an anonymous visitor cannot find out which other
clusters exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser


def may_view(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """Whether ``user`` (None: nobody signed in) may watch the trace of the cluster named ``cluster``."""
    if user is not None and user.is_authenticated:
        if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
            return True
        # The classroom hook: until classrooms own clusters, every signed-in user may watch any.
        return True
    demo: str = settings.KUBELAB_DEMO_CLUSTER
    return bool(settings.KUBELAB_DEMO_ANONYMOUS) and bool(demo) and cluster == demo


__all__ = ["may_view"]
