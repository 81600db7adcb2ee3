"""What ``webhook-down`` and ``webhook-slow`` do to a running cluster: break the API server's calls.

The book of which webhooks are down or slow is ``webhooklinks.py`` (pure); these effects keep one
``WebhookLinkBook`` per cluster and put it where the API server's calls to webhooks ask
(``WebhookClient.network``), while a webhook fault is in force. It is kept on the cluster too
(``Cluster.webhook_network``), so an API server that restarts meanwhile gets it as well: the
network does not heal because kube-apiserver restarted. With the last such fault cleared, the
client checks nothing again, and the next call reaches the webhook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controlplane.faults.book import Fault
from controlplane.faults.catalogue import EVERY_WEBHOOK
from controlplane.faults.webhooklinks import WebhookLinkBook

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab


class WebhookLinks:
    """The ``WebhookLinkBook`` of each cluster, shared by the kinds that break webhook calls."""

    def __init__(self) -> None:
        self._books: dict[tuple[str, int], WebhookLinkBook] = {}

    def book(self, cluster: Cluster) -> WebhookLinkBook:
        """``cluster``'s book, put where its API server's calls ask (a cluster made anew has another)."""
        key = (cluster.name, cluster.incarnation)
        book = self._books.get(key)
        if book is None:
            book = self._books[key] = WebhookLinkBook()
        _install(cluster, book)
        return book

    def end(self, cluster: Cluster, fault: Fault) -> None:
        """``fault`` is over on ``cluster``; with the last one, its calls check nothing again."""
        key = (cluster.name, cluster.incarnation)
        book = self._books.get(key)
        if book is None:
            return
        book.remove(fault.id)
        if book.empty:
            del self._books[key]
            if cluster.webhook_network is book:
                _install(cluster, None)


def _install(cluster: Cluster, book: WebhookLinkBook | None) -> None:
    cluster.webhook_network = book
    if cluster.apiserver is not None:
        cluster.apiserver.webhook_client.network = book


def _webhook(fault: Fault) -> str:
    return str(fault.spec.parameters().get("webhook", EVERY_WEBHOOK))


class WebhookDown:
    """Every call of the fault's webhook (or of every webhook) is refused; clearing restores them."""

    def __init__(self, links: WebhookLinks) -> None:
        self.links = links

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.links.book(cluster).down(fault.id, _webhook(fault))

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)


class WebhookSlow:
    """Every call of the fault's webhook (or of every webhook) waits ``ms`` milliseconds first."""

    def __init__(self, links: WebhookLinks) -> None:
        self.links = links

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        delay = int(fault.spec.parameters()["ms"]) / 1000
        self.links.book(cluster).slow(fault.id, _webhook(fault), delay)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self.links.end(cluster, fault)


__all__ = ["WebhookDown", "WebhookLinks", "WebhookSlow"]
