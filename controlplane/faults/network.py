"""What ``partition-component`` and ``link-latency`` do to a running cluster: cut or slow one link.

The book of what is cut and slowed is ``links.py`` (pure); these effects keep one ``LinkBook`` per
cluster, put it on the cluster's endpoint while a link fault is in force (``APIEndpoint.links``, which
each component's ``ComponentLink`` asks) and take it away when the last one ends, so a sound cluster's
requests check nothing but that it is None.

A partition also breaks what the component has open: its watches. Over a real network the API
server's side of a dead connection ends once the connection is found dead (HTTP/2 pings, TCP
keepalive); here the API server ends them at once (``watch.closed``, "the connection ... was lost"),
and the component's reflectors watch again, over the cut link: refused until the fault is cleared,
with client-go's back-off between tries (``tools/cache/reflector.go``). Once cleared, they connect
again, watch from their last resourceVersion, and list again if that is too old.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controlplane.faults.book import Fault
from controlplane.faults.links import Latency, LinkBook

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab


class Links:
    """The ``LinkBook`` of each cluster, shared by the kinds that cut or slow links."""

    def __init__(self) -> None:
        self._books: dict[tuple[str, int], LinkBook] = {}

    def book(self, cluster: Cluster) -> LinkBook:
        """``cluster``'s book, put on its endpoint (a cluster made anew under the same name has another)."""
        key = (cluster.name, cluster.incarnation)
        book = self._books.get(key)
        if book is None:
            book = self._books[key] = LinkBook()
        cluster.endpoint.links = book
        return book

    def end(self, cluster: Cluster, fault: Fault) -> None:
        """``fault`` is over on ``cluster``; with the last one, its endpoint checks nothing again."""
        key = (cluster.name, cluster.incarnation)
        book = self._books.get(key)
        if book is None:
            return
        book.remove(fault.id)
        if book.empty:
            del self._books[key]
            if cluster.endpoint.links is book:
                cluster.endpoint.links = None


def sever(cluster: Cluster, component: str) -> int:
    """End the API server's watches of ``component``, whose connection is gone; how many."""
    apiserver = cluster.apiserver
    if apiserver is None:
        return 0
    ended = 0
    for cache in apiserver.caches.values():
        for watcher in list(cache.watchers):
            if watcher.diagram is not None and watcher.diagram.get("to") == component:
                watcher.close(f"the connection to {component} was lost (network partition)")
                ended += 1
    return ended


class PartitionComponent:
    """Cut the link between the fault's component and the API server; clearing restores it."""

    def __init__(self, links: Links) -> None:
        self.links = links

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        component = str(fault.spec.parameters()["component"])
        self.links.book(cluster).cut(fault.id, component)
        sever(cluster, component)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)


class LinkLatency:
    """Delay every request of the fault's component to the API server; clearing ends it."""

    def __init__(self, links: Links) -> None:
        self.links = links

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        values = fault.spec.parameters()
        latency = Latency(int(values["ms"]) / 1000, int(values.get("jitter", 0)) / 1000)
        self.links.book(cluster).slow(fault.id, str(values["component"]), latency)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)


__all__ = ["LinkLatency", "Links", "PartitionComponent", "sever"]
