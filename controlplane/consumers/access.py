"""Access: the trace socket asks the web app who may watch a cluster.

The trace shows everything a cluster does: who asked for what, what RBAC decided, which keys were
written. So a socket may watch a cluster only if its user may see that cluster, and who may see
which cluster is the classrooms' business: staff see every cluster, instructors and students those
of their classrooms, everyone signed in the demo cluster, anonymous visitors the demo cluster while
``KUBELAB_DEMO_ANONYMOUS`` is on. That rule lives in the web app, ``courses.access``, next to the
classrooms it reads.

The consumers' layer lies below the web app and may not import it (the layers contract in
pyproject.toml), so the rule is handed down by name, as Django hands down its authentication
backends: ``settings.KUBELAB_CLUSTER_ACCESS`` is the dotted path of a function ``(user, cluster name)
-> bool`` (``"courses.access.user_may_view"``). It may read the database, so ``may_view`` calls it
through ``database_sync_to_async``: the consumer runs on the event loop, where Django's ORM must not.

The consumer asks before it looks the cluster up, so that an anonymous visitor cannot find out which
other clusters exist.

A viewer may also see only part of a cluster's trace (``controlplane/trace/scope.py``: a student in a
classroom's shared cluster sees their own namespace, not their classmates'). Which part is the web
app's business too: ``settings.KUBELAB_TRACE_SCOPE`` names a function ``(user, cluster name) ->
TraceScope | None`` (None: the whole trace), ``"courses.access.user_trace_scope"``; without the
setting every viewer sees the whole trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from controlplane.trace.scope import TraceScope

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser

#: ``(user or None, cluster name) -> may the user see the cluster``; synchronous, may read the database.
AccessRule = Callable[[Any, str], bool]


def access_rule() -> AccessRule:
    """The function ``settings.KUBELAB_CLUSTER_ACCESS`` names; without one, nobody may watch anything."""
    path = getattr(settings, "KUBELAB_CLUSTER_ACCESS", "")
    if not path:
        raise ImproperlyConfigured("KUBELAB_CLUSTER_ACCESS must name the function that decides who may watch")
    rule: AccessRule = import_string(path)
    return rule


async def may_view(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """Whether ``user`` (None: nobody signed in) may watch the trace of the cluster named ``cluster``."""
    allowed = await database_sync_to_async(access_rule())(user, cluster)
    return allowed is True


async def trace_scope(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> TraceScope | None:
    """The part of ``cluster``'s trace ``user`` sees (None: all of it); ask ``may_view`` first."""
    path = getattr(settings, "KUBELAB_TRACE_SCOPE", "")
    if not path:
        return None
    rule: Callable[[Any, str], TraceScope | None] = import_string(path)
    scope = await database_sync_to_async(rule)(user, cluster)
    if scope is not None and not isinstance(scope, TraceScope):
        raise ImproperlyConfigured(f"KUBELAB_TRACE_SCOPE ({path}) answered {scope!r}: not a TraceScope")
    return scope


__all__ = ["AccessRule", "access_rule", "may_view", "trace_scope"]
