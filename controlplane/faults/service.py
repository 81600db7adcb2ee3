"""The fault service: the one way anything applies, clears and lists faults on a lab's clusters.

A chapter's button (through ``courses/gateway.py``), a solution, the instructor's console and
``manage.py fault`` all call one ``FaultService`` per lab (``FaultService.of(lab)``), so a fault
behaves the same whoever applies it. The service

- checks the fault (``catalogue.check``, with the cluster's node count) and puts it in its book
  (``book.py``), which says whether it starts now, later (a delay), or renews one in force;
- says so on the cluster's trace (``fault.applied``, with the diagram node it hits as ``target`` and
  when it ends as ``expires``), then makes it happen (``effects.py``); a fault that happens at once is
  cleared as soon as it is done (``fault.cleared``, reason ``done``), so the diagram shows it while
  it happens;
- ends each lasting fault when its time is up, starts each delayed one when its time comes (one timer
  task, which sleeps on the lab's clock until the book's next deadline);
- clears every fault of a cluster, without undoing what the cluster's stop undoes anyway, just before
  the lab stops it (it hibernates, is made anew, or the lab stops: ``Lab.add_stop_hook``);
- "clear all" also heals: it starts every component of the cluster's plan that does not run and
  restarts an API server that does not serve, so a cluster comes back healthy even if something was
  left wedged.

It keeps ``Cluster.faults_in_force`` up to date, the faults a topology page that starts now draws
(``controlplane/diagram.py``). Every change of one cluster's faults runs under that cluster's lock,
one at a time; the stop hook does not wait for it (a restart under way may itself be waiting for the
cluster's transition that is stopping it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.components.identities import component_identity
from controlplane.faults import auditing, catalogue
from controlplane.faults.book import Fault, FaultBook, Outcome
from controlplane.faults.catalogue import FaultSpec, InvalidFault
from controlplane.faults.effects import Effect, effects
from controlplane.runtime import Cluster, ClusterState, Lab
from controlplane.store.errors import UnknownCluster
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

#: How long one fault's effect may take before it is given up (a wedged component's stop, say).
EFFECT_SECONDS: Final = 60.0


class FaultError(Exception):
    """A fault could not be applied or cleared; the message says why."""


class NotRunning(FaultError):
    """The cluster does not run now (it hibernates, or failed): nothing can be done to it."""

    def __init__(self, cluster: str, state: str) -> None:
        super().__init__(f"cluster {cluster!r} is {state}: faults apply to a running cluster")
        self.cluster = cluster
        self.state = state


class EffectFailed(FaultError):
    """The fault's effect failed (it is not in force); ``__cause__`` is why."""


@dataclass(frozen=True)
class Applied:
    """What applying a fault did: the fault as the book holds it, and the ``Outcome``."""

    fault: Fault
    outcome: Outcome


_services: weakref.WeakKeyDictionary[Lab, FaultService] = weakref.WeakKeyDictionary()


class FaultService:
    """The faults of one lab's clusters (see the module's docstring)."""

    def __init__(self, lab: Lab, *, kinds: Mapping[str, Effect] | None = None) -> None:
        self.lab = lab
        self.clock = lab.config.clock
        self.book = FaultBook()
        self.effects: dict[str, Effect] = dict(kinds) if kinds is not None else effects()
        self._locks: dict[str, asyncio.Lock] = {}
        self._changed = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        lab.add_stop_hook(self._cluster_stopping)

    @classmethod
    def of(cls, lab: Lab) -> FaultService:
        """The service of ``lab``, made on first use (and then kept as long as the lab is)."""
        service = _services.get(lab)
        if service is None:
            service = _services[lab] = cls(lab)
        return service

    # -- reading ---------------------------------------------------------------------------------

    def in_force(self, cluster: str | None = None) -> list[Fault]:
        return self.book.in_force(cluster)

    def pending(self, cluster: str | None = None) -> list[Fault]:
        return self.book.pending(cluster)

    def check(
        self, cluster: str, kind: str, values: Mapping[str, Any], *, clearing: bool = False
    ) -> FaultSpec:
        """``catalogue.check`` for ``cluster``'s node count (``InvalidFault``, ``UnknownCluster``)."""
        return catalogue.check(kind, values, nodes=self.lab.cluster(cluster).nodes, clearing=clearing)

    # -- applying --------------------------------------------------------------------------------

    async def apply(
        self,
        cluster: str,
        kind: str,
        values: Mapping[str, Any] | None = None,
        *,
        reason: str = "",
        delay: float = 0.0,
        actor: str = "",
    ) -> Applied:
        """Apply the fault ``kind`` with ``values`` (its parameters and ``for``) to running ``cluster``,
        now or ``delay`` seconds from now, for ``actor`` (the user the cluster's audit log names; ""
        for the lab itself). Returns once its effect is done (for a restart: once the new API server
        serves). Raises ``InvalidFault``, ``UnknownCluster``, ``NotRunning`` or ``EffectFailed``."""
        spec = self.check(cluster, kind, values or {})
        return await self.apply_spec(cluster, spec, reason=reason, delay=delay, actor=actor)

    async def apply_spec(
        self, cluster: str, spec: FaultSpec, *, reason: str = "", delay: float = 0.0, actor: str = ""
    ) -> Applied:
        """``apply`` for a fault already checked (a chapter's, checked when the course loaded)."""
        running = self._running(cluster)
        # Checked again for this cluster: a chapter's fault was checked against the chapter's nodes.
        catalogue.check(spec.kind, _values(spec), nodes=running.nodes)
        fault, outcome = self.book.add(
            cluster, spec, now=self.clock.now(), reason=reason, delay=delay, actor=actor
        )
        self._kick()
        if outcome is Outcome.APPLIED:
            await self._start(fault)
        elif outcome is Outcome.RENEWED and fault.id in {f.id for f in self.book.in_force(cluster)}:
            self._emit_applied(running, fault)
        return Applied(fault, outcome)

    async def _start(self, fault: Fault) -> None:
        """A fault in force from now: say so, then make it happen (then, if it happens at once, end it)."""
        try:
            cluster = self._running(fault.cluster)
        except FaultError:
            self.book.remove(fault.id)
            raise
        self._emit_applied(cluster, fault)
        try:
            async with self._lock(fault.cluster), asyncio.timeout(EFFECT_SECONDS):
                await self.effects[fault.kind].apply(self.lab, cluster, fault)
        except Exception as error:
            if self.book.remove(fault.id) is not None:
                self._emit_cleared(fault, f"failed: {error}")
            raise EffectFailed(f"{fault.kind} could not be applied to {fault.cluster!r}: {error}") from error
        if not fault.lasting and self.book.remove(fault.id) is not None:
            self._emit_cleared(fault, "done")

    # -- clearing --------------------------------------------------------------------------------

    async def clear(
        self,
        cluster: str,
        kind: str,
        values: Mapping[str, Any] | None = None,
        *,
        reason: str = "",
        actor: str = "",
    ) -> list[Fault]:
        """Clear the faults of ``kind`` on ``cluster`` (in force or pending) whose parameters are
        ``values`` (None: every fault of the kind); those cleared (none: there was nothing to clear).
        Raises ``InvalidFault`` (a kind that happens at once cannot be cleared) or ``UnknownCluster``."""
        params: Mapping[str, Any] | None = None
        if values is not None:
            params = self.check(cluster, kind, values, clearing=True).parameters()
        else:
            catalogue.kind(kind)
        cleared = []
        for fault in self.book.matching(cluster, kind, params):
            if await self._clear(fault, reason, actor):
                cleared.append(fault)
        return cleared

    async def clear_fault(self, fault_id: str, *, reason: str = "", actor: str = "") -> Fault | None:
        """Clear one fault by its id; None if it is not in the book."""
        fault = self.book.get(fault_id)
        if fault is None or not await self._clear(fault, reason, actor):
            return None
        return fault

    async def clear_all(
        self, cluster: str, *, reason: str = "", heal: bool = True, actor: str = ""
    ) -> list[Fault]:
        """Clear every fault of ``cluster``; with ``heal``, then start every component of its plan that
        does not run and restart its API server if it does not serve (see the module's docstring).
        Those cleared. Never raises for what it cannot undo: it logs it and goes on."""
        cleared = []
        for fault in self.book.matching(cluster):
            with contextlib.suppress(Exception):
                if await self._clear(fault, reason, actor):
                    cleared.append(fault)
        if heal:
            await self._heal(cluster)
        return cleared

    async def _clear(self, fault: Fault, reason: str, actor: str = "") -> bool:
        """Take ``fault`` out of the book and undo it; whether it was still there."""
        was_in_force = fault.id in {f.id for f in self.book.in_force(fault.cluster)}
        if self.book.remove(fault.id) is None:
            return False
        self._kick()
        if not was_in_force:
            return True  # a pending fault never started: nothing to undo, nothing was said
        try:
            cluster = self.lab.cluster(fault.cluster)
            async with self._lock(fault.cluster), asyncio.timeout(EFFECT_SECONDS):
                await self.effects[fault.kind].clear(self.lab, cluster, fault)
        except Exception:
            logger.exception("clearing %s on cluster %r failed", fault.kind, fault.cluster)
            raise
        finally:
            self._emit_cleared(fault, reason, actor)
        return True

    async def _heal(self, name: str) -> None:
        """Start what of ``name``'s plan does not run; restart its API server if it does not serve."""
        try:
            cluster = self.lab.cluster(name)
        except UnknownCluster:
            return
        if cluster.state is not ClusterState.RUNNING:
            return
        try:
            await self.lab.settled(name)  # a wake or a restart under way ends first: then look
            if not self.lab.serving(name):
                async with asyncio.timeout(EFFECT_SECONDS):
                    await self.lab.restart_apiserver(name)
            for kind, node in cluster.component_plan():
                trace_id = component_identity(kind, node).trace_id
                if trace_id not in cluster.components_running:
                    async with asyncio.timeout(EFFECT_SECONDS):
                        await cluster.start_component(trace_id)
        except Exception:
            logger.exception("cluster %r could not be healed", name)

    async def _cluster_stopping(self, name: str) -> None:
        """The lab stops cluster ``name``: its faults end, undone only as far as the stop does not."""
        gone = self.book.drop_cluster(name)
        if gone:
            self._kick()
        try:
            cluster = self.lab.cluster(name)
        except UnknownCluster:
            return
        for fault in gone:
            try:
                async with asyncio.timeout(EFFECT_SECONDS):
                    await self.effects[fault.kind].stopping(cluster, fault)
            except Exception:
                logger.exception("ending %s on cluster %r before it stops failed", fault.kind, name)
            self._emit_cleared(fault, "the cluster stops")

    # -- time ------------------------------------------------------------------------------------

    def _kick(self) -> None:
        """The book changed: the timer looks again (and runs, if something will be due)."""
        self._changed.set()
        if (self._timer is None or self._timer.done()) and self.book.next_deadline() is not None:
            self._timer = asyncio.get_running_loop().create_task(self._run_timer(), name="fault-timer")

    async def close(self) -> None:
        """Stop the timer (faults still in the book stay, and end when it runs again). The lab's stop
        does not need this: it clears every cluster's faults, and the timer ends once none is left."""
        timer, self._timer = self._timer, None
        if timer is not None:
            await cancel_and_wait(timer)

    async def _run_timer(self) -> None:
        while True:
            self._changed.clear()
            now = self.clock.now()
            for fault in self.book.expired(now):
                await self._expire(fault)
            for fault in self.book.due(now):
                try:
                    await self._start(fault)
                except FaultError as error:
                    logger.warning("a delayed fault did not start: %s", error)
            deadline = self.book.next_deadline()
            if deadline is None:
                return
            sleep = asyncio.ensure_future(self.clock.sleep(max(0.0, deadline - self.clock.now())))
            changed = asyncio.ensure_future(self._changed.wait())
            try:
                await asyncio.wait({sleep, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleep.cancel()
                changed.cancel()

    async def _expire(self, fault: Fault) -> None:
        try:
            cluster = self.lab.cluster(fault.cluster)
            async with self._lock(fault.cluster), asyncio.timeout(EFFECT_SECONDS):
                await self.effects[fault.kind].clear(self.lab, cluster, fault)
        except Exception:
            logger.exception("ending %s on cluster %r when its time was up failed", fault.kind, fault.cluster)
        self._emit_cleared(fault, "its time is up")

    # -- plumbing --------------------------------------------------------------------------------

    def _running(self, name: str) -> Cluster:
        cluster = self.lab.cluster(name)  # UnknownCluster
        if cluster.state is not ClusterState.RUNNING:
            raise NotRunning(name, cluster.state.value)
        return cluster

    def _lock(self, cluster: str) -> asyncio.Lock:
        lock = self._locks.get(cluster)
        if lock is None:
            lock = self._locks[cluster] = asyncio.Lock()
        return lock

    def _emit_applied(self, cluster: Cluster, fault: Fault) -> None:
        self._show(fault.cluster)
        auditing.record(cluster, fault, verb="create", actor=fault.actor, reason=fault.reason)
        fields: dict[str, Any] = {"params": fault.spec.parameters(), **_edge(fault)}
        if fault.reason:
            fields["reason"] = fault.reason
        if fault.ends_at is not None:
            fields["expires"] = fault.ends_at
        cluster.trace.emit(
            "fault.applied", fault=fault.kind, target=fault.target, **{"from": fault.target}, **fields
        )

    def _emit_cleared(self, fault: Fault, reason: str, actor: str = "") -> None:
        self._show(fault.cluster)
        try:
            cluster = self.lab.cluster(fault.cluster)
        except UnknownCluster:
            return
        auditing.record(cluster, fault, verb="delete", actor=actor, reason=reason)
        fields: dict[str, Any] = {"params": fault.spec.parameters(), **_edge(fault)}
        if reason:
            fields["reason"] = reason
        cluster.trace.emit(
            "fault.cleared", fault=fault.kind, target=fault.target, **{"from": fault.target}, **fields
        )

    def _show(self, name: str) -> None:
        """Keep ``Cluster.faults_in_force`` (the diagram's starting state) as the book says."""
        with contextlib.suppress(UnknownCluster):
            self.lab.cluster(name).faults_in_force = [
                {"fault": f.kind, "target": f.target, **_edge(f)} for f in self.book.in_force(name)
            ]


def _edge(fault: Fault) -> dict[str, Any]:
    """``to`` of a fault that hits a link (``partition-component``): the diagram node at its other
    end, so the event names the edge from ``target`` to there."""
    link_to = fault.spec.definition.link_to
    return {"to": link_to} if link_to is not None else {}


def _values(spec: FaultSpec) -> dict[str, Any]:
    values: dict[str, Any] = spec.parameters()
    if spec.duration is not None:
        values[catalogue.DURATION] = spec.duration
    return values


__all__ = ["Applied", "EffectFailed", "FaultError", "FaultService", "InvalidFault", "NotRunning"]
