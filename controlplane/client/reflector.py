"""The reflector: keeping a local copy of a resource in step with the API server, by list then watch.

Every controller, the scheduler and every kubelet needs to know the current state of some resource,
all the time. Asking again and again would crush the API server; instead each runs a **reflector**
(client-go ``tools/cache/reflector.go``), which

1. **lists** the resource once, and gets the objects together with the ``resourceVersion`` the list
   is consistent at (the store revision, say 1200);
2. **watches** from that resourceVersion: the API server sends every change after 1200, in order, as
   it happens, and the reflector applies each one to its store. Each event carries the new
   resourceVersion, which the reflector remembers (``last_sync_resource_version``), and so do the
   *bookmarks* the server sends now and then (``allowWatchBookmarks``): no object changed, but the
   client may resume from there;
3. when the watch ends normally (the server's ``timeoutSeconds``, here a random 5 to 10 minutes so
   that thousands of clients do not reconnect at once), **watches again** from the last
   resourceVersion: nothing is missed and nothing is listed again;
4. when the server answers **410 Expired** (the last resourceVersion is older than the history it
   keeps, because the client was away too long), **lists again**: that is the only way back to a
   consistent picture. What disappeared meanwhile is found by comparing the new list with the store
   (see ``delta_fifo.py``).

The details, each one upstream's:

- The first list asks for ``resourceVersion="0"`` (any recent state, cheap for the server: its watch
  cache answers) in pages of 500. Later lists ask for the last resourceVersion seen (data at least
  that fresh), unpaged unless the server paged the first one. If such a list itself answers 410,
  the reflector lists at ``""`` (the latest, read from storage) right away.
- Between attempts after a failure the reflector waits with exponential backoff: 800 ms doubling to
  30 s, jittered, starting over after 2 quiet minutes (``backoff.py``). A 429 on a watch waits the
  same way and watches again.
- A watch that ends within a second without a single event is treated as an error (something is
  wrong; do not reconnect in a hot loop).

Timers run on the cluster clock and randomness comes from a ``random.Random`` the caller may seed, so
a test replays the same behaviour. The store is anything with ``add``/``update``/``delete``/
``replace``/``resync``: an ``Indexer`` directly, or the ``DeltaFIFO`` of an informer.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterable
from typing import Protocol

from controlplane.api.meta import Object
from controlplane.client.backoff import BackoffManager, reflector_backoff
from controlplane.client.errors import ConnectError, ResourceExpired, TooManyRequests
from controlplane.client.pager import DEFAULT_PAGE_SIZE, ListPager
from controlplane.client.rest import ListOptions, ResourceClient, Watch
from controlplane.client.watch import EventType, WatchEvent, WatchInterface
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


#: The shortest server-side watch timeout; each watch asks for a random one in [min, 2*min).
MIN_WATCH_TIMEOUT = 300.0
#: A watch that ends this soon without any event counts as a failure (client-go's "very short watch").
SHORT_WATCH = 1.0


class ListerWatcher(Protocol):
    """How a reflector reaches its resource (client-go ``cache.ListerWatcher``)."""

    async def list(self, options: ListOptions) -> Object: ...

    def watch(self, options: ListOptions) -> WatchInterface: ...


class ReflectorStore(Protocol):
    """Where a reflector puts what it learns (client-go ``cache.Store``, the part a reflector uses)."""

    def add(self, obj: Object) -> None: ...

    def update(self, obj: Object) -> None: ...

    def delete(self, obj: Object) -> None: ...

    def replace(self, items: Iterable[Object], resource_version: str = "") -> None: ...

    def resync(self) -> None: ...


class ListWatch:
    """The list and watch of one resource through a ``ResourceClient``, optionally filtered.

    client-go ``cache.NewFilteredListWatchFromClient``: the selectors apply to both, so the store
    holds only the matching objects (a kubelet watches ``spec.nodeName=<its node>`` only).
    """

    def __init__(
        self,
        resource: ResourceClient,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> None:
        self.resource = resource
        self.label_selector = label_selector
        self.field_selector = field_selector

    async def list(self, options: ListOptions) -> Object:
        return await self.resource.list(
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=options.limit,
            continue_=options.continue_,
            resource_version=options.resource_version,
            resource_version_match=options.resource_version_match,
            timeout_seconds=options.timeout_seconds,
        )

    def watch(self, options: ListOptions) -> Watch:
        return self.resource.watch(
            resource_version=options.resource_version,
            allow_bookmarks=options.allow_watch_bookmarks,
            timeout_seconds=options.timeout_seconds,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            send_initial_events=options.send_initial_events,
            resource_version_match=options.resource_version_match,
        )


class ShortWatch(Exception):
    """The watch ended within a second without any event: something is wrong, back off."""


class Reflector:
    """Lists and watches one resource into ``store``, forever (``run``) or once (``list_and_watch``)."""

    def __init__(
        self,
        list_watch: ListerWatcher,
        store: ReflectorStore,
        *,
        name: str = "reflector",
        resync_period: float = 0.0,
        should_resync: Callable[[], bool] | None = None,
        page_size: int = 0,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        backoff: BackoffManager | None = None,
        decode: Callable[[bytes], WatchEvent] | None = None,
    ) -> None:
        self.list_watch = list_watch
        self.store = store
        self.name = name
        self.resync_period = resync_period
        self.should_resync = should_resync
        #: Page size for lists; 0 means the pager's default (500) for the first list (client-go
        #: ``WatchListPageSize``).
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.backoff = backoff if backoff is not None else reflector_backoff(clock=clock, rng=self.rng)
        #: How the lines of this client's watches become events (``Watch.decode``), if not as usual.
        self.decode = decode
        self._last_sync_resource_version = ""
        self._last_sync_unavailable = False
        self._paginated_result = False
        self._lists = 0
        self._watches = 0

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list, event or bookmark applied to the store."""
        return self._last_sync_resource_version

    @property
    def list_count(self) -> int:
        """How many lists this reflector completed (1: only the first one; more: it re-listed)."""
        return self._lists

    @property
    def watch_count(self) -> int:
        """How many watches this reflector opened."""
        return self._watches

    # -- the loop ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled, waiting with backoff between attempts (``wait.BackoffUntil``)."""
        while True:
            try:
                await self.list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # client-go's DefaultWatchErrorHandler: say so, try again
                self._log_error(error)
            await self.backoff.backoff()

    def _log_error(self, error: Exception) -> None:
        if isinstance(error, ResourceExpired):
            logger.info("%s: %s; listing again", self.name, error)
        else:
            logger.warning("%s: list and watch failed: %s: %s", self.name, type(error).__name__, error)

    async def list_and_watch(self) -> None:
        """List, then watch until the watch fails (returns: the caller lists again) or is cancelled."""
        await self._list()
        resync: asyncio.Task[None] | None = None
        if self.resync_period > 0:
            resync = asyncio.create_task(self._resync_loop(), name=f"{self.name} resync")
        try:
            await self._watch_loop()
        finally:
            if resync is not None:
                await cancel_and_wait(resync)

    # -- list ----------------------------------------------------------------------------------------

    def _relist_resource_version(self) -> str:
        """ "0" for the first list, the last one seen afterwards, "" if that one proved too old."""
        if self._last_sync_unavailable:
            return ""
        if not self._last_sync_resource_version:
            return "0"
        return self._last_sync_resource_version

    def _pager(self, options: ListOptions) -> ListPager:
        if self.page_size:
            page_size = self.page_size
        elif self._paginated_result:
            page_size = DEFAULT_PAGE_SIZE  # the server pages this resource: keep paging
        elif options.resource_version not in (None, "", "0"):
            # A list "not older than N" without a limit is served from the server's watch cache; with a
            # limit it would be an exact read from storage. Do not page it.
            page_size = 0
        else:
            page_size = DEFAULT_PAGE_SIZE
        return ListPager(self.list_watch.list, page_size=page_size)

    async def _list(self) -> None:
        options = ListOptions(resource_version=self._relist_resource_version())
        try:
            result = await self._pager(options).list(options)
        except ResourceExpired as error:
            # The resourceVersion we listed at is gone too: list the latest, from storage.
            logger.info(
                "%s: list at resourceVersion %r: %s; listing at the latest",
                self.name,
                options.resource_version,
                error,
            )
            self._last_sync_unavailable = True
            latest = ListOptions(resource_version=self._relist_resource_version())
            result = await self._pager(latest).list(latest)
        if options.resource_version == "0" and result.paginated:
            self._paginated_result = True
        self._last_sync_unavailable = False
        self.store.replace(result.items, result.resource_version)
        self._last_sync_resource_version = result.resource_version
        self._lists += 1

    # -- watch ---------------------------------------------------------------------------------------

    async def _watch_loop(self) -> None:
        while True:
            started = self.clock.now()
            timeout = int(self.min_watch_timeout * (self.rng.random() + 1.0))
            options = ListOptions(
                resource_version=self._last_sync_resource_version,
                timeout_seconds=timeout,
                allow_watch_bookmarks=True,
            )
            watcher = self.list_watch.watch(options)
            if self.decode is not None and isinstance(watcher, Watch):
                watcher.decode = self.decode
            try:
                await watcher.start()
            except (ConnectError, TooManyRequests) as error:
                # The server is not there or asks us to wait: wait and watch again, no need to list.
                await watcher.stop()
                logger.info("%s: watch refused (%s); backing off", self.name, error)
                await self.backoff.backoff()
                continue
            except BaseException:
                await watcher.stop()
                raise
            self._watches += 1
            try:
                await self._handle_watch(watcher, started)
            except TooManyRequests as error:
                logger.info("%s: watch answered 429 (%s); backing off", self.name, error)
                await self.backoff.backoff()
                continue
            except ResourceExpired as error:
                # Do not mark the last resourceVersion unavailable: a list "not older than" it may
                # still work (and is cheaper); _list falls back to "" if it does not.
                logger.info("%s: watch closed: %s", self.name, error)
                return
            finally:
                await watcher.stop()

    async def _handle_watch(self, watcher: WatchInterface, started: float) -> None:
        count = 0
        async for event in watcher:
            obj = event.object
            if event.type is EventType.ADDED:
                self.store.add(obj)
            elif event.type is EventType.MODIFIED:
                self.store.update(obj)
            elif event.type is EventType.DELETED:
                self.store.delete(obj)
            # BOOKMARK: nothing changed, only the resourceVersion moves on.
            resource_version = event.resource_version
            if resource_version:
                self._last_sync_resource_version = resource_version
            count += 1
        if count == 0 and self.clock.now() - started < SHORT_WATCH:
            raise ShortWatch(f"{self.name}: the watch ended within {SHORT_WATCH:g} s without any event")

    async def _resync_loop(self) -> None:
        while True:
            await self.clock.sleep(self.resync_period)
            if self.should_resync is None or self.should_resync():
                self.store.resync()


__all__ = [
    "MIN_WATCH_TIMEOUT",
    "ListWatch",
    "ListerWatcher",
    "Reflector",
    "ReflectorStore",
    "ShortWatch",
]
