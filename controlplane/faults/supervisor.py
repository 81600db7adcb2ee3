"""What faults do to a cluster's components: hold one stopped, or make one crash again and again.

A real component runs under a supervisor: systemd for a kubelet, the control-plane node's kubelet
for the static pods of kube-scheduler and kube-controller-manager, a node's kubelet for its kube-proxy
(a DaemonSet's pod). The fault kinds that break a component act as an operator would on that
supervisor, through the lab's own (``Cluster.stop_component`` and ``start_component``):

- **held stopped** (``stop-kubelet``, ``stop-scheduler``, ``stop-controller-manager``,
  ``stop-kube-proxy``): ``systemctl stop``, or a static pod's manifest moved out of
  ``/etc/kubernetes/manifests``; the component stays stopped until the last fault holding it is
  cleared, then it is started again;
- **crash-looping** (``crash-loop``): the component crashes ``runs_for`` seconds after each start and
  its kubelet starts it again after the CrashLoopBackOff of ``crashloop.py``; a crash is a killed
  process, so a leader leaves its Lease held and the next start waits for it to expire.

Both may hit one component at once (``stop-scheduler`` while the scheduler crash-loops): then it stays
stopped while held, and once let go it starts and crash-loops again with a fresh back-off, as a static
pod whose manifest comes back is a new pod to its kubelet. One lock per component keeps a crash, a
restart and a stop from overlapping. A crash loop is a task of the lab; it never sleeps on the wall:
on the cluster's clock, and only until its next step, or until someone holds or lets go of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from controlplane.faults.crashloop import CrashLoopTiming, RestartSchedule, crashed, restarted
from controlplane.tasks import cancel_and_wait

if TYPE_CHECKING:
    from controlplane.clock import Clock
    from controlplane.runtime import Cluster

logger = logging.getLogger(__name__)

#: A component of one cluster: the cluster's name and the component's diagram id.
Key = tuple[str, str]


class Supervisor:
    """The components faults hold stopped or crash-loop, on every cluster of one lab."""

    def __init__(self) -> None:
        #: The faults holding each component stopped, by fault id.
        self._holds: dict[Key, set[str]] = {}
        #: The crash loops running, by fault id.
        self._loops: dict[str, CrashLoop] = {}
        self._locks: dict[Key, asyncio.Lock] = {}

    # -- holding stopped ---------------------------------------------------------------------------

    def held(self, cluster: Cluster, component: str) -> bool:
        """Whether a fault holds ``component`` of ``cluster`` stopped."""
        return bool(self._holds.get((cluster.name, component)))

    async def hold(
        self, cluster: Cluster, component: str, fault_id: str, *, release_lease: bool = True, reason: str = ""
    ) -> None:
        """Hold ``component`` stopped for the fault ``fault_id``, and stop it (if it runs)."""
        key = (cluster.name, component)
        self._holds.setdefault(key, set()).add(fault_id)
        for loop in self._looping(key):
            loop.held_down()
        async with self.lock(key):
            await cluster.stop_component(component, release_lease=release_lease, reason=reason)
        self._poke(key)

    async def let_go(self, cluster: Cluster, component: str, fault_id: str, *, reason: str = "") -> None:
        """The fault ``fault_id`` no longer holds ``component``; once nothing does, start it again."""
        key = (cluster.name, component)
        self._forget(key, fault_id)
        if not self.held(cluster, component):
            async with self.lock(key):
                await cluster.start_component(component, reason=reason)
        self._poke(key)

    def drop(self, cluster: Cluster, component: str, fault_id: str) -> None:
        """Forget the hold of ``fault_id`` without starting anything (the cluster is stopping)."""
        self._forget((cluster.name, component), fault_id)

    def _forget(self, key: Key, fault_id: str) -> None:
        holders = self._holds.get(key)
        if holders is not None:
            holders.discard(fault_id)
            if not holders:
                del self._holds[key]

    # -- crash loops -------------------------------------------------------------------------------

    async def crash_loop(
        self, cluster: Cluster, component: str, fault_id: str, timing: CrashLoopTiming
    ) -> None:
        """Make ``component`` crash-loop for the fault ``fault_id``: it crashes now (unless it is
        stopped already), and from then on as ``CrashLoop`` says, until ``end_crash_loop``."""
        loop = CrashLoop(self, cluster, component, timing)
        self._loops[fault_id] = loop
        try:
            await loop.start()
        except BaseException:
            self._loops.pop(fault_id, None)
            raise

    async def end_crash_loop(self, fault_id: str, *, start: bool) -> None:
        """End the crash loop of the fault ``fault_id``; with ``start``, the component then runs (if
        no fault holds it stopped), and runs normally from now on."""
        loop = self._loops.pop(fault_id, None)
        if loop is None:
            return
        await loop.end()
        if start and not self.held(loop.cluster, loop.component):
            async with self.lock(loop.key):
                await loop.cluster.start_component(loop.component, reason="it runs normally again")

    def loop(self, fault_id: str) -> CrashLoop | None:
        """The crash loop of a fault (tests look at its schedule)."""
        return self._loops.get(fault_id)

    # -- plumbing ----------------------------------------------------------------------------------

    def lock(self, key: Key) -> asyncio.Lock:
        """The lock of one component: a crash, a restart and a stop never overlap."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _looping(self, key: Key) -> list[CrashLoop]:
        return [loop for loop in self._loops.values() if loop.key == key]

    def _poke(self, key: Key) -> None:
        """Holds on ``key`` changed: its crash loops look again."""
        for loop in self._looping(key):
            loop.poke()


class CrashLoop:
    """One component crash-looping (see the module's docstring): a task that crashes it ``runs_for``
    seconds after each start and starts it again after the back-off, on the cluster's clock."""

    def __init__(
        self, supervisor: Supervisor, cluster: Cluster, component: str, timing: CrashLoopTiming
    ) -> None:
        self.supervisor = supervisor
        self.cluster = cluster
        self.component = component
        self.key: Key = (cluster.name, component)
        self.timing = timing
        self.schedule = RestartSchedule(timing)
        #: When the kubelet starts it again (None: it runs, or is held stopped).
        self.restart_at: float | None = None
        self._poked = asyncio.Event()
        self._ending = False
        self._task: asyncio.Task[None] | None = None

    @property
    def clock(self) -> Clock:
        return self.cluster.clock

    def running(self) -> bool:
        return self.component in self.cluster.components_running

    async def start(self) -> None:
        """The first crash, now (unless it is stopped already), then the loop, as a task."""
        if not self.supervisor.held(self.cluster, self.component):
            async with self.supervisor.lock(self.key):
                await self._crash()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"crash-loop {self.cluster.name}/{self.component}"
        )

    async def end(self) -> None:
        """Stop looping; returns once a crash or a restart under way is done (never cut halfway)."""
        self._ending = True
        self._poked.set()
        task, self._task = self._task, None
        if task is not None:
            await task

    def poke(self) -> None:
        self._poked.set()

    def held_down(self) -> None:
        """A fault holds the component stopped (its manifest moved away): once let go it is a new pod
        to its kubelet, started at once and with a back-off of its own (upstream keys the back-off by
        the pod's UID)."""
        self.schedule = RestartSchedule(self.timing)
        self.restart_at = None

    async def _crash(self) -> None:
        """The component dies: stopped as a killed process (its Lease left held); the back-off says
        when it starts again."""
        delay = self.schedule.restart_delay(self.clock.now())
        await self.cluster.stop_component(
            self.component, release_lease=False, reason=crashed(self.component, delay)
        )
        # Counted from when the process is gone, as the kubelet counts from the container's FinishedAt.
        self.restart_at = self.clock.now() + delay

    async def _run(self) -> None:
        while not self._ending:
            try:
                await self._step()
            except Exception:
                # A start may fail (the API server restarting under it): the kubelet counts it as
                # one more crash, and so does this loop (what was half started is stopped).
                logger.exception("crash loop of %s on cluster %r", self.component, self.cluster.name)
                now = self.clock.now()
                self.restart_at = now + self.schedule.restart_delay(now)
                with contextlib.suppress(Exception):
                    async with self.supervisor.lock(self.key):
                        await self.cluster.stop_component(self.component, release_lease=False)

    async def _step(self) -> None:
        """One step: wait while held; start it once its back-off is over; crash it once it ran."""
        if self.supervisor.held(self.cluster, self.component):
            await self._until(None)  # until let go (``held_down`` made its back-off anew)
            return
        if not self.running():
            restart_at = self.restart_at if self.restart_at is not None else self.clock.now()
            if restart_at > self.clock.now():
                await self._until(restart_at)
                return
            async with self.supervisor.lock(self.key):
                if self._ending or self.supervisor.held(self.cluster, self.component):
                    return
                self.restart_at = None
                await self.cluster.start_component(self.component, reason=restarted(self.schedule.restarts))
            if not self.running():
                await self._until(None)  # the cluster does not run (it is stopping): nothing to restart
            return
        crash_at = self.clock.now() + self.timing.runs_for
        while not self._ending and self.clock.now() < crash_at and self.running():
            if self.supervisor.held(self.cluster, self.component):
                return
            await self._until(crash_at)
        async with self.supervisor.lock(self.key):
            if not self._ending and self.running() and not self.supervisor.held(self.cluster, self.component):
                await self._crash()

    async def _until(self, deadline: float | None) -> None:
        """Until ``deadline`` on the cluster's clock (None: no deadline), or a poke, or the end."""
        if self._ending:
            return
        self._poked.clear()
        waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._poked.wait())}
        if deadline is not None:
            waiters.add(asyncio.ensure_future(self.clock.sleep(max(0.0, deadline - self.clock.now()))))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(*waiters)


__all__ = ["CrashLoop", "Key", "Supervisor"]
