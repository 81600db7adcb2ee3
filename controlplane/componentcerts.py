"""Component certificates: each component's client certificate, short-lived and renewed as it runs.

The scheduler, the controller manager, every kubelet and every kube-proxy prove who they are to the
API server with a client certificate from the cluster's CA (``CN=system:node:node-1, O=system:nodes``
for the kubelet of node-1), as kubeadm sets them up. A certificate cannot be taken back once issued
(short of the revocation list), so the less time it lives, the less a stolen one is worth: Kubelab's
components get certificates that live **one day of cluster time** (``LIFETIME``), and renew them once
80 % of that has passed (``RENEW_AFTER``), as the kubelet's certificate manager rotates its own
certificate at 70 to 90 % of its lifetime (k8s.io/client-go ``util/certificate/certificate_manager.go``).
kubeadm's certificates live a year and are renewed by hand, or by upgrading the cluster. A joined
node's kubelet is the exception: it asks for its certificate, and renews it, through CSRs
(``components/kubelet/certificate.py``, TLS bootstrapping).

Each certificate starts at the cluster clock's "now": the API server checks it against the same clock,
so a cluster whose clock runs fast (or is moved by a lesson) ages its certificates with it, and its
components keep renewing theirs in step. The renewal happens when a request needs the certificate
(no task of its own): a new key, a new certificate, about a millisecond.

``manage.py runcomponent`` runs a component as a process of its own, over real TLS, with a certificate
issued once at its start that lives ``PROCESS_LIFETIME`` (a week: its TLS connection cannot swap
certificates, so it is restarted to renew).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

from cryptography import x509

from controlplane.pki import ClusterPKI

#: How long an in-process component's certificate lives, in cluster time, and when it is renewed.
LIFETIME = dt.timedelta(days=1)
RENEW_AFTER = 0.8
#: How long the certificate of a component run by ``manage.py runcomponent`` lives (wall time).
PROCESS_LIFETIME = dt.timedelta(days=7)


def _days(lifetime: dt.timedelta) -> float:
    return lifetime.total_seconds() / 86400


class ComponentCertificate:
    """The current client certificate of one component, renewed from the cluster CA when it is due."""

    def __init__(
        self,
        pki: ClusterPKI,
        user: str,
        groups: Iterable[str] = (),
        *,
        now: Callable[[], float],
        lifetime: dt.timedelta = LIFETIME,
    ) -> None:
        self.pki = pki
        self.user = user
        self.groups = tuple(groups)
        self._now = now
        self.lifetime = lifetime
        self.renewals = 0
        self._renew()

    def _renew(self) -> None:
        start = dt.datetime.fromtimestamp(self._now(), dt.UTC)
        self.cert_pem, self.key_pem = self.pki.issue_client_certificate(
            self.user, self.groups, days=_days(self.lifetime), now=start
        )
        self.certificate = x509.load_pem_x509_certificate(self.cert_pem)
        self._renew_at = start.timestamp() + self.lifetime.total_seconds() * RENEW_AFTER
        self.renewals += 1

    @property
    def serial(self) -> int:
        return self.certificate.serial_number

    def current(self) -> bytes:
        """The certificate (PEM) to present now: a new one once 80 % of the last one's life has passed."""
        if self._now() >= self._renew_at:
            self._renew()
        return self.cert_pem


def process_certificate(pki: ClusterPKI, user: str, groups: Iterable[str] = ()) -> tuple[bytes, bytes]:
    """``(cert_pem, key_pem)`` for a component run as its own process: ``PROCESS_LIFETIME``, wall time."""
    return pki.issue_client_certificate(user, groups, days=_days(PROCESS_LIFETIME))
