"""Component certificates: issued in cluster time, renewed at 80 % of their life, good to the API server."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.clock import ManualClock
from controlplane.componentcerts import LIFETIME, ComponentCertificate
from controlplane.identity import NODES
from controlplane.pki import ClusterPKI


async def test_a_component_certificate_lives_in_cluster_time_and_is_renewed_before_it_expires(
    tmp_path: Path,
) -> None:
    clock = ManualClock()  # 2023: before the CA was made on the wall clock, which does not matter
    pki = ClusterPKI.load_or_create(tmp_path)
    certificate = ComponentCertificate(pki, "system:node:n1", [NODES], now=clock.now)
    authenticator = X509Authenticator(pki.ca.certificate, clock=clock)
    first = certificate.current()
    start = dt.datetime.fromtimestamp(clock.now(), dt.UTC)
    assert certificate.certificate.not_valid_after_utc == start + LIFETIME
    accepted = authenticator.authenticate([first.decode()])
    assert accepted is not None and accepted.user is not None
    assert (accepted.user.username, accepted.user.groups) == ("system:node:n1", (NODES,))

    await clock.advance(LIFETIME.total_seconds() * 0.79)
    assert certificate.current() is first and certificate.renewals == 1
    await clock.advance(LIFETIME.total_seconds() * 0.02)
    renewed = certificate.current()
    assert renewed != first and certificate.renewals == 2

    await clock.advance(LIFETIME.total_seconds() * 0.5)  # the first one has expired by now
    old = authenticator.authenticate([first.decode()])
    assert old is not None and old.error is not None and "has expired" in str(old.error)
    new = authenticator.authenticate([renewed.decode()])
    assert new is not None and new.user is not None
