"""The queue set of one priority level: seats, queues, and fair queuing in virtual time.

A priority level has a number of **seats** (its concurrency limit). A request takes one seat, or
several for a big LIST, from when it is **dispatched** until its handler finishes. When every seat is
taken, a new request waits in one of the level's queues (the shortest of its flow's hand, see
``shufflesharding.py``); when that queue already holds ``queueLengthLimit`` requests, it is
**rejected** (the client gets 429 and retries later).

Which waiting request gets the next free seat is decided by **fair queuing** (upstream
``k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset/queueset.go``), a version of the packet
scheduling algorithm of Demers, Keshav and Shenker: imagine the seats were shared out continuously
and equally among the queues that have work (*virtual time* R, in seat-seconds, grows at
``min(seats asked for, seats) / busy queues`` per second). Each queue's next request would start, in
that imaginary world, at the queue's ``next_dispatch_r`` and finish ``seats x 3 s`` later (3 s is
upstream's estimate of a request's service time, corrected when it finishes). The real dispatcher
picks the request that would finish first. A queue that sends many requests moves its
``next_dispatch_r`` far ahead, so a queue with a single request waiting is served before it: a client
in a hot loop cannot starve a polite one in the same priority level.

Two special kinds of level: **exempt** (``type: Exempt``) never waits and is never refused, only
counted; **Reject** (``limitResponse.type: Reject``) has no queues: with no free seat, 429 at once.

This module is pure: nothing here waits or reads a clock. ``start``, ``finish``, ``cancel`` and
``reconfigure`` take ``now`` and return the requests they dispatched; the API server's filter wakes
the clients of those.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from controlplane.apiserver.flowcontrol.shufflesharding import Dealer

#: Upstream's estimate of how long a request executes (``estimatedServiceDuration``): a request's
#: work in virtual time is ``seats x`` this, corrected by the actual duration when it finishes.
ESTIMATED_SERVICE_SECONDS = 3.0


class State(enum.Enum):
    WAITING = "waiting"
    EXECUTING = "executing"
    FINISHED = "finished"
    REJECTED = "rejected"


#: Why a request was refused, in upstream's words (``apiserver_flowcontrol_rejected_requests_total``'s
#: ``reason`` label): its queue was full, the level has no queues and no free seat, it waited longer
#: than its wait limit, or its client went away while it waited.
QUEUE_FULL = "queue-full"
CONCURRENCY_LIMIT = "concurrency-limit"
TIME_OUT = "time-out"
CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class QueuingConfig:
    """``limitResponse.queuing``: how many queues, how many a flow is dealt, how long each may grow."""

    queues: int
    hand_size: int
    queue_length_limit: int


@dataclass(eq=False, slots=True)
class Request:
    """One request's passage through the queue set."""

    flow: int
    seats: int
    arrived: float
    state: State = State.WAITING
    #: Why it was refused (``QUEUE_FULL`` ...), when ``state`` is REJECTED.
    reason: str = ""
    #: The queue it waited in (None: a level without queues).
    queue: Queue | None = None
    #: Virtual time when it arrived (fair queuing never dispatches it before that).
    arrival_r: float = 0.0
    dispatched: float = 0.0
    #: For the adapter: whatever it needs to wake the request's client (a future).
    ticket: Any = None

    @property
    def work(self) -> float:
        """Its estimated work in seat-seconds (``totalWork``)."""
        return self.seats * ESTIMATED_SERVICE_SECONDS


@dataclass(eq=False, slots=True)
class Queue:
    index: int
    #: Its requests, oldest first: a list, not a deque. A level has up to 128 queues, most of them
    #: empty for good; an empty deque costs ten times an empty list, and a queue holds at most
    #: ``queue_length_limit`` (50) requests, so taking the head of a list is as cheap.
    waiting: list[Request] = field(default_factory=list)
    waiting_seats: int = 0
    executing: int = 0
    seats_in_use: int = 0
    #: The virtual time at which its next request starts, in the imaginary fair world.
    next_dispatch_r: float = 0.0

    @property
    def idle(self) -> bool:
        return not self.waiting and self.executing == 0


class QueueSet:
    """The seats and queues of one priority level.

    ``queuing`` None means no queues: a Reject level, or (``exempt=True``) an exempt one.
    """

    def __init__(
        self,
        concurrency_limit: int,
        queuing: QueuingConfig | None,
        *,
        exempt: bool = False,
        now: float = 0.0,
    ) -> None:
        self.concurrency_limit = concurrency_limit
        self.exempt = exempt
        self.queuing: QueuingConfig | None = None
        self.dealer: Dealer | None = None
        self.queues: list[Queue] = []
        self.seats_in_use = 0
        self.executing = 0
        self.waiting = 0
        self.current_r = 0.0
        self._last = now
        self._robin = -1
        # Kept as requests come and go, so that no step scans every queue: the seats held or asked
        # for in queues, the queues that are not idle, and the indices of those with requests waiting.
        self._queued_seats = 0
        self._busy = 0
        self._nonempty: set[int] = set()
        self._configure(queuing)

    # -- configuration ---------------------------------------------------------------------------

    def _configure(self, queuing: QueuingConfig | None) -> None:
        if self.exempt:
            queuing = None
        self.queuing = queuing
        if queuing is None:
            self.dealer = None
            return
        self.dealer = Dealer(queuing.queues, queuing.hand_size)
        while len(self.queues) < queuing.queues:
            self.queues.append(Queue(len(self.queues), next_dispatch_r=self.current_r))
        self._trim()

    def reconfigure(
        self, concurrency_limit: int, queuing: QueuingConfig | None, now: float, *, exempt: bool = False
    ) -> list[Request]:
        """Apply an edited PriorityLevelConfiguration; requests already waiting keep their queues.

        Queues beyond a smaller ``queues`` are dealt no more requests and go once empty (upstream
        keeps them until they drain). Returns the requests a higher limit lets through at once; a
        level that is no longer queuing lets its waiting requests through in order as seats free.
        """
        self._advance(now)
        self.concurrency_limit = concurrency_limit
        self.exempt = exempt
        self._configure(queuing)
        return self._dispatch_as_much_as_possible(now)

    def _trim(self) -> None:
        """Drop empty queues beyond the configured number."""
        wanted = self.queuing.queues if self.queuing is not None else 0
        while len(self.queues) > wanted and self.queues[-1].idle:
            self.queues.pop()
        if self._robin >= len(self.queues):
            self._robin = -1

    # -- virtual time ----------------------------------------------------------------------------

    def _advance(self, now: float) -> None:
        """Bring virtual time up to ``now`` (``syncTimeLocked``)."""
        elapsed = now - self._last
        if elapsed > 0:
            self.current_r += self._virtual_time_ratio() * elapsed
            self._last = now

    def _virtual_time_ratio(self) -> float:
        """``min(seats asked for, seats) / busy queues`` (``getVirtualTimeRatioLocked``)."""
        if self._busy == 0:
            return 0.0
        return min(self._queued_seats, self.concurrency_limit) / self._busy

    # -- requests --------------------------------------------------------------------------------

    def start(self, flow: int, seats: int, now: float) -> Request:
        """A new request of ``flow`` asking for ``seats``: returned EXECUTING, WAITING or REJECTED."""
        self._advance(now)
        request = Request(flow, max(1, seats), now, arrival_r=self.current_r)
        if self.exempt:
            self._execute(request, now)
            return request
        if self.queuing is None or self.dealer is None:  # a Reject level: no queues
            if self._can_accommodate(request.seats):
                self._execute(request, now)
            else:
                request.state, request.reason = State.REJECTED, CONCURRENCY_LIMIT
            return request
        queue = self._shuffle_shard(flow)
        request.queue = queue
        if (
            self.seats_in_use >= self.concurrency_limit
            and len(queue.waiting) >= self.queuing.queue_length_limit
        ):
            request.state, request.reason = State.REJECTED, QUEUE_FULL
            return request
        if queue.idle:
            queue.next_dispatch_r = self.current_r  # a queue that wakes up starts at the present
            self._busy += 1
        queue.waiting.append(request)
        queue.waiting_seats += request.seats
        self._queued_seats += request.seats
        self._nonempty.add(queue.index)
        self.waiting += 1
        self._dispatch_as_much_as_possible(now)
        return request

    def finish(self, request: Request, now: float) -> list[Request]:
        """``request``'s handler is done: free its seats; returns the requests dispatched in its place."""
        if request.state is not State.EXECUTING:
            return []
        self._advance(now)
        request.state = State.FINISHED
        self.seats_in_use -= request.seats
        self.executing -= 1
        queue = request.queue
        if queue is not None:
            queue.seats_in_use -= request.seats
            queue.executing -= 1
            self._queued_seats -= request.seats
            if queue.idle:
                self._busy -= 1
            # Correct the estimate: the request took (now - dispatched), not ESTIMATED_SERVICE_SECONDS.
            queue.next_dispatch_r -= request.seats * (ESTIMATED_SERVICE_SECONDS - (now - request.dispatched))
            self._bound(queue)
        dispatched = self._dispatch_as_much_as_possible(now)
        self._trim()
        return dispatched

    def cancel(self, request: Request, reason: str, now: float) -> list[Request]:
        """Take a WAITING request out of its queue (it waited too long, or its client left)."""
        if request.state is not State.WAITING:
            return []
        self._advance(now)
        queue = request.queue
        if queue is not None:
            queue.waiting.remove(request)
            queue.waiting_seats -= request.seats
            self._queued_seats -= request.seats
            if not queue.waiting:
                self._nonempty.discard(queue.index)
            if queue.idle:
                self._busy -= 1
        self.waiting -= 1
        request.state, request.reason = State.REJECTED, reason
        # The head of its queue may have changed, and with it the next dispatch.
        dispatched = self._dispatch_as_much_as_possible(now)
        self._trim()
        return dispatched

    # -- choosing --------------------------------------------------------------------------------

    def _shuffle_shard(self, flow: int) -> Queue:
        """The least loaded queue of the flow's hand (``shuffleShardLocked``); the first on ties."""
        assert self.dealer is not None
        best: Queue | None = None
        best_seats = 0
        for index in self.dealer.hand(flow):
            queue = self.queues[index]
            seats = queue.waiting_seats + queue.seats_in_use
            if best is None or seats < best_seats:
                best, best_seats = queue, seats
        assert best is not None
        return best

    def _can_accommodate(self, seats: int) -> bool:
        """``canAccommodateSeatsLocked``: a request wider than the whole level runs alone."""
        if self.exempt:
            return True
        if seats > self.concurrency_limit:
            return self.executing == 0
        return self.seats_in_use + seats <= self.concurrency_limit

    def _dispatch_as_much_as_possible(self, now: float) -> list[Request]:
        dispatched: list[Request] = []
        while self.waiting:
            if self.executing and self.seats_in_use >= self.concurrency_limit:
                break  # every seat is taken: no head fits (what _can_accommodate would say of each)
            request = self._next_to_dispatch()
            if request is None:
                break
            queue = request.queue
            assert queue is not None
            queue.waiting.pop(0)
            queue.waiting_seats -= request.seats
            if not queue.waiting:
                self._nonempty.discard(queue.index)
            self.waiting -= 1
            queue.next_dispatch_r += request.work
            self._execute(request, now)
            self._bound(queue)
            dispatched.append(request)
        return dispatched

    def _next_to_dispatch(self) -> Request | None:
        """The head request that would finish first in virtual time, if it fits in the free seats.

        (``findDispatchQueueToBoundLocked``.) Queues are considered round robin from the one after the
        last chosen, so that ties go to another queue next time; only those with requests waiting.
        """
        count = len(self.queues)
        robin = self._robin
        best: Queue | None = None
        best_finish = 0.0
        best_order = 0
        for index in self._nonempty:
            queue = self.queues[index]
            finish = queue.next_dispatch_r + queue.waiting[0].work
            order = (index - robin - 1) % count  # its place in the round robin: ties go to the earlier
            if best is None or finish < best_finish or (finish == best_finish and order < best_order):
                best, best_finish, best_order = queue, finish, order
        if best is None:
            return None
        head = best.waiting[0]
        if not self._can_accommodate(head.seats):
            return None
        self._robin = best.index
        return head

    def _bound(self, queue: Queue) -> None:
        """Upstream's anti-windup: a queue's next virtual dispatch never precedes its head's arrival."""
        if queue.waiting and queue.next_dispatch_r < queue.waiting[0].arrival_r:
            queue.next_dispatch_r = queue.waiting[0].arrival_r

    def _execute(self, request: Request, now: float) -> None:
        request.state = State.EXECUTING
        request.dispatched = now
        self.seats_in_use += request.seats
        self.executing += 1
        queue = request.queue
        if queue is not None:  # it waited in this queue, so the queue is already counted as busy
            queue.seats_in_use += request.seats
            queue.executing += 1

    # -- reading ---------------------------------------------------------------------------------

    def queue_lengths(self) -> list[int]:
        """Requests waiting in each queue, by queue index."""
        return [len(queue.waiting) for queue in self.queues]
