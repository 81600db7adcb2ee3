"""The CSR cleaner: delete CertificateSigningRequests that have served their purpose.

Kubelets ask for certificates again and again (each renewal is a new CSR) and the approving
controller approves them without anyone looking, so CSRs would pile up forever. Once a CSR is
decided, the object is no longer needed: the requester has fetched its certificate, or learnt that it
was refused. The cleaner deletes

- an issued CSR an hour after it was approved (the Approved condition's ``lastUpdateTime``), or once
  its certificate has expired;
- a denied or failed one an hour after that condition was last updated;
- one still pending (no condition at all) a day after it was created.

Upstream lists every CSR once an hour (``wait.Until`` with a one-hour period); this controller looks
at each CSR when it changes and again when its deadline comes, on the cluster clock, so it costs
nothing while nothing is due (as the TTL-after-finished controller does).

Upstream: ``pkg/controller/certificates/cleaner/cleaner.go``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from typing import Final

from cryptography import x509

from controlplane.api.certificates import APPROVED, DENIED, FAILED, certificate_of, conditions
from controlplane.api.meta import Object, parse_timestamp
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.clock import Clock
from controlplane.components.controllers.kinds import CERTIFICATE_SIGNING_REQUESTS

logger = logging.getLogger(__name__)

APPROVED_EXPIRATION: Final = 3600.0
DENIED_EXPIRATION: Final = 3600.0
FAILED_EXPIRATION: Final = 3600.0
PENDING_EXPIRATION: Final = 24 * 3600.0


def _certificate_end(csr: Object) -> float | None:
    """When the issued certificate expires (its ``NotAfter``), or None if none was issued."""
    pem = certificate_of(csr)
    if not pem:
        return None
    try:
        return x509.load_pem_x509_certificate(pem).not_valid_after_utc.timestamp()
    except ValueError:
        return None


def deadline(csr: Object) -> float | None:
    """When ``csr`` is to be deleted (the earliest rule that applies), or None if never."""
    found = conditions(csr)
    candidates: list[float] = []
    issued = bool(certificate_of(csr))
    for condition in found:
        updated = parse_timestamp(condition.get("lastUpdateTime"))
        kind = condition.get("type")
        if kind == APPROVED and issued:
            if updated is not None:
                candidates.append(updated + APPROVED_EXPIRATION)
            end = _certificate_end(csr)
            if end is not None:
                candidates.append(end)
        elif kind == DENIED and updated is not None:
            candidates.append(updated + DENIED_EXPIRATION)
        elif kind == FAILED and updated is not None:
            candidates.append(updated + FAILED_EXPIRATION)
    if not found:
        created = parse_timestamp((csr.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            candidates.append(created + PENDING_EXPIRATION)
    return min(candidates) if candidates else None


class CSRCleaner:
    """The reconciler: delete the CSR once its deadline has passed, else look again then."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.csrs = manager.cache(CERTIFICATE_SIGNING_REQUESTS)
        self.clock: Clock = manager.clock

    async def reconcile(self, request: Request) -> Result:
        csr = self.csrs.get_by_key(request.name)
        if csr is None:
            return Result()
        due = deadline(csr)
        if due is None:
            return Result()
        left = due - self.clock.now()
        if left > 0:
            return Result(requeue_after=left)
        when = dt.datetime.fromtimestamp(due, dt.UTC).isoformat()
        logger.info("cleaning CSR %s: past its deadline (%s)", request.name, when)
        uid = (csr.get("metadata") or {}).get("uid")
        resource = self.client.resource(
            CERTIFICATE_SIGNING_REQUESTS.group,
            CERTIFICATE_SIGNING_REQUESTS.version,
            CERTIFICATE_SIGNING_REQUESTS.plural,
        )
        with contextlib.suppress(NotFound):
            await resource.delete(request.name, preconditions={"uid": str(uid)} if uid else None)
        return Result()


def add_to_manager(manager: Manager) -> Controller:
    """Add the CSR cleaner (for CertificateSigningRequests) to ``manager``."""
    return manager.new_controller("csrcleaner", CSRCleaner(manager), for_=CERTIFICATE_SIGNING_REQUESTS)


__all__ = [
    "APPROVED_EXPIRATION",
    "DENIED_EXPIRATION",
    "FAILED_EXPIRATION",
    "PENDING_EXPIRATION",
    "CSRCleaner",
    "add_to_manager",
    "deadline",
]
