"""Leader election: the pure decisions; the elector loop on a ManualClock against an in-memory lock;
then electors on Lease objects of a real (in-process) API server, on a fast cluster clock.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from controlplane.client.errors import Conflict as ConflictError
from controlplane.client.leaderelection import (
    Create,
    LeaderCallbacks,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    Observation,
    ResourceLock,
    Update,
    Wait,
    release_record,
    renew_optimistically,
    try_acquire_or_renew,
)
from controlplane.client.rest import RESTClient
from controlplane.clock import Clock, ManualClock, ScaledClock
from tests.controlplane.client.conftest import Cluster

T0 = 1_000.0


def decide(
    identity: str, observed: Observation, current: LeaderElectionRecord | None, now: float
) -> tuple[object, Observation]:
    return try_acquire_or_renew(
        identity=identity, lease_duration=15, observed=observed, current=current, now=now
    )


# -- the pure core -----------------------------------------------------------------------------


def test_no_lock_yet_means_create_it_holding_it() -> None:
    action, observed = decide("a", Observation(), None, T0)
    assert action == Create(LeaderElectionRecord("a", 15, T0, T0, 0))
    assert observed == Observation()


def test_an_unexpired_lease_of_another_means_wait_until_it_expires() -> None:
    held = LeaderElectionRecord("b", 15, T0 - 100, T0 - 100, 2)
    action, observed = decide("a", Observation(), held, T0)
    # Seen for the first time now: the candidate's own countdown starts now, whatever renewTime says.
    assert action == Wait("b", T0 + 15)
    assert observed == Observation(held, T0)


def test_expiry_is_judged_by_when_the_candidate_saw_the_record_change() -> None:
    held = LeaderElectionRecord("b", 15, T0, T0, 2)
    _, observed = decide("a", Observation(), held, T0)
    # The same record 14.9 s later: still valid (the holder's renewTime plays no part).
    action, observed = decide("a", observed, held, T0 + 14.9)
    assert isinstance(action, Wait)
    assert observed.time == T0
    # A renewal changes the record: the countdown restarts from when this candidate saw it.
    renewed = LeaderElectionRecord("b", 15, T0, T0 + 10, 2)
    action, observed = decide("a", observed, renewed, T0 + 14.9)
    assert action == Wait("b", T0 + 29.9)
    # 15 s without a change: expired; taking over counts a transition and keeps nothing of b's.
    action, observed = decide("a", observed, renewed, T0 + 29.9)
    assert action == Update(LeaderElectionRecord("a", 15, T0 + 29.9, T0 + 29.9, 3))


def test_a_clock_far_behind_the_holders_does_not_take_over_early() -> None:
    # The holder's renewTime is an hour in this candidate's past: irrelevant, only change counts.
    held = LeaderElectionRecord("b", 15, T0 - 3600, T0 - 3600, 0)
    _, observed = decide("a", Observation(), held, T0)
    action, _ = decide("a", observed, held, T0 + 1)
    assert isinstance(action, Wait)


def test_the_holder_renews_keeping_acquire_time_and_transitions() -> None:
    mine = LeaderElectionRecord("a", 15, T0, T0, 4)
    observed = Observation(mine, T0)
    action, _ = decide("a", observed, mine, T0 + 2)
    assert action == Update(LeaderElectionRecord("a", 15, T0, T0 + 2, 4))


def test_a_released_lease_is_taken_at_once() -> None:
    released = LeaderElectionRecord("", 1, T0, T0, 4)
    action, _ = decide("a", Observation(), released, T0)
    assert action == Update(LeaderElectionRecord("a", 15, T0, T0, 5))


def test_the_optimistic_renewal_only_while_leading_and_valid() -> None:
    mine = LeaderElectionRecord("a", 15, T0, T0, 1)
    observed = Observation(mine, T0)
    fast = renew_optimistically(identity="a", lease_duration=15, observed=observed, now=T0 + 2)
    assert fast == LeaderElectionRecord("a", 15, T0, T0 + 2, 1)
    assert renew_optimistically(identity="a", lease_duration=15, observed=observed, now=T0 + 15) is None
    assert renew_optimistically(identity="b", lease_duration=15, observed=observed, now=T0 + 2) is None
    assert renew_optimistically(identity="a", lease_duration=15, observed=Observation(), now=T0) is None


def test_release_writes_an_empty_holder_for_one_second() -> None:
    observed = Observation(LeaderElectionRecord("a", 15, T0, T0, 3), T0)
    assert release_record(identity="a", observed=observed, now=T0 + 5) == LeaderElectionRecord(
        "", 1, T0 + 5, T0 + 5, 3
    )
    assert release_record(identity="b", observed=observed, now=T0 + 5) is None


def test_the_record_round_trips_through_a_lease_spec() -> None:
    record = LeaderElectionRecord("a", 15, 1_700_000_000.123456, 1_700_000_002.5, 7)
    spec = record.to_lease_spec()
    assert spec == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "leaseTransitions": 7,
        "acquireTime": "2023-11-14T22:13:20.123456Z",
        "renewTime": "2023-11-14T22:13:22.500000Z",
    }
    back = LeaderElectionRecord.from_lease_spec(spec)
    assert back.holder_identity == "a" and back.leader_transitions == 7
    assert back.acquire_time == pytest.approx(record.acquire_time)
    assert back.renew_time == pytest.approx(record.renew_time)
    assert LeaderElectionRecord.from_lease_spec({}) == LeaderElectionRecord()


# -- the elector loop, against an in-memory lock -----------------------------------------------


class Conflict(Exception):
    pass


@dataclass
class MemoryLeaseServer:
    """One lock record with a version, refusing writes based on a stale read (like a 409)."""

    record: LeaderElectionRecord | None = None
    version: int = 0
    reachable: bool = True
    writes: list[LeaderElectionRecord] = field(default_factory=list)


class MemoryLock:
    def __init__(self, server: MemoryLeaseServer, identity: str) -> None:
        self.server = server
        self._identity = identity
        self._version: int | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return "memory/lock"

    def _check(self) -> None:
        if not self.server.reachable:
            raise ConnectionError("server unreachable")

    async def get(self) -> LeaderElectionRecord | None:
        self._check()
        self._version = self.server.version
        return self.server.record

    async def create(self, record: LeaderElectionRecord) -> None:
        self._check()
        if self.server.record is not None:
            raise Conflict("already exists")
        self._commit(record)

    async def update(self, record: LeaderElectionRecord) -> None:
        self._check()
        if self._version != self.server.version:
            raise Conflict("the object has been modified")
        self._commit(record)

    def _commit(self, record: LeaderElectionRecord) -> None:
        self.server.version += 1
        self.server.record = record
        self.server.writes.append(record)
        self._version = self.server.version


@dataclass
class Candidate:
    """One running elector and what its callbacks saw."""

    elector: LeaderElector
    task: asyncio.Task[None]
    leading: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    saw_a_leader: asyncio.Event = field(default_factory=asyncio.Event)
    leaders_seen: list[str] = field(default_factory=list)
    became_leader_at: list[float] = field(default_factory=list)


class Candidates:
    """Starts electors on given locks; the fixture cancels them after the test."""

    def __init__(self) -> None:
        self.started: list[Candidate] = []

    def start(self, lock: ResourceLock, clock: Clock, *, release_on_cancel: bool = False) -> Candidate:
        async def lead() -> None:
            candidate.became_leader_at.append(clock.now())
            candidate.leading.set()
            try:
                await asyncio.Event().wait()
            finally:
                candidate.leading.clear()

        def stopped() -> None:
            candidate.stopped.set()

        def new_leader(identity: str) -> None:
            candidate.leaders_seen.append(identity)
            candidate.saw_a_leader.set()

        elector = LeaderElector(
            lock,
            LeaderCallbacks(lead, stopped, new_leader),
            clock=clock,
            rng=random.Random(lock.identity),
            release_on_cancel=release_on_cancel,
        )
        candidate = Candidate(elector, asyncio.create_task(elector.run()))
        self.started.append(candidate)
        return candidate

    async def stop_all(self) -> None:
        for candidate in self.started:
            candidate.task.cancel()
        await asyncio.gather(*(c.task for c in self.started), return_exceptions=True)


@pytest.fixture
async def candidates() -> AsyncIterator[Candidates]:
    started = Candidates()
    yield started
    await started.stop_all()


async def settle() -> None:
    """Let the electors finish what they are doing now (no time passes)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def advance(clock: ManualClock, seconds: float, step: float = 0.5) -> None:
    """Move the clock in steps, letting the electors finish what each step woke them up for."""
    await settle()
    for _ in range(round(seconds / step)):
        await clock.advance(step)
        await settle()


async def test_the_first_candidate_acquires_and_keeps_renewing(
    candidates: Candidates,
) -> None:
    clock, server = ManualClock(T0), MemoryLeaseServer()
    a = candidates.start(MemoryLock(server, "a"), clock)
    await asyncio.wait_for(a.leading.wait(), 1)
    assert a.elector.is_leader()
    assert server.record == LeaderElectionRecord("a", 15, T0, T0, 0)
    assert a.leaders_seen == ["a"]
    await advance(clock, 10)
    # Created, renewed at once (client-go's renew loop starts immediately), then every 2 s.
    assert [w.renew_time for w in server.writes] == [T0, T0, T0 + 2, T0 + 4, T0 + 6, T0 + 8, T0 + 10]
    assert server.record is not None
    assert server.record.acquire_time == T0 and server.record.leader_transitions == 0


async def test_a_standby_takes_over_after_the_lease_expires_by_its_own_clock(
    candidates: Candidates,
) -> None:
    clock, server = ManualClock(T0), MemoryLeaseServer()
    a = candidates.start(MemoryLock(server, "a"), clock)
    await asyncio.wait_for(a.leading.wait(), 1)
    b = candidates.start(MemoryLock(server, "b"), clock)
    await advance(clock, 20)
    assert not b.leading.is_set(), "a renews, so b must keep waiting"
    assert b.leaders_seen == ["a"]
    # a dies without releasing: its record stops changing.
    a.task.cancel()
    await asyncio.gather(a.task, return_exceptions=True)
    assert server.record is not None and server.record.renew_time is not None
    last_renewal = server.record.renew_time
    await advance(clock, last_renewal + 14.5 - clock.now())
    assert not b.leading.is_set(), "b saw the last renewal less than 15 s ago"
    await advance(clock, 10)
    assert b.leading.is_set()
    assert server.record.holder_identity == "b"
    assert server.record.leader_transitions == 1
    assert server.record.acquire_time is not None
    # b saw the last renewal within one jittered retry period (at most 4.4 s) of it being written,
    # and takes over at its first try 15 s after that.
    assert last_renewal + 15 <= server.record.acquire_time <= last_renewal + 15 + 2 * 4.4 + 0.5
    assert b.leaders_seen == ["a", "b"]


async def test_release_on_cancel_lets_the_standby_take_over_at_its_next_try(
    candidates: Candidates,
) -> None:
    clock, server = ManualClock(T0), MemoryLeaseServer()
    a = candidates.start(MemoryLock(server, "a"), clock, release_on_cancel=True)
    await asyncio.wait_for(a.leading.wait(), 1)
    b = candidates.start(MemoryLock(server, "b"), clock)
    await advance(clock, 5)
    a.task.cancel()
    await asyncio.gather(a.task, return_exceptions=True)
    assert a.stopped.is_set()
    assert server.record is not None and server.record.holder_identity == ""
    released_at = clock.now()
    await advance(clock, 5)
    assert b.leading.is_set()
    assert server.record.holder_identity == "b"
    assert server.record.acquire_time is not None
    assert server.record.acquire_time - released_at <= 4.4 + 0.5


async def test_a_leader_that_cannot_renew_stops_before_its_lease_expires(
    candidates: Candidates,
) -> None:
    clock, server = ManualClock(T0), MemoryLeaseServer()
    a = candidates.start(MemoryLock(server, "a"), clock)
    await asyncio.wait_for(a.leading.wait(), 1)
    await advance(clock, 4)
    last_renewal = clock.now()
    server.reachable = False
    await advance(clock, 9.5)
    assert a.leading.is_set(), "still within the renew deadline"
    await advance(clock, 2.5)
    # Deposed within renew_deadline (10 s) plus one retry period, before 15 s would let others in.
    assert not a.leading.is_set()
    assert a.task.done() and a.stopped.is_set()
    assert clock.now() - last_renewal < 15


async def test_two_candidates_racing_for_a_lock_agree_on_one_leader(
    candidates: Candidates,
) -> None:
    clock, server = ManualClock(T0), MemoryLeaseServer()
    a = candidates.start(MemoryLock(server, "a"), clock)
    b = candidates.start(MemoryLock(server, "b"), clock)
    await advance(clock, 30)
    assert a.leading.is_set() != b.leading.is_set()
    assert server.record is not None
    leader = a if a.leading.is_set() else b
    assert server.record.holder_identity == leader.elector.identity
    assert a.elector.get_leader() == b.elector.get_leader() == leader.elector.identity


def test_the_elector_refuses_timings_that_cannot_work() -> None:
    lock = MemoryLock(MemoryLeaseServer(), "a")

    async def lead() -> None:
        return None

    with pytest.raises(ValueError, match="lease_duration"):
        LeaderElector(lock, LeaderCallbacks(lead), lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaderElector(lock, LeaderCallbacks(lead), renew_deadline=2, retry_period=2)


# -- against the API server --------------------------------------------------------------------

#: Cluster time runs 10x faster: a 15 s lease lasts 1.5 s of the test's time.
SCALE = 10.0


@pytest.fixture
async def lease_locks(
    cluster: Cluster, candidates: Candidates
) -> AsyncIterator[Callable[[str, Clock], LeaseLock]]:
    """``LeaseLock``s on ``kube-system/kube-scheduler``, each through its own client on ``clock``."""
    clients: list[RESTClient] = []

    def lock(identity: str, clock: Clock) -> LeaseLock:
        clients.append(RESTClient(cluster.config(clock=clock)))
        leases = clients[-1].resource("coordination.k8s.io", "v1", "leases", "kube-system")
        return LeaseLock(leases, namespace="kube-system", name="kube-scheduler", identity=identity)

    yield lock
    await candidates.stop_all()  # before their clients close
    for client in clients:
        await client.aclose()


async def test_a_stale_lease_update_is_a_conflict(cluster: Cluster) -> None:
    leases = cluster.client.resource("coordination.k8s.io", "v1", "leases", "kube-system")
    one = LeaseLock(leases, namespace="kube-system", name="race", identity="one")
    two = LeaseLock(leases, namespace="kube-system", name="race", identity="two")
    assert await one.get() is None
    await one.create(LeaderElectionRecord("one", 15, T0, T0, 0))
    assert (await two.get()) == LeaderElectionRecord("one", 15, T0, T0, 0)
    await one.update(LeaderElectionRecord("one", 15, T0, T0 + 2, 0))
    with pytest.raises(ConflictError):
        await two.update(LeaderElectionRecord("two", 15, T0 + 2, T0 + 2, 1))
    lease = await leases.get("race")
    assert lease["spec"]["holderIdentity"] == "one"
    assert lease["spec"]["renewTime"] == "1970-01-01T00:16:42.000000Z"


async def test_the_standby_takes_over_a_dead_leaders_lease_after_it_expires(
    cluster: Cluster, candidates: Candidates, lease_locks: Callable[[str, Clock], LeaseLock]
) -> None:
    clock = ScaledClock(SCALE)
    a = candidates.start(lease_locks("scheduler-a", clock), clock)
    await asyncio.wait_for(a.leading.wait(), 5)
    b = candidates.start(lease_locks("scheduler-b", clock), clock)
    # Two lease durations: a keeps renewing, b keeps waiting.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(b.leading.wait(), 30 / SCALE)
    assert b.elector.get_leader() == "scheduler-a"

    a.task.cancel()  # dies without releasing the lease
    await asyncio.gather(a.task, return_exceptions=True)
    leases = cluster.client.resource("coordination.k8s.io", "v1", "leases", "kube-system")
    last_renewal = LeaderElectionRecord.from_lease_spec(
        (await leases.get("kube-scheduler"))["spec"]
    ).renew_time
    assert last_renewal is not None
    await asyncio.wait_for(b.leading.wait(), 30 / SCALE)
    # b waited until 15 s after it saw the last renewal (which it saw at the earliest when it was
    # written), and saw it within one jittered retry period (4.4 s); 3 s of slack for a busy machine.
    assert last_renewal + 15 <= b.became_leader_at[0] <= last_renewal + 15 + 2 * 4.4 + 3

    lease = await leases.get("kube-scheduler")
    assert lease["spec"]["holderIdentity"] == "scheduler-b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert lease["spec"]["leaseDurationSeconds"] == 15


async def test_a_leader_that_releases_on_stop_hands_over_at_once(
    cluster: Cluster, candidates: Candidates, lease_locks: Callable[[str, Clock], LeaseLock]
) -> None:
    clock = ScaledClock(SCALE)
    a = candidates.start(lease_locks("manager-a", clock), clock, release_on_cancel=True)
    await asyncio.wait_for(a.leading.wait(), 5)
    b = candidates.start(lease_locks("manager-b", clock), clock)
    await asyncio.wait_for(b.saw_a_leader.wait(), 5)
    assert b.elector.get_leader() == "manager-a"
    assert not b.leading.is_set()
    a.task.cancel()
    await asyncio.gather(a.task, return_exceptions=True)
    released_at = clock.now()
    await asyncio.wait_for(b.leading.wait(), 30 / SCALE)
    assert b.became_leader_at[0] - released_at <= 4.4 + 2, "b must not wait for the 15 s lease"
    lease = await cluster.client.resource("coordination.k8s.io", "v1", "leases", "kube-system").get(
        "kube-scheduler"
    )
    assert lease["spec"]["holderIdentity"] == "manager-b"
    assert lease["spec"]["leaseTransitions"] == 1


async def test_two_candidates_starting_together_elect_one(
    cluster: Cluster, candidates: Candidates, lease_locks: Callable[[str, Clock], LeaseLock]
) -> None:
    clock = ScaledClock(SCALE)
    a, b = candidates.start(lease_locks("a", clock), clock), candidates.start(lease_locks("b", clock), clock)
    waits = [asyncio.create_task(a.leading.wait()), asyncio.create_task(b.leading.wait())]
    done, pending = await asyncio.wait(waits, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*waits, return_exceptions=True)
    assert len(done) == 1
    loser = b if a.leading.is_set() else a
    with pytest.raises(TimeoutError):  # more than a lease duration: the loser still does not lead
        await asyncio.wait_for(loser.leading.wait(), 20 / SCALE)
    assert a.leading.is_set() != b.leading.is_set()
    lease = await cluster.client.resource("coordination.k8s.io", "v1", "leases", "kube-system").get(
        "kube-scheduler"
    )
    winner = "a" if a.leading.is_set() else "b"
    assert lease["spec"]["holderIdentity"] == winner
    assert lease["spec"]["leaseTransitions"] == 0
