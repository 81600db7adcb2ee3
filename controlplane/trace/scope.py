"""Scope: the part of a cluster's trace one viewer may see.

In a classroom's shared cluster every student works in a namespace of their own, and the API lets
them read nothing else there (RBAC ``edit`` in that namespace). The trace would show them much more:
every request, watch event, store write and reconcile of every other student, with its object
names. So a viewer of a shared cluster watches it through a ``TraceScope``: the cluster's *private*
namespaces and users (its students'), and which of them are the viewer's own. Everything else,
the nodes, the components, kube-system, the viewer's own namespace, stays in the picture: the
diagram then shows what the student could list with kubectl, and how the cluster works around it.

A ``ScopedView`` (one per socket: it remembers what it hid) decides event by event, and errs on the
side of hiding, as ``redaction.py`` does:

- an event that names a private namespace other than the viewer's is hidden: in its ``namespace``,
  its ``key``, ``pod``, ``path`` or ``prefix`` (store keys, URL paths, ``namespace/name``:
  ``TraceScope.hides_location`` knows where each form keeps it), the keys of a transaction's
  ``compares``, ``ops`` and ``writes``, or as the ``name`` of a Namespace (another student's own);
- an event from or to another private user's box (``user:student:bob``) is hidden;
- every later event of a hidden request (the same ``id``) is hidden too: its pipeline stages,
  admission steps and store transactions name no namespace themselves (but a watch event hides only
  itself: a component's watch carries every student's objects under one id);
- but the viewer's own requests are always shown, with all their events: a student who tries
  ``kubectl get pods -n student-bob`` sees their request refused, which is the lesson (they typed
  the name themselves, and RBAC's answer tells them nothing of what is there).

A cluster-scoped object whose name starts like a student's namespace (a ClusterRole ``student-x``)
is hidden when an event names it by its name alone: the price of a rule simple enough to trust.

The cluster's state for a starting page (``diagram.py``) is scoped by the same rule: other students'
pods and the watches on their namespaces are left out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_Event = TypeVar("_Event", bound=Mapping[str, Any])

#: Fields holding a store key, a URL path, a prefix or ``namespace/name``: checked segment by segment.
LOCATION_FIELDS = ("key", "pod", "path", "prefix")
#: A transaction's lists of ``{"key": ...}`` items (``store.txn``).
KEY_LISTS = ("compares", "ops", "writes")
#: The events that belong to one request from its arrival to its answer: one of them that names
#: something hidden hides the whole request. A watch's events and store transactions carry their
#: request's id too, but a component's one watch (the kubelet's on every pod) streams every
#: student's objects: each of those is judged by itself.
REQUEST_EVENTS = frozenset(
    {
        "request.received",
        "request.stage",
        "flowcontrol.decision",
        "rbac.decision",
        "admission.step",
        "request.completed",
    }
)
#: Hidden requests a view remembers at most (the oldest is forgotten first); a request's events
#: follow each other closely, so only requests still in flight need to be remembered.
REMEMBERED_REQUESTS = 4096


@dataclass(frozen=True)
class TraceScope:
    """Which namespaces and user boxes of a cluster are private, and which of them the viewer's.

    ``namespace_prefix``: a private namespace starts so (``student-``); ``own_namespace`` is the
    viewer's. ``user_prefix``: a private user's diagram box starts so (``user:student:``);
    ``own_user`` is the viewer's box.
    """

    namespace_prefix: str
    own_namespace: str
    user_prefix: str
    own_user: str

    def hides_namespace(self, namespace: str) -> bool:
        """Whether ``namespace`` is someone else's private namespace."""
        return namespace != self.own_namespace and namespace.startswith(self.namespace_prefix)

    def hides_box(self, node: str) -> bool:
        """Whether the diagram box ``node`` is someone else's private user."""
        return node != self.own_user and node.startswith(self.user_prefix)

    def hides_location(self, location: str) -> bool:
        """Whether a store key, URL path, prefix or ``namespace/name`` names a hidden namespace.

        Where the namespace stands depends on the form: a store key's segments before the object's
        name (``/registry/pods/<ns>/<name>``; all of a prefix's, and a Namespace's own key); a URL
        path's segment after ``namespaces`` (the namespace of a namespaced resource, or a Namespace's
        name); the first of ``<ns>/<name>``, or a cluster-scoped object's name alone (a Namespace's,
        for its controller). An object's own name elsewhere (a pod ``student-web`` in ``default``) is
        not a namespace and hides nothing.
        """
        if self.namespace_prefix not in location:  # the common case, without splitting
            return False
        segments = location.split("/")
        if location.startswith("/registry/"):
            whole = location.endswith("/") or location.startswith("/registry/namespaces/")
            candidates = segments[2:] if whole else segments[2:-1]
        elif location.startswith("/"):
            candidates = [segments[i + 1] for i in range(len(segments) - 1) if segments[i] == "namespaces"]
        else:
            candidates = segments[:1]
        return any(self.hides_namespace(segment) for segment in candidates)

    def names_hidden(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` itself names something hidden (the per-event rules; see the module)."""
        namespace = event.get("namespace")
        if isinstance(namespace, str) and namespace and self.hides_namespace(namespace):
            return True
        for name in LOCATION_FIELDS:
            value = event.get(name)
            if isinstance(value, str) and self.hides_location(value):
                return True
        for name in KEY_LISTS:
            items = event.get(name)
            if isinstance(items, list):
                for item in items:
                    key = item.get("key") if isinstance(item, Mapping) else None
                    if isinstance(key, str) and self.hides_location(key):
                        return True
        if event.get("resource") == "namespaces" or event.get("kind") == "Namespace":
            named = event.get("name")
            if isinstance(named, str) and self.hides_namespace(named):
                return True
        for end in ("from", "to"):
            node = event.get(end)
            if isinstance(node, str) and self.hides_box(node):
                return True
        return False

    def view(self) -> ScopedView:
        """A new view: one per stream of events (it remembers the requests it hid)."""
        return ScopedView(self)

    def objects(self, objects: Mapping[str, Any]) -> dict[str, Any]:
        """The diagram's objects (``diagram.DiagramObjects.objects_json``) without hidden pods."""
        pods = objects.get("pods")
        if not isinstance(pods, list):
            return dict(objects)
        kept = [pod for pod in pods if not self.hides_namespace(str(pod.get("namespace") or ""))]
        return {**objects, "pods": kept}

    def state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """A starting page's state (``diagram.TakenState.read``) as this viewer may see it."""
        scoped = dict(state)
        objects = state.get("objects")
        if isinstance(objects, Mapping):
            scoped["objects"] = self.objects(objects)
        watches = state.get("watches")
        if isinstance(watches, list):
            scoped["watches"] = [watch for watch in watches if not self.names_hidden(watch)]
        return scoped


class ScopedView:
    """One stream's filter: ``shows(event)`` for each event, in trace order."""

    def __init__(self, scope: TraceScope, *, remembered: int = REMEMBERED_REQUESTS) -> None:
        self.scope = scope
        self._remembered = remembered
        #: The Audit-IDs of hidden requests, and of the viewer's own, oldest first.
        self._hidden: OrderedDict[str, None] = OrderedDict()
        self._own: OrderedDict[str, None] = OrderedDict()

    def shows(self, event: Mapping[str, Any]) -> bool:
        """Whether the viewer may see ``event``; a hidden request's later events are hidden too,
        the viewer's own request's are all shown."""
        request_id = event.get("id")
        if not isinstance(request_id, str) or not request_id:
            return not self.scope.names_hidden(event)
        if request_id in self._own:
            return True
        if request_id in self._hidden:
            return False
        if event.get("type") == "request.received" and event.get("from") == self.scope.own_user:
            self._remember(self._own, request_id)
            return True
        if not self.scope.names_hidden(event):
            return True
        if event.get("type") in REQUEST_EVENTS:
            self._remember(self._hidden, request_id)
        return False

    def _remember(self, ids: OrderedDict[str, None], request_id: str) -> None:
        ids[request_id] = None
        if len(ids) > self._remembered:
            ids.popitem(last=False)

    def events(self, events: Iterable[_Event]) -> list[_Event]:
        """The events of ``events`` the viewer may see, in order."""
        return [event for event in events if self.shows(event)]


__all__ = [
    "KEY_LISTS",
    "LOCATION_FIELDS",
    "REMEMBERED_REQUESTS",
    "REQUEST_EVENTS",
    "ScopedView",
    "TraceScope",
]
