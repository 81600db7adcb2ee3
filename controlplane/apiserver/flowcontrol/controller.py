"""The APF controller: FlowSchemas and PriorityLevelConfigurations made into working priority levels.

Upstream's ``configController`` (``k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go``)
watches both kinds and, on every change, **digests** them:

- each PriorityLevelConfiguration becomes a priority level with a queue set (``queueset.py``). Its
  seats are its **nominal concurrency limit**: the server's total concurrency limit (upstream: the
  sum of ``--max-requests-inflight`` and ``--max-mutating-requests-inflight``, 600) shared out by
  ``nominalConcurrencyShares``, rounded up: ``ceil(total x shares / sum of all shares)``;
- an edited level keeps its queue set (its waiting requests stay where they are) with the new limits;
  a deleted one keeps serving the requests it holds until they finish;
- FlowSchemas are put in precedence order; one that names a level that does not exist is
  **dangling** (its status says so) and is skipped;
- the mandatory ``exempt`` and ``catch-all`` objects are used from ``bootstrap.py`` if they are
  missing, so every request is always classified.

``classify`` then finds a request's FlowSchema, flow and level; ``seats`` says how many seats it
takes (upstream's work estimator: one, or for a LIST one per 100 objects it will go through, up to
the level's maximum). Kubelab does not implement **borrowing** (upstream 1.28+ lets a busy level
borrow the ``lendablePercent`` of idle ones): each level has exactly its nominal seats.

This module is pure: it holds state and counts, it neither waits nor reads a clock.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.api.meta import Object
from controlplane.apiserver.flowcontrol import bootstrap, classification, shufflesharding
from controlplane.apiserver.flowcontrol.classification import RequestDigest
from controlplane.apiserver.flowcontrol.queueset import QueueSet, QueuingConfig, Request
from controlplane.apiserver.requestinfo import RequestInfo
from controlplane.identity import UserInfo

#: Upstream's defaults for fields a PriorityLevelConfiguration leaves out (v1 defaulting).
DEFAULT_SHARES = 30
DEFAULT_QUEUING = QueuingConfig(queues=64, hand_size=8, queue_length_limit=50)
#: A request takes at most this many seats (upstream's ``maxSeats`` default).
MAX_SEATS = 10
#: Objects a LIST goes through per seat (upstream's ``ObjectsPerSeat``).
OBJECTS_PER_SEAT = 100

#: Verbs that do not change anything (upstream's ``nonMutatingRequestVerbs``).
READ_ONLY_VERBS = frozenset({"get", "list", "watch"})


class InvalidPriorityLevel(ValueError):
    """A PriorityLevelConfiguration this server cannot use: FlowSchemas naming it are dangling."""


@dataclass(frozen=True, slots=True)
class LevelSpec:
    """A PriorityLevelConfiguration, read and checked."""

    name: str
    uid: str
    exempt: bool
    shares: int
    #: None: a level without queues (Reject, or exempt).
    queuing: QueuingConfig | None

    @classmethod
    def parse(cls, obj: Object) -> LevelSpec:
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(metadata, dict)
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidPriorityLevel("metadata.name: Required value")
        uid = str(metadata.get("uid") or "")
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            raise InvalidPriorityLevel("spec: Required value")
        kind = spec.get("type")
        if kind == "Exempt":
            exempt = spec.get("exempt") if isinstance(spec.get("exempt"), dict) else {}
            assert isinstance(exempt, dict)
            return cls(name, uid, True, _count(exempt.get("nominalConcurrencyShares"), 0, "exempt"), None)
        if kind != "Limited":
            raise InvalidPriorityLevel(f"spec.type: Unsupported value: {kind!r}")
        limited = spec.get("limited")
        if not isinstance(limited, dict):
            raise InvalidPriorityLevel("spec.limited: Required value")
        shares = _count(limited.get("nominalConcurrencyShares"), DEFAULT_SHARES, "nominalConcurrencyShares")
        response = limited.get("limitResponse")
        if not isinstance(response, dict):
            raise InvalidPriorityLevel("spec.limited.limitResponse: Required value")
        if response.get("type") == "Reject":
            return cls(name, uid, False, shares, None)
        if response.get("type") != "Queue":
            raise InvalidPriorityLevel(
                f"spec.limited.limitResponse.type: Unsupported value: {response.get('type')!r}"
            )
        queuing = response.get("queuing") if isinstance(response.get("queuing"), dict) else {}
        assert isinstance(queuing, dict)
        config = QueuingConfig(
            queues=_count(queuing.get("queues"), DEFAULT_QUEUING.queues, "queues"),
            hand_size=_count(queuing.get("handSize"), DEFAULT_QUEUING.hand_size, "handSize"),
            queue_length_limit=_count(
                queuing.get("queueLengthLimit"), DEFAULT_QUEUING.queue_length_limit, "queueLengthLimit"
            ),
        )
        try:
            shufflesharding.Dealer(config.queues, config.hand_size)
        except shufflesharding.InvalidDeal as error:
            raise InvalidPriorityLevel(f"spec.limited.limitResponse.queuing: {error}") from None
        return cls(name, uid, False, shares, config)


def _count(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidPriorityLevel(f"{name}: must be a non-negative integer")
    return value


@dataclass(eq=False)
class PriorityLevel:
    """A working priority level: its configuration, its seats and queues, what it refused."""

    spec: LevelSpec
    concurrency_limit: int
    queueset: QueueSet
    dispatched: int = 0
    rejected: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def max_seats(self) -> int:
        """The most seats one request may take here: 10, and never more than a hand's share."""
        hand = self.spec.queuing.hand_size if self.spec.queuing is not None else 1
        return max(1, min(MAX_SEATS, math.ceil(self.concurrency_limit / hand)))


@dataclass(frozen=True, slots=True)
class Classification:
    """Where a request goes: its FlowSchema, its flow in it, its priority level."""

    flow_schema: str
    flow_schema_uid: str
    priority_level: str
    priority_level_uid: str
    distinguisher: str
    flow: int
    exempt: bool


@dataclass(frozen=True, slots=True)
class PriorityLevelSnapshot:
    """One priority level now, for metrics (upstream ``apiserver_flowcontrol_*`` per level)."""

    name: str
    exempt: bool
    concurrency_limit: int
    seats_in_use: int
    executing: int
    waiting: int
    queue_lengths: tuple[int, ...]
    dispatched: int
    rejected: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class FlowSchemaSnapshot:
    name: str
    priority_level: str
    dangling: bool
    dispatched: int
    rejected: Mapping[str, int]


def nominal_limits(levels: Iterable[LevelSpec], server_limit: int) -> dict[str, int]:
    """``ceil(server_limit x shares / sum of shares)`` per level (``NominalConcurrencyLimit``)."""
    specs = list(levels)
    total = sum(spec.shares for spec in specs)
    if total == 0:
        return {spec.name: 0 for spec in specs}
    return {spec.name: math.ceil(server_limit * spec.shares / total) for spec in specs}


#: Classifications an APF controller remembers at most (all are forgotten when the configuration changes).
CLASSIFICATION_CACHE_SIZE = 10_000


def _classification_key(user: UserInfo, info: RequestInfo | RequestDigest) -> tuple[Any, ...]:
    """What a request's classification depends on: its user and request info. A resource request is
    matched by its group, resource, namespace and verb, never by its path (which names the object):
    leaving the path out lets every pod's request share one cached classification."""
    resource_request = info.is_resource_request
    return (
        user.username,
        user.groups,
        info.verb,
        resource_request,
        "" if resource_request else info.path,
        info.api_group,
        info.namespace,
        info.resource,
        info.subresource,
    )


class APFController:
    """The live APF configuration of one API server, and the counts behind its metrics."""

    def __init__(self, server_concurrency_limit: int, *, now: float = 0.0) -> None:
        self.server_concurrency_limit = server_concurrency_limit
        self.levels: dict[str, PriorityLevel] = {}
        #: Non-dangling FlowSchemas in precedence order, mandatory ones supplied if missing.
        self.flow_schemas: list[Object] = []
        #: Every FlowSchema's name, mapped to whether it is dangling (for its status).
        self.dangling: dict[str, bool] = {}
        self.problems: dict[str, str] = {}
        self._fs_levels: dict[str, str] = {}
        self._fs_dispatched: collections.Counter[str] = collections.Counter()
        self._fs_rejected: dict[str, collections.Counter[str]] = {}
        #: Classifications already made under the current configuration, by what they depend on:
        #: the same few clients ask the same things again and again.
        self._classified: dict[tuple[object, ...], tuple[Classification, PriorityLevel]] = {}
        self.apply([], [], now)

    # -- configuration ---------------------------------------------------------------------------

    def apply(
        self, flow_schemas: Iterable[Object], priority_levels: Iterable[Object], now: float
    ) -> list[Request]:
        """Digest the current objects; returns the requests a new configuration lets through now."""
        specs: dict[str, LevelSpec] = {}
        self.problems = {}
        for obj in priority_levels:
            try:
                spec = LevelSpec.parse(obj)
            except InvalidPriorityLevel as error:
                name = (
                    (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
                )
                self.problems[str(name)] = str(error)
                continue
            specs[spec.name] = spec
        for obj in bootstrap.MANDATORY_PRIORITY_LEVELS:  # never without exempt and catch-all
            name = obj["metadata"]["name"]
            if name not in specs:
                specs[name] = LevelSpec.parse(obj)
        limits = nominal_limits(specs.values(), self.server_concurrency_limit)
        dispatched: list[Request] = []
        levels: dict[str, PriorityLevel] = {}
        for name, spec in sorted(specs.items()):
            limit = limits[name]
            level = self.levels.get(name)
            if level is None:
                level = PriorityLevel(spec, limit, QueueSet(limit, spec.queuing, exempt=spec.exempt, now=now))
            else:
                level.spec, level.concurrency_limit = spec, limit
                dispatched += level.queueset.reconfigure(limit, spec.queuing, now, exempt=spec.exempt)
            levels[name] = level
        self.levels = levels

        ordered: list[Object] = []
        self.dangling = {}
        self._fs_levels = {}
        names: set[str] = set()
        for fs in sorted((f for f in flow_schemas if isinstance(f, dict)), key=classification.precedence):
            name = classification.precedence(fs)[1]
            level_ref = (
                (fs.get("spec") or {}).get("priorityLevelConfiguration")
                if isinstance(fs.get("spec"), dict)
                else None
            )
            level_name = level_ref.get("name") if isinstance(level_ref, dict) else None
            names.add(name)
            dangling = not isinstance(level_name, str) or level_name not in levels
            self.dangling[name] = dangling
            if not dangling:
                assert isinstance(level_name, str)
                self._fs_levels[name] = level_name
                ordered.append(fs)
        for fs in bootstrap.MANDATORY_FLOW_SCHEMAS:
            name = fs["metadata"]["name"]
            if name not in names:
                ordered.append(fs)
                self._fs_levels[name] = fs["spec"]["priorityLevelConfiguration"]["name"]
        ordered.sort(key=classification.precedence)
        self.flow_schemas = ordered
        self._classified.clear()
        return dispatched

    # -- requests --------------------------------------------------------------------------------

    def classify(self, digest: RequestDigest) -> tuple[Classification, PriorityLevel]:
        """The request's FlowSchema, flow and priority level (the catch-all ones if nothing matches)."""
        key = _classification_key(digest.user, digest)
        known = self._classified.get(key)
        return self._remember(key, digest) if known is None else known

    def classify_request(self, user: UserInfo, info: RequestInfo) -> tuple[Classification, PriorityLevel]:
        """``classify`` of the digest of a request acting as ``user``; the digest is made only when the
        answer is not known yet (``RequestDigest`` is upstream's, the filter's request is ``info``)."""
        key = _classification_key(user, info)
        known = self._classified.get(key)
        if known is None:
            digest = RequestDigest(
                user=user,
                verb=info.verb,
                is_resource_request=info.is_resource_request,
                path=info.path,
                api_group=info.api_group,
                namespace=info.namespace,
                resource=info.resource,
                subresource=info.subresource,
            )
            known = self._remember(key, digest)
        return known

    def _remember(self, key: tuple[Any, ...], digest: RequestDigest) -> tuple[Classification, PriorityLevel]:
        if len(self._classified) >= CLASSIFICATION_CACHE_SIZE:
            self._classified.clear()
        known = self._classified[key] = self._classify(digest)
        return known

    def _classify(self, digest: RequestDigest) -> tuple[Classification, PriorityLevel]:
        fs = classification.first_match(digest, self.flow_schemas)
        if fs is None:  # unreachable while catch-all matches everyone; belt and braces
            fs = bootstrap.MANDATORY_FLOW_SCHEMAS[1]
        name = fs["metadata"]["name"]
        level = self.levels[self._fs_levels.get(name, bootstrap.CATCH_ALL)]
        distinguisher = classification.distinguisher(digest, fs)
        return (
            Classification(
                flow_schema=name,
                flow_schema_uid=str(fs["metadata"].get("uid") or ""),
                priority_level=level.name,
                priority_level_uid=level.spec.uid,
                distinguisher=distinguisher,
                flow=shufflesharding.hash_flow(name, distinguisher),
                exempt=level.spec.exempt,
            ),
            level,
        )

    @staticmethod
    def seats(level: PriorityLevel, verb: str, objects: int | None, limit: int | None = None) -> int:
        """Seats a request takes (``request.WorkEstimator``): 1, or for a LIST ``objects / 100``."""
        if verb != "list" or objects is None:
            return 1
        if limit is not None and 0 < limit < objects:
            objects = limit
        return max(1, min(level.max_seats, math.ceil(objects / OBJECTS_PER_SEAT)))

    def start(self, classified: Classification, level: PriorityLevel, seats: int, now: float) -> Request:
        """Queue (or run, or refuse) a classified request; count what happened."""
        request = level.queueset.start(classified.flow, seats, now)
        self.note(classified, level, request)
        return request

    def note(self, classified: Classification, level: PriorityLevel, request: Request) -> None:
        """Count a request that was dispatched or refused (``start``, and the adapter after a wait)."""
        if request.reason:
            level.rejected[request.reason] += 1
            self._fs_rejected.setdefault(classified.flow_schema, collections.Counter())[request.reason] += 1
        elif request.state.value == "executing":
            level.dispatched += 1
            self._fs_dispatched[classified.flow_schema] += 1

    # -- reading ---------------------------------------------------------------------------------

    def snapshot(self) -> tuple[list[PriorityLevelSnapshot], list[FlowSchemaSnapshot]]:
        levels = [
            PriorityLevelSnapshot(
                name=level.name,
                exempt=level.spec.exempt,
                concurrency_limit=level.concurrency_limit,
                seats_in_use=level.queueset.seats_in_use,
                executing=level.queueset.executing,
                waiting=level.queueset.waiting,
                queue_lengths=tuple(level.queueset.queue_lengths()),
                dispatched=level.dispatched,
                rejected=dict(level.rejected),
            )
            for level in self.levels.values()
        ]
        schemas = [
            FlowSchemaSnapshot(
                name=name,
                priority_level=self._fs_levels.get(name, ""),
                dangling=dangling,
                dispatched=self._fs_dispatched[name],
                rejected=dict(self._fs_rejected.get(name, {})),
            )
            for name, dangling in self.dangling.items()
        ]
        return levels, schemas
