"""Causality: which trace event caused which, so the browser can answer "why?" and "what then?".

Kubernetes components never call each other. Everything one of them causes travels through the API
server and the store, and the trace names each hop, so cause and effect can be followed by matching
fields, without guessing from timing:

1. **A request and its steps.** Every step of an API request carries the request's Audit-ID as
   ``id``: its pipeline stages, RBAC decision, admission steps, store transactions and its completion.
   The ``request.received`` event is their cause.
2. **A request writes revisions.** A ``store.txn`` that committed (``op`` txn, non-empty ``writes``)
   names its request (``id``) and the ``revision`` it wrote. One revision, one write, one request.
3. **A revision travels on watches.** The API server's own watch on the store (``source`` store, etcd
   to apiserver) delivers the revision to its watch cache, which passes it on every client watch that
   matches (``source`` apiserver, apiserver to the watcher): each ``watch.event`` names the
   ``revision`` it carries.
4. **A watch event triggers work.** A ``reconcile`` or ``scheduler.decision`` names the ``revision``
   of the object change that put its key on the queue (the object's resourceVersion). Its cause is the
   watch event of that revision delivered *to that component* (``to`` = its ``from``), or, when client
   watches are not traced, the store's watch event (or the write) of that revision.
5. **Work makes requests.** A reconcile or scheduling decision lists the Audit-IDs of the requests it
   made (``requests``): the scheduler's binding, a controller's create. Each of those is step 1 again.

So kubectl's create -> its etcd write -> the scheduler's watch event -> its decision -> the binding
request -> its write -> the kubelet's watch event -> ... -> the kubelet's status update.

Workqueues merge events (ten changes to one object while it waits make one reconcile); the reconcile
then names the newest revision, and so the newest change, as its cause. A watch event is never an
effect of the watch request that opened the stream: the stream is the road, not the reason.

``CausalGraph`` builds the edges from a list of events (usually a recorder) and answers ``causes``
and ``effects``, directly or transitively. Pure: no I/O; rebuild it when the events change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.trace import nodes

Event = Mapping[str, Any]

#: Event types that react to a watch event (rule 4) and make requests (rule 5).
REACTION_TYPES = frozenset({"reconcile", "scheduler.decision"})

#: Event types that belong to a request through its ``id`` (rule 1). Watch events are left out: a
#: watch's events are caused by the writes they carry, not by the request that opened the watch.
REQUEST_STEP_TYPES = frozenset(
    {
        "request.stage",
        "request.completed",
        "rbac.decision",
        "admission.step",
        "store.txn",
        "store.compact",
        "watch.opened",
        "watch.closed",
    }
)

Ref = int | str


def is_write(event: Event) -> bool:
    """A committed store transaction that wrote a revision."""
    return (
        event.get("type") == "store.txn"
        and event.get("op") == "txn"
        and event.get("succeeded", True) is not False
        and bool(event.get("writes"))
        and _int(event.get("revision")) is not None
    )


def is_store_watch_event(event: Event) -> bool:
    """A ``watch.event`` of the API server's watch on the store (etcd -> apiserver)."""
    return event.get("type") == "watch.event" and (
        event.get("source") == "store" or event.get("from") == nodes.ETCD
    )


def is_client_watch_event(event: Event) -> bool:
    """A ``watch.event`` the API server sent to one of its clients (apiserver -> watcher)."""
    return event.get("type") == "watch.event" and not is_store_watch_event(event)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class CausalGraph:
    """Cause -> effect edges between the events given, by seq."""

    def __init__(self, events: Iterable[Event]) -> None:
        self.events: dict[int, Event] = {}
        self._effects: dict[int, list[int]] = {}
        self._causes: dict[int, list[int]] = {}
        #: The first event of each request (its ``request.received`` when recorded), by Audit-ID.
        self._request_root: dict[str, int] = {}
        self._build(events)

    # -- building ------------------------------------------------------------------------------------

    def _link(self, cause: int, effect: int) -> None:
        if cause == effect:
            return
        effects = self._effects.setdefault(cause, [])
        if effect not in effects:
            effects.append(effect)
            self._causes.setdefault(effect, []).append(cause)

    def _build(self, events: Iterable[Event]) -> None:
        steps: dict[str, list[int]] = {}
        writes: dict[int, list[int]] = {}
        store_watch: dict[int, list[int]] = {}
        client_watch: dict[int, list[int]] = {}
        reactions: list[int] = []
        for event in events:
            seq = event["seq"]
            self.events[seq] = event
            etype = event.get("type")
            request_id = event.get("id")
            if isinstance(request_id, str):
                if etype == "request.received":
                    self._request_root[request_id] = seq
                elif etype in REQUEST_STEP_TYPES:
                    steps.setdefault(request_id, []).append(seq)
                    self._request_root.setdefault(request_id, seq)
            revision = _int(event.get("revision"))
            if revision is not None and is_write(event):
                writes.setdefault(revision, []).append(seq)
            elif etype == "watch.event" and revision is not None:
                target = store_watch if is_store_watch_event(event) else client_watch
                target.setdefault(revision, []).append(seq)
            if etype in REACTION_TYPES:
                reactions.append(seq)

        # 1. a request's steps follow from its arrival
        for request_id, seqs in steps.items():
            root = self._request_root[request_id]
            for seq in seqs:
                self._link(root, seq)

        # 2-3. a write travels on the store's watch, then on the clients' watches
        for revision, write_seqs in writes.items():
            hops = store_watch.get(revision) or []
            for write in write_seqs:
                for hop in hops or client_watch.get(revision, []):
                    self._link(write, hop)
        for revision, client_seqs in client_watch.items():
            for hop in store_watch.get(revision, []):
                for seq in client_seqs:
                    self._link(hop, seq)

        # 4-5. a watch event triggers work, and the work makes requests
        for seq in reactions:
            event = self.events[seq]
            revision = _int(event.get("revision"))
            if revision is not None:
                component = event.get("from")
                delivered = [
                    s for s in client_watch.get(revision, []) if self.events[s].get("to") == component
                ]
                for cause in delivered or store_watch.get(revision) or writes.get(revision, []):
                    self._link(cause, seq)
            requests = event.get("requests")
            if isinstance(requests, list):
                for request_id in requests:
                    if isinstance(request_id, str) and request_id in self._request_root:
                        self._link(seq, self._request_root[request_id])

    # -- asking --------------------------------------------------------------------------------------

    def resolve(self, ref: Ref) -> int | None:
        """The seq ``ref`` stands for: a seq itself, or an Audit-ID (its request's first event)."""
        if isinstance(ref, str):
            return self._request_root.get(ref)
        return ref if ref in self.events else None

    def effects(self, ref: Ref, *, transitive: bool = True) -> list[Event]:
        """What did this cause? The events that followed from ``ref`` (a seq or an Audit-ID), by seq."""
        return self._walk(ref, self._effects, transitive)

    def causes(self, ref: Ref, *, transitive: bool = True) -> list[Event]:
        """What caused this? The events ``ref`` (a seq or an Audit-ID) followed from, by seq."""
        return self._walk(ref, self._causes, transitive)

    def chain(self, ref: Ref) -> list[Event]:
        """Everything on ``ref``'s causal chain, itself included: what the diagram highlights."""
        seq = self.resolve(ref)
        if seq is None:
            return []
        seqs = {e["seq"] for e in self.causes(seq)} | {seq} | {e["seq"] for e in self.effects(seq)}
        return [self.events[s] for s in sorted(seqs)]

    def _walk(self, ref: Ref, edges: Mapping[int, list[int]], transitive: bool) -> list[Event]:
        start = self.resolve(ref)
        if start is None:
            return []
        seen: set[int] = set()
        todo = deque(edges.get(start, []))
        while todo:
            seq = todo.popleft()
            if seq in seen or seq == start:
                continue
            seen.add(seq)
            if transitive:
                todo.extend(edges.get(seq, []))
        return [self.events[s] for s in sorted(seen)]


def effects(events: Iterable[Event], ref: Ref, *, transitive: bool = True) -> list[Event]:
    """What did ``ref`` cause, among ``events`` (a recorder, an imported run ...)."""
    return CausalGraph(events).effects(ref, transitive=transitive)


def causes(events: Iterable[Event], ref: Ref, *, transitive: bool = True) -> list[Event]:
    """What caused ``ref``, among ``events``."""
    return CausalGraph(events).causes(ref, transitive=transitive)


__all__ = [
    "REACTION_TYPES",
    "REQUEST_STEP_TYPES",
    "CausalGraph",
    "causes",
    "effects",
    "is_client_watch_event",
    "is_store_watch_event",
    "is_write",
]
