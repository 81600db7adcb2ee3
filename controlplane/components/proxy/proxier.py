"""kube-proxy: one per node, turning Services and EndpointSlices into that node's forwarding rules.

kube-proxy is a client of the API server like any other component. It watches two things, all
Services and all EndpointSlices, through shared informers, and after every change recomputes the
node's rule table (``rules.py``): for each Service address and port, the endpoints that traffic may
go to. Here the table is data the topology diagram draws, where real kube-proxy writes iptables,
IPVS or nftables rules into the node's kernel.

**Batching.** Rewriting every rule on every event would be wasteful when a Deployment rolls out and
hundreds of events arrive in a second. Upstream's ``BoundedFrequencyRunner`` runs the sync at most
once per ``minSyncPeriod`` (1 s): the first change after a quiet spell syncs at once, later ones wait
for the period to end and are synced together. With nothing happening the table is still rebuilt
every ``syncPeriod`` (30 s), in case something drifted. Both are timers on the cluster clock.

Every sync emits a ``proxy.sync`` trace event from ``kube-proxy:<node>`` (the diagram's node id, like
``kubelet:<node>``) with the number of rules and the destinations whose endpoints changed; ``rules()``
returns the current table and ``syncs`` counts the syncs.

Upstream: ``cmd/kube-proxy/app/server.go``, ``pkg/proxy/config/config.go``,
``pkg/proxy/iptables/proxier.go`` (``syncProxyRules``), ``pkg/util/async/bounded_frequency_runner.go``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Final

from controlplane.client.informer import ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerFactory
from controlplane.client.rest import ClientLease, ClientOrFactory, RESTClient
from controlplane.clock import Clock
from controlplane.components.proxy.rules import RuleTable, build_rule_table
from controlplane.tasks import cancel_and_wait
from controlplane.trace import NULL_SINK, TraceSink, nodes

logger = logging.getLogger(__name__)


#: kube-proxy's ``--iptables-min-sync-period`` (1 s) and ``--iptables-sync-period`` (30 s).
DEFAULT_MIN_SYNC_PERIOD: Final = 1.0
DEFAULT_SYNC_PERIOD: Final = 30.0
#: How many changed destinations a ``proxy.sync`` trace event lists at most.
TRACE_CHANGES_LIMIT: Final = 20


def changed_destinations(old: RuleTable, new: RuleTable) -> list[str]:
    """The destinations (``ip:port/protocol``) added, removed, or sending elsewhere than before."""
    before = {r.destination: r.endpoints for r in old.rules}
    after = {r.destination: r.endpoints for r in new.rules}
    return sorted(d for d in before.keys() | after.keys() if before.get(d) != after.get(d))


class KubeProxy:
    """The kube-proxy of one node.

    ``client`` is a ``RESTClient`` (the caller closes it) or a function making one (made at ``start``,
    closed at ``stop``). ``start()`` returns once both caches are synced and the first table is
    built; ``stop()`` ends the sync loop and the informers.
    """

    def __init__(
        self,
        client: ClientOrFactory,
        node_name: str,
        *,
        clock: Clock | None = None,
        trace: TraceSink = NULL_SINK,
        cluster: str = "",
        rng: random.Random | None = None,
        min_sync_period: float = DEFAULT_MIN_SYNC_PERIOD,
        sync_period: float = DEFAULT_SYNC_PERIOD,
    ) -> None:
        if min_sync_period < 0 or sync_period <= 0:
            raise ValueError("sync periods must be positive")
        self._lease = ClientLease(client)
        self.node_name = node_name
        self._clock = clock
        self.trace = trace
        self.cluster = cluster
        self.rng = rng if rng is not None else random.Random()
        self.min_sync_period = min_sync_period
        self.sync_period = sync_period
        self._client: RESTClient | None = None
        self._factory: SharedInformerFactory | None = None
        self._services: SharedIndexInformer | None = None
        self._slices: SharedIndexInformer | None = None
        self._table = RuleTable(node_name)
        self._syncs = 0
        self._last_sync: float | None = None
        self._changed = asyncio.Event()
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- what others read ----------------------------------------------------------------------------

    @property
    def node_id(self) -> str:
        """This component's id on the topology diagram."""
        return nodes.kube_proxy(self.node_name)

    @property
    def clock(self) -> Clock:
        if self._clock is not None:
            return self._clock
        if self._client is None:
            raise RuntimeError("kube-proxy has no clock before it starts")
        return self._client.clock

    @property
    def syncs(self) -> int:
        """How many times the table was rebuilt."""
        return self._syncs

    @property
    def started(self) -> bool:
        return self._task is not None

    def rules(self) -> RuleTable:
        """The node's current rule table (immutable; a new one after each sync)."""
        return self._table

    def has_pending_changes(self) -> bool:
        """A Service or EndpointSlice changed since the last sync."""
        return self._changed.is_set()

    async def wait_for_change(self) -> None:
        """Until a change is pending (it will be synced once ``min_sync_period`` allows)."""
        await self._changed.wait()

    async def wait_for_sync(self, predicate: Callable[[RuleTable], bool] | None = None) -> RuleTable:
        """Until the next sync, or (with ``predicate``) until a sync yields a table it accepts."""
        if predicate is not None and predicate(self._table):
            return self._table
        while True:
            synced = self._synced
            await synced.wait()
            if predicate is None or predicate(self._table):
                return self._table

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is not None:
            return
        self._client = self._lease.open()
        try:
            self._factory = SharedInformerFactory(
                self._client, clock=self.clock, rng=random.Random(self.rng.getrandbits(64))
            )
            handler = ResourceEventHandlerFuncs(self._on_change, self._on_update, self._on_change)
            self._services = self._factory.informer_for("", "v1", "services")
            self._services.add_event_handler(handler)
            self._slices = self._factory.informer_for("discovery.k8s.io", "v1", "endpointslices")
            self._slices.add_event_handler(handler)
            self._factory.start()
            await self._factory.wait_for_cache_sync()
        except BaseException:
            await self._shutdown()
            raise
        self._sync("initial")
        self._task = asyncio.create_task(self._run(), name=f"{self.node_id} sync loop")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._shutdown()

    async def _shutdown(self) -> None:
        if self._factory is not None:
            await self._factory.shutdown()
            self._factory = None
        await self._lease.close()
        self._client = None

    # -- informer events -----------------------------------------------------------------------------

    def _on_change(self, obj: Any) -> None:
        self._changed.set()

    def _on_update(self, old: Any, new: Any) -> None:
        self._changed.set()

    # -- the sync loop (BoundedFrequencyRunner) ------------------------------------------------------

    async def _run(self) -> None:
        while True:
            reason = "changed" if await self._wait_for_change_or(self.sync_period) else "periodic"
            if self._last_sync is not None:
                wait = self._last_sync + self.min_sync_period - self.clock.now()
                if wait > 0:
                    await self.clock.sleep(wait)
            self._sync(reason)

    async def _wait_for_change_or(self, seconds: float) -> bool:
        """True when a change is pending, False when ``seconds`` passed (cluster clock) without one."""
        if self._changed.is_set():
            return True
        changed = asyncio.ensure_future(self._changed.wait())
        timer = asyncio.ensure_future(self.clock.sleep(seconds))
        try:
            await asyncio.wait({changed, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(changed, timer)
        return self._changed.is_set()

    def sync(self) -> RuleTable:
        """Rebuild the table now from the caches (``syncProxyRules``)."""
        return self._sync("requested")

    def _sync(self, reason: str) -> RuleTable:
        started = time.perf_counter()
        self._changed.clear()
        services = self._services.indexer.list() if self._services is not None else []
        slices = self._slices.indexer.list() if self._slices is not None else []
        previous, table = self._table, build_rule_table(services, slices, self.node_name)
        self._table = table
        self._syncs += 1
        self._last_sync = self.clock.now()
        changes = changed_destinations(previous, table)
        if changes:
            logger.debug("%s: sync %d, %d rules, changed %s", self.node_id, self._syncs, len(table), changes)
        if self.trace.enabled:
            self.trace.emit(
                "proxy.sync",
                **{"from": self.node_id},
                **({"cluster": self.cluster} if self.cluster else {}),
                node=self.node_name,
                sync=self._syncs,
                reason=reason,
                rules=len(table),
                endpoints=sum(len(r.endpoints) for r in table.rules),
                changed=changes[:TRACE_CHANGES_LIMIT],
                changed_count=len(changes),
                duration=round(time.perf_counter() - started, 6),
            )
        synced, self._synced = self._synced, asyncio.Event()
        synced.set()
        return table


__all__ = [
    "DEFAULT_MIN_SYNC_PERIOD",
    "DEFAULT_SYNC_PERIOD",
    "ClientOrFactory",
    "KubeProxy",
    "changed_destinations",
]
