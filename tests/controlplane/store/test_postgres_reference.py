"""The PostgreSQL backend's PL/pgSQL copy of the MVCC rules, held to the reference on generated programs.

``postgres.py`` does not run the pure core (``mvcc.evaluate``): its transactions, lease revocations
and compactions are PL/pgSQL functions (``kubelab.txn``, ``txn1``, ``lease_revoke``, ``compact``),
so that a write costs one round trip. There is no in-memory store in Kubelab; the reference is the
SQLite backend, which persists exactly what the pure core decides (``mvcc.py``, with the in-memory
key index of ``keyindex.py`` for reads). This module proves that, for every generated program, the
two backends cannot be told apart through the ``Store`` interface:

- every step gives the same answer: the same ``TxnResult`` (succeeded flag, revision, each
  response with its previous key-value, each event), the same ``KeyValue``s with the same
  create/mod revision, version and lease, the same ``RangeResult`` (keys, revision, ``more``,
  ``count``), or the same error as a type with the same fields (``Compacted``, ``FutureRevision``,
  ``KeyExists``, ``KeyNotFound``, ``RevisionMismatch``, ``LeaseNotFound``);
- after every step the current revision and the compaction mark agree;
- a watch on the whole key space sees the same events (type, key-value, previous key-value), and
  so does every watch a step opens, on the whole key space or a sub-prefix, from a past, present,
  future or compacted revision;
- at the end, a read at every revision from the compaction mark to the current one agrees.

The programs mix general transactions (up to three compares on create_revision, mod_revision or
version, with =, !=, < or >, against literal values or the key's actual value +-1; up to three
puts, deletes and gets per branch), the one-key shapes that go through the ``txn1`` fast path, the
API server's put/create/update/delete, gets and ranges (with start, limit and a revision that may be
compacted or in the future), compactions (possibly backwards or into the future), leases (grant,
keepalive, revoke, and puts naming live, revoked or unknown leases) and watches. Keys include
sub-prefixes of each other and non-ASCII characters, so key order and prefix ends are exercised.
Values may be empty. ``Compare`` has no value target in this store (only the three revisions and
version, as kube-apiserver uses), so value compares are not generated.

Every program starts from the same few writes (``PRELUDE``), so that even a short one meets keys
with several versions, deleted and re-created keys and a key on a lease. Each of the 60 examples
runs on a fresh PostgreSQL schema (``fresh_schema``) and a fresh SQLite file; a divergence is
reported with the requests as both backends received them, cut down by ``minimise``.

What it does not prove: concurrency and several processes (``test_postgres.py`` and the
conformance suite cover those), and lease expiry on the clock (leases here live for an hour).

The comparison found one divergence so far, in the reference: SQLite ended a watch with ``Compacted``
when a compaction passed the revision its history replay had already reached. The regression tests
at the end, which run on every backend, keep it fixed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from controlplane.store import (
    Compare,
    Delete,
    DeleteResponse,
    Event,
    Get,
    KeyValue,
    Lease,
    Put,
    PutResponse,
    RangeResult,
    Store,
    StoreError,
    Txn,
    TxnResult,
    Watch,
)
from controlplane.store.errors import (
    Compacted,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    LeaseNotFound,
    RevisionMismatch,
)
from controlplane.store.kv import CompareOp, CompareTarget, OpResponse
from tests.support import postgres
from tests.support.stores import make_store, next_events

P = "/registry/ref/"
#: Keys that are prefixes of each other ("a" < "a/x" < "ab"), and non-ASCII ones ("bé", "b😀").
KEYS = tuple(P + name for name in ("a", "a/x", "ab", "b", "bé", "b\U0001f600"))
PREFIXES = (P, P + "a", P + "b")
TARGETS: tuple[CompareTarget, ...] = ("create_revision", "mod_revision", "version")
OPS: tuple[CompareOp, ...] = ("=", "!=", "<", ">")

#: A lease id no backend hands out in a fresh store.
UNKNOWN_LEASE = 7_777_777
#: Long enough that no lease expires during an example: expiry runs on the clock, not in the program.
LEASE_TTL = 3600


# -- programs ---------------------------------------------------------------------------------------
#
# Steps are symbolic: revisions are offsets from the current revision, compare values may be offsets
# from the key's actual value, and leases are handles (1: the first lease granted in this run, 2: the
# second...; -1: a lease that never existed). Each step is resolved once, against the reference, into
# the same request for both backends; only lease handles are resolved per backend (ids may differ).


class PutSpec(NamedTuple):
    key: str
    value: bytes
    lease: int = 0  # a lease handle


OpSpec = PutSpec | Delete | Get


class CmpSpec(NamedTuple):
    key: str
    target: CompareTarget
    op: CompareOp
    value: int
    relative: bool  # value is an offset from the key's actual target (0 if absent)


class TxnStep(NamedTuple):
    compares: tuple[CmpSpec, ...]
    success: tuple[OpSpec, ...]
    failure: tuple[OpSpec, ...]


class HelperStep(NamedTuple):
    """The API server's requests: ``expected`` is an offset from the key's actual mod_revision."""

    kind: Literal["put", "create", "update", "delete"]
    key: str
    value: bytes
    lease: int
    expected: int | None


class ReadStep(NamedTuple):
    """``get(key)`` if ``single`` else ``range(prefix, start=, limit=)``, at current + ``revision``."""

    key: str
    single: bool
    start: str | None
    revision: int | None
    limit: int


class CompactStep(NamedTuple):
    offset: int  # from the current revision


class LeaseStep(NamedTuple):
    kind: Literal["grant", "keepalive", "revoke"]
    lease: int


class WatchStep(NamedTuple):
    prefix: str
    revision: int | None  # from the current revision; None: from now


Step = TxnStep | HelperStep | ReadStep | CompactStep | LeaseStep | WatchStep

#: Half the time one of two hot keys, so that keys get several versions, deletes and re-creates.
keys = st.one_of(st.sampled_from((P + "a", P + "b")), st.sampled_from(KEYS))
values = st.binary(max_size=3)
lease_handles = st.sampled_from((0, 0, 0, 0, 0, 0, 1, 1, 2, -1))
revision_offsets = st.one_of(st.none(), st.integers(-6, 2))


def compare_on(key: st.SearchStrategy[str]) -> st.SearchStrategy[CmpSpec]:
    targets, ops = st.sampled_from(TARGETS), st.sampled_from(OPS)
    return st.one_of(
        st.builds(CmpSpec, key, targets, ops, st.integers(-1, 1), st.just(True)),
        st.builds(CmpSpec, key, targets, ops, st.integers(0, 6), st.just(False)),
    )


def op_on(key: st.SearchStrategy[str]) -> st.SearchStrategy[OpSpec]:
    put = st.builds(PutSpec, key, values, lease_handles)
    return st.one_of(put, put, put, st.builds(Delete, key), st.builds(Get, key))


def valid_branch(ops: list[OpSpec]) -> tuple[OpSpec, ...]:
    """Drop writes of a key the branch already writes (the interface refuses them before any backend)."""
    written: set[str] = set()
    kept: list[OpSpec] = []
    for op in ops:
        if not isinstance(op, Get):
            if op.key in written:
                continue
            written.add(op.key)
        kept.append(op)
    return tuple(kept)


general_txns = st.builds(
    TxnStep,
    st.lists(compare_on(keys), min_size=1, max_size=3).map(tuple),
    st.lists(op_on(keys), min_size=1, max_size=3).map(valid_branch),
    st.lists(op_on(keys), max_size=3).map(valid_branch),
)


def one_key_txn(key: str, compare: CmpSpec, op: OpSpec, failure_get: bool) -> TxnStep:
    """The shapes PostgreSQL sends through ``txn1``: one key, one compare, and maybe a failure Get.
    (Without a compare: the helpers' put and delete.)"""
    return TxnStep(
        (compare._replace(key=key),),
        (op._replace(key=key),),
        (Get(key),) if failure_get else (),
    )


# (Built once, with the key put in afterwards: strategies made while drawing cost more than the runs.)
one_key_txns = st.builds(one_key_txn, keys, compare_on(keys), op_on(keys), st.booleans())
helpers = st.builds(
    HelperStep,
    st.sampled_from(("put", "create", "update", "delete")),
    keys,
    values,
    lease_handles,
    st.one_of(st.none(), st.integers(-1, 1)),
)
reads = st.builds(
    ReadStep,
    st.sampled_from(KEYS + PREFIXES),
    st.booleans(),
    st.one_of(st.none(), keys),
    revision_offsets,
    st.integers(0, 3),
)
#: Plain puts and creates, so that keys exist and have history for the other steps to work on.
writes = st.builds(HelperStep, st.sampled_from(("put", "create")), keys, values, lease_handles, st.none())
steps: st.SearchStrategy[Step] = st.one_of(
    reads,
    writes,
    writes,
    general_txns,
    general_txns,
    general_txns,
    one_key_txns,
    one_key_txns,
    one_key_txns,
    helpers,
    helpers,
    st.builds(CompactStep, st.integers(-4, 1)),
    st.builds(LeaseStep, st.sampled_from(("grant", "grant", "keepalive", "revoke")), st.integers(-1, 2)),
    st.builds(WatchStep, st.sampled_from(PREFIXES), revision_offsets),
)
programs = st.lists(steps, min_size=10, max_size=40)

#: What every program starts from, so that even a short one meets keys with several versions, a
#: re-created key, a deleted one, a two-key revision and a key on a lease (revision 7 at the end).
PRELUDE: tuple[Step, ...] = (
    HelperStep("put", P + "a", b"1", 0, None),
    HelperStep("put", P + "a", b"2", 0, None),
    TxnStep((), (PutSpec(P + "b", b"1"), PutSpec(P + "a/x", b"1")), ()),
    HelperStep("delete", P + "b", b"", 0, None),
    LeaseStep("grant", 0),
    HelperStep("put", P + "ab", b"1", 1, None),
    HelperStep("create", P + "b", b"2", 0, None),
    HelperStep("delete", P + "a/x", b"", 0, None),
)


# -- one backend's side of a run --------------------------------------------------------------------


@dataclass
class Opened:
    """A watch a step opened, what it delivered, and the error that ended it."""

    watch: Watch
    head: int  # the revision its history replay runs to: the current one when it opened, or its start
    events: list[object] = field(default_factory=list)
    error: object = None


@dataclass
class Side:
    """One backend in a run: its store, and everything that must come out the same as the other's."""

    store: Store
    reference: bool
    everything: Watch  # the whole key space, from revision 0: the backend's complete history
    history: list[Event] = field(default_factory=list)
    leases: list[int] = field(default_factory=list)  # ids in grant order: handle n is leases[n - 1]
    watches: list[Opened] = field(default_factory=list)

    def lease_id(self, handle: int) -> int:
        """Handle n is the n-th lease granted (revoked or not), 0 if there is none yet; -1 never existed."""
        if handle < 0:
            return UNKNOWN_LEASE
        return self.leases[handle - 1] if 0 < handle <= len(self.leases) else 0

    # Normal forms: lease ids become handles, everything else stays as the store reported it.

    def lease_name(self, lease_id: int) -> object:
        return f"lease{self.leases.index(lease_id) + 1}" if lease_id in self.leases else lease_id

    def kv(self, kv: KeyValue | None) -> object:
        if kv is None:
            return None
        return (kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, self.lease_name(kv.lease))

    def event(self, event: Event) -> object:
        return (event.type.value, self.kv(event.kv), self.kv(event.prev_kv))

    def response(self, response: OpResponse) -> object:
        if isinstance(response, PutResponse):
            return ("put", self.kv(response.prev_kv))
        if isinstance(response, DeleteResponse):
            return ("delete", response.deleted, self.kv(response.prev_kv))
        return ("get", self.kv(response.kv))

    def result(self, result: object) -> object:
        if isinstance(result, TxnResult):
            return (
                result.succeeded,
                result.revision,
                [self.response(r) for r in result.responses],
                [self.event(e) for e in result.events],
            )
        if isinstance(result, RangeResult):
            return ([self.kv(kv) for kv in result.kvs], result.revision, result.more, result.count)
        if isinstance(result, KeyValue):
            return self.kv(result)
        if isinstance(result, Lease):
            return ("lease", self.lease_name(result.id), result.ttl)
        if isinstance(result, tuple):  # delete: (the deleted version, the deleting revision)
            deleted, revision = result
            return (self.kv(deleted), revision)
        return result

    def error(self, error: StoreError) -> object:
        name = type(error).__name__
        if isinstance(error, Compacted):
            return (name, error.revision, error.compact_revision)
        if isinstance(error, FutureRevision):
            return (name, error.revision, error.current_revision)
        if isinstance(error, KeyExists):
            return (name, error.key, self.kv(error.current))
        if isinstance(error, KeyNotFound):
            return (name, error.key)
        if isinstance(error, RevisionMismatch):
            return (name, error.key, error.expected, self.kv(error.current))
        if isinstance(error, LeaseNotFound):
            return (name, self.lease_name(error.lease_id))
        return (name, str(error))

    async def outcome(self, request: Callable[[Side], Awaitable[object]]) -> object:
        try:
            return ("ok", self.result(await request(self)))
        except StoreError as error:
            return ("error", self.error(error))

    async def drain(self, current: int) -> None:
        """Take every event up to ``current`` from the whole-space watch, then as many from each
        opened watch as the history holds under its prefix after its start."""
        async with asyncio.timeout(5):
            while (self.history[-1].revision if self.history else 0) < current:
                self.history.append(await anext(self.everything))
            while self.everything.backlog:  # the rest of the last revision's events
                self.history.append(await anext(self.everything))
            for opened in self.watches:
                due = len(self.due(opened.watch))
                try:
                    while opened.error is None and len(opened.events) < due:
                        opened.events.append(self.event(await anext(opened.watch)))
                except StoreError as error:
                    opened.error = self.error(error)

    def due(self, watch: Watch) -> list[Event]:
        """The events of the history that ``watch`` must deliver."""
        return [
            e for e in self.history if e.key.startswith(watch.prefix) and e.revision > watch.from_revision
        ]

    def observed(self) -> object:
        """What the watches delivered so far, in normal form."""
        watches = []
        for o in self.watches:
            watches.append((o.watch.prefix, o.watch.from_revision, o.events, o.error))
        return [self.event(e) for e in self.history], watches


# -- resolving a step into one request for both backends ------------------------------------------

Request = Callable[[Side], Awaitable[object]]


async def resolve(step: Step, reference: Store) -> tuple[str, Request]:
    """The request ``step`` stands for, with its revisions and compare values read off the reference
    (both backends agree on them, or an earlier step has failed); and how it reads in a report."""
    current = await reference.current_revision()
    if isinstance(step, TxnStep):
        return await _txn_request(step, reference)
    if isinstance(step, HelperStep):
        kv = await reference.get(step.key)
        expected = None if step.expected is None else (kv.mod_revision if kv else 0) + step.expected
        return _helper_request(step, expected)
    if isinstance(step, ReadStep):
        return _read_request(step, _at(current, step.revision))
    if isinstance(step, CompactStep):
        target = max(0, current + step.offset)
        return f"compact({target})", lambda side: side.store.compact(target)
    if isinstance(step, LeaseStep):
        return _lease_request(step)
    return _watch_request(step, current, _at(current, step.revision))


def _at(current: int, offset: int | None) -> int | None:
    return None if offset is None else max(0, current + offset)


async def _txn_request(step: TxnStep, reference: Store) -> tuple[str, Request]:
    compares = []
    for spec in step.compares:
        value = spec.value
        if spec.relative:
            kv = await reference.get(spec.key)
            value += getattr(kv, spec.target) if kv is not None else 0
        compares.append(Compare(spec.key, spec.target, spec.op, value))

    def ops(side: Side, specs: tuple[OpSpec, ...]) -> tuple[Put | Delete | Get, ...]:
        return tuple(
            Put(op.key, op.value, side.lease_id(op.lease)) if isinstance(op, PutSpec) else op for op in specs
        )

    def txn(side: Side) -> Awaitable[object]:
        return side.store.txn(Txn(tuple(compares), ops(side, step.success), ops(side, step.failure)))

    return f"txn(compares={compares}, success={step.success}, failure={step.failure})", txn


def _helper_request(step: HelperStep, expected: int | None) -> tuple[str, Request]:
    def helper(side: Side) -> Awaitable[object]:
        key, value, lease = step.key, step.value, side.lease_id(step.lease)
        if step.kind == "put":
            return side.store.put(key, value, lease=lease)
        if step.kind == "create":
            return side.store.create(key, value, lease=lease)
        if step.kind == "update":
            return side.store.update(key, value, expected_mod_revision=expected or 0, lease=lease)
        return side.store.delete(key, expected_mod_revision=expected)

    return f"{step.kind}({step.key!r}, {step.value!r}, lease={step.lease}, expected={expected})", helper


def _read_request(step: ReadStep, revision: int | None) -> tuple[str, Request]:
    if step.single:

        def get(side: Side) -> Awaitable[object]:
            return side.store.get(step.key, revision=revision)

        return f"get({step.key!r}, revision={revision})", get

    def range_(side: Side) -> Awaitable[object]:
        return side.store.range(step.key, start=step.start, revision=revision, limit=step.limit)

    return f"range({step.key!r}, start={step.start!r}, revision={revision}, limit={step.limit})", range_


def _lease_request(step: LeaseStep) -> tuple[str, Request]:
    async def lease(side: Side) -> object:
        if step.kind == "grant":
            granted = await side.store.lease_grant(LEASE_TTL)
            side.leases.append(granted.id)
            return granted
        if step.kind == "keepalive":
            return await side.store.lease_keepalive(side.lease_id(step.lease))
        return await side.store.lease_revoke(side.lease_id(step.lease))

    return f"lease_{step.kind}({step.lease})", lease


def _watch_request(step: WatchStep, current: int, start: int | None) -> tuple[str, Request]:
    async def watch(side: Side) -> object:
        opened = await side.store.watch(step.prefix, from_revision=start)
        side.watches.append(Opened(opened, max(current, opened.from_revision)))
        return opened.from_revision

    return f"watch({step.prefix!r}, from_revision={start})", watch


# -- a run ------------------------------------------------------------------------------------------


class Divergence(AssertionError):
    """PostgreSQL and the reference told apart; ``ran`` is how many steps of the program had run."""

    def __init__(self, message: str, ran: int) -> None:
        super().__init__(message)
        self.ran = ran


async def play(program: Sequence[Step]) -> None:
    """Run ``program`` on the reference and on PostgreSQL, step by step, comparing everything."""
    async with contextlib.AsyncExitStack() as stack:
        reference = await stack.enter_async_context(make_store("sqlite", "ref"))
        schema = await stack.enter_async_context(postgres.fresh_schema())
        candidate = await stack.enter_async_context(postgres.make_store("ref", schema=schema))
        sides = [
            Side(store, store is reference, await store.watch(P, from_revision=0))
            for store in (reference, candidate)
        ]
        for side in sides:
            stack.push_async_callback(side.everything.close)
        done: list[str] = []
        try:
            for i, step in enumerate((*PRELUDE, *program)):
                description, request = await resolve(step, reference)
                done.append(description + ("  # prelude" if i < len(PRELUDE) else ""))
                await _step(sides, request)
            await _at_the_end(sides)
        except (AssertionError, TimeoutError) as error:
            ran = max(0, len(done) - len(PRELUDE))
            trail = "\n  ".join(done)
            raise Divergence(
                f"{type(error).__name__}: {error}\nafter {ran} steps of the program:\n  {trail}", ran
            ) from None
        for side in sides:
            for opened in side.watches:
                await opened.watch.close()


async def _step(sides: list[Side], request: Request) -> None:
    ref, pg = sides
    want = await ref.outcome(request)
    got = await pg.outcome(request)
    assert got == want, "PostgreSQL answers differently"
    marks = [(await s.store.current_revision(), await s.store.compact_revision()) for s in sides]
    assert marks[1] == marks[0], "(revision, compaction mark) differ"
    for side in sides:
        await side.drain(marks[0][0])
    assert pg.observed() == ref.observed(), "the watches differ"


async def _at_the_end(sides: list[Side]) -> None:
    """Every prefix read at every revision still readable."""
    ref, pg = sides
    current, compacted = await ref.store.current_revision(), await ref.store.compact_revision()
    for revision in range(compacted, current + 1):
        for prefix in PREFIXES:

            def read(side: Side, prefix: str = prefix, revision: int = revision) -> Awaitable[object]:
                return side.store.range(prefix, revision=revision)

            assert await pg.outcome(read) == await ref.outcome(read), (
                f"range({prefix!r}, revision={revision})"
            )


def minimise(program: list[Step], failure: Divergence) -> tuple[list[Step], Divergence]:
    """A shorter program that still diverges: cut after the step that diverged, then drop steps one
    at a time, last first, while it still does (for at most MINIMISE_SECONDS)."""
    steps = program[: failure.ran]
    deadline = time.monotonic() + MINIMISE_SECONDS
    for i in reversed(range(len(steps))):
        if time.monotonic() > deadline:
            break
        if i >= len(steps):  # already cut off
            continue
        candidate = steps[:i] + steps[i + 1 :]
        try:
            asyncio.run(play(candidate))
        except Divergence as smaller:
            steps, failure = candidate[: smaller.ran], smaller
    return steps, failure


#: Hypothesis's own shrinking is off: each run costs a fresh schema and SQLite file (about 0.2 s), so
#: it would shrink for its five-minute limit, past pytest's timeout. ``minimise`` is bounded instead.
MINIMISE_SECONDS = 60.0


@pytest.mark.postgres
def test_postgres_matches_the_reference_on_generated_programs() -> None:
    # Skip (locally) or fail (in CI) here if there is no PostgreSQL, not inside Hypothesis.
    asyncio.run(_server_is_up())
    reports: dict[str, Divergence] = {}  # Hypothesis runs a failing example again to report it

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        print_blob=True,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(programs)
    def compare(program: list[Step]) -> None:
        key = repr(program)
        if key not in reports:
            try:
                asyncio.run(play(program))
                return
            except Divergence as failure:
                steps, smallest = minimise(program, failure)
                reports[key] = Divergence(
                    f"minimised to {len(steps)} steps: {steps!r}\n{smallest}", smallest.ran
                )
        raise reports[key]

    compare()


async def _server_is_up() -> None:
    await (await postgres.connect()).close()


# -- regression tests: divergences the comparison found, minimised -----------------------------------


async def test_a_compaction_after_a_watchs_replay_reached_its_head_does_not_end_it(store: Store) -> None:
    """A watch from now has no history to replay; a compaction before its consumer's first read
    took nothing it needs, so it must go on. Found by the comparison: SQLite ended it with
    ``Compacted(0, 1)``; PostgreSQL and etcd deliver the event."""
    async with await store.watch(P) as watch:
        kv = await store.put(P + "a", b"1")
        await store.compact(kv.mod_revision)
        (event,) = await next_events(watch, 1)
    assert event.kv == kv


async def test_a_compaction_after_a_watch_replayed_up_to_its_head_does_not_end_it(store: Store) -> None:
    """The same with a history: the watch has replayed every event up to the revision it opened at,
    then a compaction passes that revision before the next live event."""
    first = await store.put(P + "a", b"1")
    async with await store.watch(P, from_revision=first.mod_revision - 1) as watch:
        (replayed,) = await next_events(watch, 1)
        second = await store.put(P + "b", b"2")
        await store.compact(second.mod_revision)
        (live,) = await next_events(watch, 1)
    assert (replayed.kv, live.kv) == (first, second)
