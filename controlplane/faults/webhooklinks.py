"""The network between the API server and its admission webhooks: which webhooks are down or far away.

An admission webhook is a server somewhere on the network that the API server calls during
admission (``controlplane/apiserver/admission/webhook.py``). When it is down, the API server's
connect is refused (``failed calling webhook "x": failed to call webhook: Post "https://...": dial
tcp 10.0.0.7:443: connect: connection refused``); when the network to it is slow, each call waits,
and a call that does not finish within the webhook's ``timeoutSeconds`` fails with ``context
deadline exceeded``. Either way the call failed, and the webhook's ``failurePolicy`` decides:
``Fail`` refuses the request (500 InternalError), ``Ignore`` lets it through (upstream's dispatchers,
apiserver ``pkg/admission/plugin/webhook/validating/dispatcher.go`` and ``mutating/dispatcher.go``).

``WebhookLinkBook`` is the pure core: which faults take which webhook down or slow it (a webhook by
its name, or ``*``: every webhook of the cluster), and what that does to one call now
(``condition``: a ``WebhookCondition``). No I/O, no tasks. The hook is the API server's
``WebhookClient`` (``webhookclient.py``), which asks its ``network`` only while one is set: the
effects (``webhooknetwork.py``) set a cluster's book there while a webhook fault is in force.
"""

from __future__ import annotations

from controlplane.apiserver.admission.webhookclient import WebhookCondition
from controlplane.faults.catalogue import EVERY_WEBHOOK


class WebhookLinkBook:
    """The webhook faults of one cluster, by fault id (see the module's docstring)."""

    def __init__(self) -> None:
        self._down: dict[str, str] = {}
        self._delay: dict[str, tuple[str, float]] = {}

    # -- changing --------------------------------------------------------------------------------

    def down(self, fault_id: str, webhook: str) -> None:
        """Fault ``fault_id`` takes ``webhook`` (its name, or ``*``) down."""
        self._down[fault_id] = webhook

    def slow(self, fault_id: str, webhook: str, seconds: float) -> None:
        """Fault ``fault_id`` makes each call of ``webhook`` (its name, or ``*``) wait ``seconds``."""
        self._delay[fault_id] = (webhook, seconds)

    def remove(self, fault_id: str) -> None:
        """Fault ``fault_id`` is over."""
        self._down.pop(fault_id, None)
        self._delay.pop(fault_id, None)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def empty(self) -> bool:
        """Whether every webhook is reachable as it is (the client then needs no book at all)."""
        return not self._down and not self._delay

    def condition(self, webhook: str) -> WebhookCondition | None:
        """What the network does to a call of ``webhook`` now: None if nothing; else whether it is
        down and how long the call waits first (the delays of several faults add up, as hops do)."""
        down = any(_hits(target, webhook) for target in self._down.values())
        delays = [seconds for target, seconds in self._delay.values() if _hits(target, webhook)]
        if not down and not delays:
            return None
        return WebhookCondition(down=down, delay=sum(delays))


def _hits(target: str, webhook: str) -> bool:
    return target in (EVERY_WEBHOOK, webhook)


__all__ = ["WebhookLinkBook"]
