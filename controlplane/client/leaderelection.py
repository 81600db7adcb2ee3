"""Leader election: several copies of a component, one of them at work.

kube-scheduler and kube-controller-manager run as several replicas for availability, but two
schedulers binding the same pods would fight. So the replicas elect a leader through an object on
the API server, a coordination.k8s.io/v1 **Lease** (``kube-system/kube-scheduler``,
``kube-system/kube-controller-manager``), whose spec is the *leader election record*::

    holderIdentity: scheduler-7f9c   leaseDurationSeconds: 15   leaseTransitions: 3
    acquireTime: ...                 renewTime: ...

Every replica (a *candidate*) runs a ``LeaderElector`` with its own identity. Every ``retry_period``
(2 s, with jitter) it reads the Lease and tries to *acquire or renew* it:

- no Lease yet: create it with itself as holder;
- held by someone else whose lease has not expired: wait;
- expired, released (empty holder) or its own: write itself as holder. Writes are updates carrying
  the ``resourceVersion`` that was read, so when two candidates race for an expired lease the API
  server accepts one update and answers the other ``409 Conflict``: optimistic concurrency is the
  whole election algorithm. Taking over from another holder increments ``leaseTransitions``.

**Expiry is judged by the candidate's own clock.** A candidate never compares the holder's
``renewTime`` with its own time (their clocks may disagree). It notes *when it saw the record
change*, by its own clock, and considers the lease expired once ``leaseDurationSeconds`` (15 s)
pass without another change. Every renewal changes ``renewTime``, so a live leader keeps resetting
everyone's countdown; a dead one stops, and 15 s after the last change the first candidate to try
takes over.

The leader keeps renewing every ``retry_period``; if it cannot renew for ``renew_deadline`` (10 s,
less than the 15 s the others wait) it stops leading *before* anyone else may start. A leader that
shuts down cleanly can release the lease (``release_on_cancel``): it writes an empty holder with a
1 s duration, so a standby takes over at its next try instead of 15 s later.

Callbacks, as in client-go: ``on_started_leading`` (a coroutine function, run as a task while this
candidate leads and cancelled when it stops), ``on_stopped_leading`` (called when ``run()`` ends,
like client-go's deferred call, whether or not this candidate ever led) and ``on_new_leader(identity)``
(each time a different leader is observed, including the first).

The decisions are pure functions of (what this candidate has observed, the record just read, now):
``try_acquire_or_renew``, ``renew_optimistically`` and ``release_record``, tested without a server.
``LeaderElector`` is the async loop around them, and ``LeaseLock`` reads and writes the Lease.
Components use ``run_leader_elected``: kube-scheduler and kube-controller-manager (the client's
``Manager``) both stand for their Lease through it, term after term, reporting each change on the
trace. They do so by default, as upstream's ``--leader-elect=true``: even a single replica holds its
Lease, so ``kubectl get leases -n kube-system`` always shows who leads.

Upstream: client-go ``tools/leaderelection/leaderelection.go``, ``resourcelock/leaselock.go``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from controlplane.api.meta import format_micro_time, parse_timestamp
from controlplane.client.backoff import jitter
from controlplane.client.errors import NotFound
from controlplane.client.rest import RESTClient
from controlplane.clock import SYSTEM_CLOCK, Clock, timeout
from controlplane.timing import TimingProfile
from controlplane.trace import NULL_SINK, TraceSink

logger = logging.getLogger(__name__)

#: client-go's ``JitterFactor``: a candidate waits between ``retry_period`` and 2.2 x ``retry_period``.
JITTER_FACTOR = 1.2
#: Tries to give a lease up on stop, each reading it again (see ``LeaderElector._release``).
RELEASE_ATTEMPTS = 3

# -- the record and the pure decision core ---------------------------------------------------------


@dataclass(frozen=True)
class LeaderElectionRecord:
    """What the lock holds (client-go ``resourcelock.LeaderElectionRecord``); times in epoch seconds."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: float | None = None
    renew_time: float | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any]) -> LeaderElectionRecord:
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_timestamp(spec.get("acquireTime")),
            renew_time=parse_timestamp(spec.get("renewTime")),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_lease_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec


@dataclass(frozen=True)
class Observation:
    """What one candidate last saw of the lock, and when it saw it change, by its own clock."""

    record: LeaderElectionRecord | None = None
    time: float = 0.0

    def seeing(self, record: LeaderElectionRecord, now: float) -> Observation:
        """After reading ``record`` at ``now``: the clock restarts only if the record changed."""
        return self if record == self.record else Observation(record, now)

    @property
    def leader(self) -> str:
        return self.record.holder_identity if self.record else ""

    def is_leader(self, identity: str) -> bool:
        return self.record is not None and self.record.holder_identity == identity

    def is_lease_valid(self, now: float) -> bool:
        """Has the record changed within its ``leaseDurationSeconds``, judged by the observer's clock?"""
        return self.record is not None and self.time + self.record.lease_duration_seconds > now


@dataclass(frozen=True)
class Create:
    """There is no lock yet: create it holding ``record``."""

    record: LeaderElectionRecord


@dataclass(frozen=True)
class Update:
    """Write ``record`` over the lock as read (acquire, take over, or renew)."""

    record: LeaderElectionRecord


@dataclass(frozen=True)
class Wait:
    """``holder`` holds a lease that has not expired (seen changing less than its duration ago)."""

    holder: str
    expires_at: float


Action = Create | Update | Wait


def desired_record(identity: str, lease_duration: float, now: float) -> LeaderElectionRecord:
    return LeaderElectionRecord(
        holder_identity=identity,
        lease_duration_seconds=max(1, int(lease_duration)),
        acquire_time=now,
        renew_time=now,
    )


def try_acquire_or_renew(
    *,
    identity: str,
    lease_duration: float,
    observed: Observation,
    current: LeaderElectionRecord | None,
    now: float,
) -> tuple[Action, Observation]:
    """What to do after reading the lock (``current``; None if there is none), and the new observation.

    After a successful ``Create``/``Update`` the caller observes the written record at ``now``.
    """
    record = desired_record(identity, lease_duration, now)
    if current is None:
        return Create(record), observed
    observed = observed.seeing(current, now)
    if current.holder_identity and observed.is_lease_valid(now) and not observed.is_leader(identity):
        return Wait(current.holder_identity, observed.time + current.lease_duration_seconds), observed
    if observed.is_leader(identity):
        record = replace(
            record, acquire_time=current.acquire_time, leader_transitions=current.leader_transitions
        )
    else:
        record = replace(record, leader_transitions=current.leader_transitions + 1)
    return Update(record), observed


def renew_optimistically(
    *, identity: str, lease_duration: float, observed: Observation, now: float
) -> LeaderElectionRecord | None:
    """The leader's fast path: the renewed record to write without reading first, if still leading.

    Written with the resourceVersion last seen; if someone changed the lock since, the write fails
    with a Conflict and the caller falls back to reading it (``try_acquire_or_renew``).
    """
    if observed.record is None or not observed.is_leader(identity) or not observed.is_lease_valid(now):
        return None
    return replace(
        desired_record(identity, lease_duration, now),
        acquire_time=observed.record.acquire_time,
        leader_transitions=observed.record.leader_transitions,
    )


def release_record(*, identity: str, observed: Observation, now: float) -> LeaderElectionRecord | None:
    """The record that gives the lease up (empty holder, 1 s), or None if this candidate does not hold it."""
    if observed.record is None or not observed.is_leader(identity):
        return None
    return LeaderElectionRecord(
        holder_identity="",
        lease_duration_seconds=1,
        acquire_time=now,
        renew_time=now,
        leader_transitions=observed.record.leader_transitions,
    )


# -- the lock ----------------------------------------------------------------------------------


class ResourceLock(Protocol):
    """Where the record lives (client-go ``resourcelock.Interface``)."""

    @property
    def identity(self) -> str: ...

    def describe(self) -> str: ...

    async def get(self) -> LeaderElectionRecord | None:
        """The record, or None if the lock object does not exist."""
        ...

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None:
        """Write over the object last read or written; a Conflict if it changed since."""
        ...


class LeaseClient(Protocol):
    """What a ``LeaseLock`` needs: the Leases of one namespace (a ``rest.ResourceClient`` is one)."""

    async def get(self, name: str, /) -> dict[str, Any]: ...

    async def create(self, obj: dict[str, Any], /) -> dict[str, Any]: ...

    async def update(self, obj: dict[str, Any], /) -> dict[str, Any]: ...


class LeaseLock:
    """A ``coordination.k8s.io/v1`` Lease as the lock (client-go ``resourcelock.LeaseLock``).

    Keeps the Lease it last read or wrote, so that ``update`` sends that ``resourceVersion``.
    """

    def __init__(self, leases: LeaseClient, *, namespace: str, name: str, identity: str) -> None:
        self.leases = leases
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self._lease: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> LeaderElectionRecord | None:
        try:
            self._lease = await self.leases.get(self.name)
        except NotFound:
            return None
        return LeaderElectionRecord.from_lease_spec(self._lease.get("spec") or {})

    async def create(self, record: LeaderElectionRecord) -> None:
        self._lease = await self.leases.create(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": record.to_lease_spec(),
            }
        )

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError(f"lease {self.describe()} updated before it was read or created")
        lease = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record.to_lease_spec()}}
        self._lease = await self.leases.update(lease)


# -- the elector -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderCallbacks:
    """client-go's ``LeaderCallbacks`` (see the module's docstring for when each is called)."""

    on_started_leading: Callable[[], Coroutine[Any, Any, None]]
    on_stopped_leading: Callable[[], None] = lambda: None
    on_new_leader: Callable[[str], None] = lambda identity: None


class LeaderElector:
    """Runs the election for one candidate (``identity`` is the lock's) until cancelled or deposed."""

    def __init__(
        self,
        lock: ResourceLock,
        callbacks: LeaderCallbacks,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool | Callable[[], bool] = False,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        name: str = "",
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renew_deadline must be greater than retry_period * JITTER_FACTOR")
        if retry_period <= 0:
            raise ValueError("retry_period must be greater than zero")
        self.lock = lock
        self.callbacks = callbacks
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.clock = clock
        self.rng = rng or random.Random()
        self.name = name or lock.describe()
        self.observed = Observation()
        self._reported_leader = ""

    @classmethod
    def for_lease(
        cls,
        client: RESTClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        callbacks: LeaderCallbacks,
        **options: Any,
    ) -> LeaderElector:
        """An elector on the Lease ``namespace/name``, read and written through ``client``.

        ``options`` are the constructor's (timings, ``release_on_cancel``, ``rng``); the clock is the
        client's unless given.
        """
        leases = client.resource("coordination.k8s.io", "v1", "leases", namespace)
        lock = LeaseLock(leases, namespace=namespace, name=name, identity=identity)
        options.setdefault("clock", client.clock)
        return cls(lock, callbacks, **options)

    @property
    def identity(self) -> str:
        return self.lock.identity

    def get_leader(self) -> str:
        """The last observed leader's identity ("" before any was seen)."""
        return self.observed.leader

    def is_leader(self) -> bool:
        return self.observed.is_leader(self.identity)

    async def run(self) -> None:
        """Acquire, lead (``on_started_leading`` as a task) while renewing; return once deposed.

        Cancel the task running ``run()`` to stop; with ``release_on_cancel`` the lease is given up.
        """
        try:
            await self._acquire()
            leading = asyncio.create_task(
                self.callbacks.on_started_leading(), name=f"leading:{self.name}:{self.identity}"
            )
            try:
                await self._renew()
            finally:
                leading.cancel()
                await asyncio.wait({leading})
                if not leading.cancelled() and leading.exception() is not None:
                    logger.error("%s: on_started_leading failed", self.identity, exc_info=leading.exception())
                if self._releases():
                    await self._release()
        finally:
            self.callbacks.on_stopped_leading()

    def _releases(self) -> bool:
        """Whether this candidate gives the Lease up now that it stops (``release_on_cancel``, asked
        at that moment when it is a function: a process that is killed writes nothing on its way out)."""
        release = self.release_on_cancel
        return release() if callable(release) else release

    async def _acquire(self) -> None:
        """Try every ``retry_period`` (jittered up to 2.2x) until this candidate holds the lease."""
        logger.info("%s: attempting to acquire leader lease %s", self.identity, self.lock.describe())
        while True:
            acquired = await self._try_acquire_or_renew()
            self._maybe_report_transition()
            if acquired:
                logger.info("%s: acquired lease %s", self.identity, self.lock.describe())
                return
            await self.clock.sleep(jitter(self.retry_period, JITTER_FACTOR, self.rng))

    async def _renew(self) -> None:
        """Renew every ``retry_period``; return when ``renew_deadline`` passes without a renewal."""
        while True:
            deadline = self.clock.now() + self.renew_deadline
            while True:
                renewed = await self._before(deadline, self._try_acquire_or_renew())
                self._maybe_report_transition()
                if renewed:
                    break
                await self.clock.sleep(self.retry_period)
                if self.clock.now() >= deadline:
                    logger.info("%s: failed to renew lease %s", self.identity, self.lock.describe())
                    return
            await self.clock.sleep(self.retry_period)

    async def _before(self, deadline: float, attempt: Awaitable[bool]) -> bool:
        """``attempt``'s answer, or False if it is still going at ``deadline`` (cluster time)."""
        try:
            async with timeout(self.clock, deadline - self.clock.now()):
                return await attempt
        except TimeoutError:
            return False

    async def _try_acquire_or_renew(self) -> bool:
        now = self.clock.now()
        fast = renew_optimistically(
            identity=self.identity, lease_duration=self.lease_duration, observed=self.observed, now=now
        )
        if fast is not None:
            if await self._write(self.lock.update, fast):
                return True
            logger.info("%s: optimistic renewal failed, reading the lease", self.identity)
        try:
            current = await self.lock.get()
        except Exception as error:
            logger.warning("%s: cannot read lease %s: %s", self.identity, self.lock.describe(), error)
            return False
        action, self.observed = try_acquire_or_renew(
            identity=self.identity,
            lease_duration=self.lease_duration,
            observed=self.observed,
            current=current,
            now=self.clock.now(),
        )
        if isinstance(action, Wait):
            return False
        write = self.lock.create if isinstance(action, Create) else self.lock.update
        return await self._write(write, action.record)

    async def _write(
        self, write: Callable[[LeaderElectionRecord], Awaitable[None]], record: LeaderElectionRecord
    ) -> bool:
        try:
            await write(record)
        except Exception as error:  # a Conflict (someone else won), or the server is unreachable
            logger.info("%s: cannot write lease %s: %s", self.identity, self.lock.describe(), error)
            return False
        self.observed = Observation(record, self.clock.now())
        return True

    async def _release(self) -> None:
        """Give the lease up, if the lease as read now still names this candidate (a renewal that was
        cut short may have changed it since this candidate last wrote it).

        That renewal may even commit after the read: the read then shows the version before it, and
        the release fails with a Conflict. The lease is read again and the release tried again, a few
        times, rather than leaving the others to wait for the whole lease duration.
        """
        for _ in range(RELEASE_ATTEMPTS):
            try:
                current = await self.lock.get()
            except Exception as error:
                logger.warning(
                    "%s: cannot read lease %s to release it: %s", self.identity, self.lock.describe(), error
                )
                return
            if current is None:
                return
            self.observed = self.observed.seeing(current, self.clock.now())
            record = release_record(identity=self.identity, observed=self.observed, now=self.clock.now())
            if record is None:
                return  # no longer ours
            if await self._write(self.lock.update, record):
                logger.info("%s: released lease %s", self.identity, self.lock.describe())
                return

    def _maybe_report_transition(self) -> None:
        leader = self.observed.leader
        if leader == self._reported_leader:
            return
        self._reported_leader = leader
        self.callbacks.on_new_leader(leader)


# -- standing for election, term after term ----------------------------------------------------------


def default_identity(rng: random.Random) -> str:
    """A candidate's identity when none is given: the host name and a fresh UUID drawn from ``rng``,
    as kube-scheduler and kube-controller-manager make theirs (``hostname + "_" + uuid``)."""
    return f"{socket.gethostname()}_{uuid.UUID(int=rng.getrandbits(128))}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease a component stands for, as whom, and how fast (client-go ``LeaderElectionConfig``,
    the ``--leader-elect-*`` flags of kube-scheduler and kube-controller-manager)."""

    #: The Lease (``--leader-elect-resource-name``): ``kube-scheduler``, ``kube-controller-manager``.
    name: str
    #: Its namespace (``--leader-elect-resource-namespace``).
    namespace: str = "kube-system"
    #: This candidate's identity; empty: ``default_identity`` (host name and a fresh UUID).
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: Give the Lease up on a clean stop, so a standby takes over at its next try (``ReleaseOnCancel``).
    release_on_cancel: bool = True

    @classmethod
    def for_timing(cls, name: str, timing: TimingProfile, **options: Any) -> LeaderElectionConfig:
        """The Lease ``name`` with the leader-election durations of a cluster's timing profile."""
        return cls(
            name,
            lease_duration=timing.leader_lease_duration,
            renew_deadline=timing.leader_renew_deadline,
            retry_period=timing.leader_retry_period,
            **options,
        )

    @property
    def lease(self) -> str:
        """``<namespace>/<name>``, as a student finds it with ``kubectl get lease -n``."""
        return f"{self.namespace}/{self.name}"


async def run_leader_elected(
    client: RESTClient,
    config: LeaderElectionConfig,
    callbacks: LeaderCallbacks,
    *,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    component: str,
    trace: TraceSink = NULL_SINK,
    trace_fields: Mapping[str, Any] | None = None,
    release: Callable[[], bool] | None = None,
) -> None:
    """Stand for election on ``config``'s Lease until cancelled, and lead while holding it.

    This is client-go's ``leaderelection.RunOrDie`` with the component around it. While this candidate
    holds the Lease, ``callbacks.on_started_leading`` runs (the scheduling loop, the controllers);
    when the Lease is lost it is cancelled, ``on_stopped_leading`` is called, and the candidate
    stands again. Upstream's kube-scheduler and kube-controller-manager *exit* when they lose their
    Lease, and whatever supervises them (the kubelet of a static pod) starts a fresh process, which
    stands again; a component here is a task of the lab's process, so this loop stands again itself.
    Cancelling the task that runs it stops everything, and with ``config.release_on_cancel`` the Lease
    is given up so a standby takes over at once. ``release``, when given, is asked at that moment
    whether to give it up all the same: a component stopped as a killed process (a crash, upstream's
    kube-controller-manager, which has no ``ReleaseOnCancel``) says no, and leaves its Lease to expire.

    Each step is also reported on the trace, as ``component.state`` events from the component's node
    of the diagram (``trace_fields``: its ``from`` and ``cluster``; ``component``: its name):
    ``started-leading``, ``stopped-leading``, and ``new-leader`` each time another holder is seen.
    """
    rng = rng if rng is not None else random.Random()
    identity = config.identity or default_identity(rng)
    fields: Mapping[str, Any] = trace_fields or {}

    def report(state: str, reason: str) -> None:
        if trace.enabled:
            trace.emit("component.state", **fields, component=component, state=state, reason=reason)

    async def lead() -> None:
        report("started-leading", f"{identity} holds the Lease {config.lease}")
        try:
            await callbacks.on_started_leading()
        finally:
            report("stopped-leading", f"{identity} no longer holds the Lease {config.lease}")

    def new_leader(leader: str) -> None:
        logger.info("%s: the leader is now %r", component, leader or "(nobody)")
        report("new-leader", f"the leader is now {leader or '(nobody)'}")
        callbacks.on_new_leader(leader)

    def releases() -> bool:
        return config.release_on_cancel and (release is None or release())

    elector = LeaderElector.for_lease(
        client,
        namespace=config.namespace,
        name=config.name,
        identity=identity,
        callbacks=LeaderCallbacks(lead, callbacks.on_stopped_leading, new_leader),
        lease_duration=config.lease_duration,
        renew_deadline=config.renew_deadline,
        retry_period=config.retry_period,
        release_on_cancel=releases,
        clock=clock if clock is not None else client.clock,
        rng=rng,
    )
    while True:
        await elector.run()
        logger.warning("%s: %s lost the Lease %s, standing by", component, identity, config.lease)


__all__ = [
    "JITTER_FACTOR",
    "Action",
    "Create",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseClient",
    "LeaseLock",
    "Observation",
    "ResourceLock",
    "Update",
    "Wait",
    "default_identity",
    "release_record",
    "renew_optimistically",
    "run_leader_elected",
    "try_acquire_or_renew",
]
