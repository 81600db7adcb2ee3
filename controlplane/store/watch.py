"""Watches: a stream of every change under a key prefix, after a given revision, in order.

This is the mechanism the whole control plane rests on. kube-apiserver opens one store watch per
resource (``/registry/pods/``) and fans its events out to every client watching pods; the scheduler,
the kubelets and the controllers all learn about the world this way instead of polling.

The contract, as etcd's:

- a watch from revision *R* delivers every event with a revision greater than *R*, in revision order,
  exactly once, each with the key's previous value;
- a watch from a revision older than the compaction mark fails with ``Compacted`` (the history it
  needs is gone; kube-apiserver answers 410 Gone and the client re-lists);
- a slow watcher never slows writers or other watchers: it has a bounded buffer, and when that
  overflows it is closed with ``WatcherTooSlow`` instead of silently losing events.

``Watch`` is the consumer's end. ``WatchHub`` is the producer side used by backends that publish
their own commits (SQLite, PostgreSQL): it replays history from the backend, then switches to live
events without a gap or a duplicate.

On the trace, a watch is the diagram's etcd -> apiserver edge: ``watch.opened`` when it starts, one
``watch.event`` per event its consumer takes (naming the ``revision``, which links the write to what
the API server then sends its own watchers), and ``watch.closed`` when it ends.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from types import TracebackType

from controlplane.store.errors import StoreClosed, StoreError, WatcherTooSlow
from controlplane.store.kv import Event
from controlplane.trace import NULL_SINK, TraceSink, nodes

#: Events a watcher may fall behind before it is closed. kube-apiserver's cacher keeps far less per
#: watcher; this store has few watchers (one per resource, the watch cache), so it can afford more.
DEFAULT_WATCH_CAPACITY = 10_000

HistoryReader = Callable[[int], Awaitable[tuple[int, AsyncIterator[Sequence[Event]]]]]

_watch_ids = itertools.count(1)

#: The diagram's edge of a store watch's trace events: etcd streams to the API server, its only client.
FROM_ETCD = {"from": nodes.ETCD, "to": nodes.APISERVER}


class Watch:
    """The consumer's end of a watch: ``async for event in watch``, then ``await watch.close()``.

    Iteration ends with ``StopAsyncIteration`` after ``close()``, or raises the ``StoreError`` that
    ended the watch (``WatcherTooSlow``, ``StoreClosed``, ``Compacted``).
    """

    def __init__(
        self,
        prefix: str,
        from_revision: int,
        *,
        capacity: int = DEFAULT_WATCH_CAPACITY,
        trace: TraceSink = NULL_SINK,
        on_close: Callable[[Watch], None] | None = None,
    ) -> None:
        self.id = next(_watch_ids)
        self.prefix = prefix
        self.from_revision = from_revision
        self.capacity = capacity
        self._trace = trace
        self._on_close = on_close
        self._buffer: collections.deque[Event] = collections.deque()
        self._wakeup = asyncio.Event()
        self._error: StoreError | None = None
        self._closed = False
        # Until history has been replayed, live events wait in ``_pending``; those up to ``_head``
        # are in the history already and are dropped when the watch goes live.
        self._history: AsyncIterator[Sequence[Event]] | None = None
        self._live = False
        self._head = from_revision
        self._pending: collections.deque[Event] = collections.deque()
        self.last_revision = from_revision
        #: The newest revision the store has published to its watches, whatever its prefix. Once
        #: this watch's buffer is drained, its consumer has seen everything up to here (etcd calls
        #: this a progress notification). Backends without a live feed leave it at the last event.
        self.progress_revision = from_revision

    @property
    def backlog(self) -> int:
        """Events buffered and not yet consumed."""
        return len(self._buffer) + len(self._pending)

    # -- producer side ---------------------------------------------------------------------------

    def push(self, events: Iterable[Event]) -> None:
        """Add live events (revision order). Never blocks; overflows close the watch."""
        if self._closed or self._error is not None:
            return
        target = self._buffer if self._live else self._pending
        for event in events:
            if event.revision > self._head and event.key.startswith(self.prefix):
                target.append(event)
        if len(self._buffer) + len(self._pending) > self.capacity:
            self.fail(WatcherTooSlow(len(self._buffer) + len(self._pending)))
            return
        self._wakeup.set()

    def fail(self, error: StoreError) -> None:
        """End the watch with ``error``; the consumer sees it after the events already buffered."""
        if self._error is None and not self._closed:
            self._error = error
            if isinstance(error, WatcherTooSlow):
                # Events beyond the ones delivered are useless now: the client must re-list.
                self._buffer.clear()
                self._pending.clear()
            self._wakeup.set()
            self._detach()

    def begin_history(self, head: int, history: AsyncIterator[Sequence[Event]]) -> None:
        """Replay ``history`` (events up to revision ``head``) before any live event after it."""
        self._head = head
        self._history = history
        self._wakeup.set()

    # -- consumer side ---------------------------------------------------------------------------

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._buffer:
                event = self._buffer.popleft()
                self.last_revision = event.revision
                if self._trace.enabled:
                    self._trace.emit(
                        "watch.event",
                        **FROM_ETCD,
                        source="store",
                        watch=self.id,
                        event=event.type.value,
                        key=event.key,
                        revision=event.revision,
                    )
                return event
            if not self._live and self._history is not None and self._error is None:
                await self._replay_page()
                continue
            if self._error is not None:
                raise self._error
            self._wakeup.clear()
            await self._wakeup.wait()

    async def _replay_page(self) -> None:
        assert self._history is not None
        try:
            page = await anext(self._history)
        except StopAsyncIteration:
            self._history = None
            self._buffer.extend(e for e in self._pending if e.revision > self._head)
            self._pending.clear()
            self._live = True
            return
        except StoreError as error:
            self.fail(error)
            return
        self._buffer.extend(page)

    async def close(self) -> None:
        """Stop watching; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._buffer.clear()
        self._pending.clear()
        self._wakeup.set()
        history, self._history = self._history, None
        if history is not None and hasattr(history, "aclose"):
            await history.aclose()
        self._detach()

    def _detach(self) -> None:
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close(self)
            if self._trace.enabled:
                self._trace.emit(
                    "watch.closed", **FROM_ETCD, source="store", watch=self.id, prefix=self.prefix
                )

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed or self._error is not None


class WatchHub:
    """Fans committed events out to the watches of one store, in commit order.

    Backends call ``publish`` on the event loop with each commit's events, in revision order, and
    ``open`` to start a watch: the watch is registered first (so no live event can slip past), then
    history is read from a consistent snapshot, and live events the snapshot already holds are
    dropped. That is how a watch joins the live stream without a gap or a duplicate.
    """

    def __init__(self, *, trace: TraceSink = NULL_SINK) -> None:
        self._watches: dict[str, set[Watch]] = {}
        #: Every open watch, whatever its prefix: what ``publish`` reports progress to.
        self._all: dict[Watch, None] = {}
        #: The lengths of the watched prefixes, shortest first (see ``_matching``); kept up to date
        #: with ``_watches`` by ``_prefixes_changed``.
        self._prefix_lengths: tuple[int, ...] = ()
        self._trace = trace
        self._closed = False

    def __len__(self) -> int:
        return sum(len(ws) for ws in self._watches.values())

    async def open(
        self,
        prefix: str,
        from_revision: int,
        read_history: HistoryReader,
        *,
        capacity: int = DEFAULT_WATCH_CAPACITY,
    ) -> Watch:
        """Start a watch of ``prefix`` delivering every event after ``from_revision``.

        ``read_history(from_revision)`` must return the head revision of a consistent snapshot and an
        async iterator over pages of the events in (from_revision, head], or raise ``Compacted``.
        """
        if self._closed:
            raise StoreClosed()
        watch = Watch(prefix, from_revision, capacity=capacity, trace=self._trace, on_close=self._remove)
        if prefix not in self._watches:
            self._watches[prefix] = set()
            self._prefixes_changed()
        self._watches[prefix].add(watch)
        self._all[watch] = None
        try:
            head, history = await read_history(from_revision)
        except BaseException:
            self._remove(watch)
            raise
        watch.begin_history(head, history)
        if self._trace.enabled:
            self._trace.emit(
                "watch.opened",
                **FROM_ETCD,
                source="store",
                watch=watch.id,
                prefix=prefix,
                revision=from_revision,
            )
        return watch

    def publish(self, events: Sequence[Event]) -> None:
        """Deliver one or more commits' events to every watch whose prefix they fall under."""
        if not events:
            return
        newest = events[-1].revision
        for watch in self._all:
            watch.progress_revision = newest
        if len(events) == 1:
            # A commit is nearly always one event, under one or two of the store's dozens of watched
            # prefixes (one per resource type): look its key's prefixes up (``_matching``) rather than
            # test the key against every prefix. Same events, same watches, same order.
            for prefix in self._matching(events[0].key):
                for watch in list(self._watches.get(prefix, ())):
                    watch.push(events)
            return
        for prefix, watches in list(self._watches.items()):
            matching = [e for e in events if e.key.startswith(prefix)]
            if matching:
                for watch in list(watches):
                    watch.push(matching)

    def _matching(self, key: str) -> list[str]:
        """The watched prefixes ``key`` starts with, in the order they were first watched.

        A prefix of length n that ``key`` starts with is ``key[:n]``: one dictionary lookup per
        distinct prefix length (a dozen or so, the resources' names being of a few lengths) instead of
        a ``startswith`` per prefix (dozens).
        """
        found: list[str] = []
        for length in self._prefix_lengths:
            if length > len(key):
                break
            if key[:length] in self._watches:
                found.append(key[:length])
        if len(found) > 1:  # rare (nested prefixes): the order ``publish`` has always used
            found = [prefix for prefix in self._watches if prefix in found]
        return found

    def _prefixes_changed(self) -> None:
        self._prefix_lengths = tuple(sorted({len(prefix) for prefix in self._watches}))

    def close(self, error: StoreError | None = None) -> None:
        """End every watch with ``error`` (default ``StoreClosed``)."""
        self._closed = True
        for watches in list(self._watches.values()):
            for watch in list(watches):
                watch.fail(error or StoreClosed())
        self._watches.clear()
        self._all.clear()
        self._prefixes_changed()

    def _remove(self, watch: Watch) -> None:
        self._all.pop(watch, None)
        watches = self._watches.get(watch.prefix)
        if watches is not None:
            watches.discard(watch)
            if not watches:
                del self._watches[watch.prefix]
                self._prefixes_changed()
