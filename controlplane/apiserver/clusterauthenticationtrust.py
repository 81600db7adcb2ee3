"""``kube-system/extension-apiserver-authentication``: how this API server authenticates its clients.

An extension API server (metrics-server, an aggregated API) is called by kube-apiserver on a user's
behalf and must trust the same clients. kube-apiserver publishes what it trusts in one ConfigMap that
such servers read (upstream's Role ``extension-apiserver-authentication-reader``), kept by a
post-start hook of its own, ``start-cluster-authentication-info-controller``:

- ``client-ca-file``: the CA bundle of ``--client-ca-file``, the CAs whose client certificates are
  users (here: the cluster's client CA, ``controlplane/pki.py``);
- ``requestheader-client-ca-file``, ``-allowed-names``, ``-username-headers``, ``-uid-headers``,
  ``-group-headers``, ``-extra-headers-prefix``: the front proxy's CA and headers
  (``--requestheader-*``), written only when a request-header CA is configured. Kubelab's API server
  has no front proxy and reads no such headers, so it writes none of them, as upstream without those
  flags; kubeadm's clusters have them, and its ``kube-apiserver`` manifest here lists none.

What it writes is the **union** of what the ConfigMap holds and what this server trusts: certificates
of both bundles, expired ones (more than five minutes ago) dropped, duplicates once, the ConfigMap's
first; header lists merged the same way. So several API servers with different CAs share one
ConfigMap, and a CA someone added stays. A deleted ConfigMap is made again at once (its watch sees
the deletion), an edit that removed this server's CA is undone, and a ConfigMap whose bundle or lists
do not parse is left alone, with an error logged at each look, until someone fixes it. It looks once a
minute besides (``PollImmediateUntil``), and at its start.

Deviations, for the lab: it reads the ConfigMap from the API server's watch cache and writes it
through the registry, as the server's own write (no request, no admission), as the ``kubernetes``
Service's controller does, where upstream uses an informer and a loopback client; a write that fails
is tried again at the next look, not with a rate-limited backoff; the namespace is not created
(``kube-system`` always exists, ``SYSTEM_NAMESPACES``).

Upstream: ``cluster_authentication_trust_controller.go`` in
``pkg/controlplane/controller/clusterauthenticationtrust``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from controlplane.api.meta import Object
from controlplane.apiserver import errors
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import CacheWatcher, WatchCache
from controlplane.clock import Clock
from controlplane.store import StoreError
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

NAMESPACE: Final = "kube-system"
NAME: Final = "extension-apiserver-authentication"
#: The post-start hook that runs the controller.
HOOK: Final = "start-cluster-authentication-info-controller"
CLIENT_CA_KEY: Final = "client-ca-file"
REQUEST_HEADER_CA_KEY: Final = "requestheader-client-ca-file"
#: The request-header lists, as ``getConfigMapDataFor`` writes them (JSON arrays of strings).
USERNAME_HEADERS: Final = "requestheader-username-headers"
UID_HEADERS: Final = "requestheader-uid-headers"
GROUP_HEADERS: Final = "requestheader-group-headers"
EXTRA_HEADERS_PREFIX: Final = "requestheader-extra-headers-prefix"
ALLOWED_NAMES: Final = "requestheader-allowed-names"
HEADER_LISTS: Final = (USERNAME_HEADERS, UID_HEADERS, GROUP_HEADERS, EXTRA_HEADERS_PREFIX, ALLOWED_NAMES)
#: How often it looks without being told to (``wait.PollImmediateUntil(1*time.Minute, ...)``).
RESYNC_SECONDS: Final = 60.0
#: ``filterExpiredCerts``: a certificate is kept until five minutes after it expired.
EXPIRY_SLACK: Final = dt.timedelta(minutes=5)

SCOPE: Final = RequestScope.unadmitted(reason=f"{HOOK}: the API server's client CA for extension servers")


class InvalidAuthenticationInfo(ValueError):
    """A ConfigMap whose CA bundle or header lists cannot be read (upstream's sync error)."""


@dataclass(frozen=True, slots=True)
class AuthenticationInfo:
    """``ClusterAuthenticationInfo``: CA bundles as certificates (None: not set), header lists."""

    client_ca: tuple[x509.Certificate, ...] | None = None
    request_header_ca: tuple[x509.Certificate, ...] | None = None
    headers: Mapping[str, tuple[str, ...] | None] | None = None

    def header(self, key: str) -> tuple[str, ...] | None:
        return None if self.headers is None else self.headers.get(key)


def parse_certificates(bundle: str) -> tuple[x509.Certificate, ...]:
    """``cert.ParseCertsPEM``: every ``CERTIFICATE`` block; an error if a block is not a certificate
    or there is none."""
    try:
        found = x509.load_pem_x509_certificates(bundle.encode())
    except ValueError as error:
        raise InvalidAuthenticationInfo(
            f"data does not contain any valid RSA or ECDSA certificates: {error}"
        ) from error
    return tuple(found)


def _header_list(value: str) -> tuple[str, ...] | None:
    """``jsonDeserializeStringSlice``: "" is unset; anything else must be a JSON array of strings."""
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as error:
        raise InvalidAuthenticationInfo(f"{value!r}: {error}") from error
    if parsed is None:
        return ()
    if not isinstance(parsed, list) or not all(isinstance(item, str) for item in parsed):
        raise InvalidAuthenticationInfo(f"json: cannot unmarshal {value!r} into Go value of type []string")
    return tuple(parsed)


def info_from_data(data: Mapping[str, Any] | None) -> AuthenticationInfo:
    """``getClusterAuthenticationInfoFor``: what a ConfigMap's ``data`` says."""
    data = data or {}
    headers = {key: _header_list(str(data.get(key) or "")) for key in HEADER_LISTS}
    request_header = str(data.get(REQUEST_HEADER_CA_KEY) or "")
    client = str(data.get(CLIENT_CA_KEY) or "")
    return AuthenticationInfo(
        client_ca=parse_certificates(client) if client else None,
        request_header_ca=parse_certificates(request_header) if request_header else None,
        headers=headers,
    )


def _combine_certificates(
    lhs: tuple[x509.Certificate, ...] | None, rhs: tuple[x509.Certificate, ...] | None, now: dt.datetime
) -> tuple[x509.Certificate, ...] | None:
    """``combineCertLists``: both lists, unexpired, each certificate once (the first kept)."""
    combined: list[x509.Certificate] = []
    seen: set[bytes] = set()
    for certificate in (*(lhs or ()), *(rhs or ())):
        if certificate.not_valid_after_utc <= now - EXPIRY_SLACK:
            continue
        der = certificate.public_bytes(serialization.Encoding.DER)
        if der not in seen:
            seen.add(der)
            combined.append(certificate)
    return tuple(combined) or None


def _combine_lists(lhs: Sequence[str] | None, rhs: Sequence[str] | None) -> tuple[str, ...]:
    """``combineUniqueStringSlices``."""
    return tuple(dict.fromkeys([*(lhs or ()), *(rhs or ())]))


def combine(
    existing: AuthenticationInfo, required: AuthenticationInfo, now: dt.datetime
) -> AuthenticationInfo:
    """``combinedClusterAuthenticationInfo``: what the ConfigMap holds, then what this server trusts."""
    return AuthenticationInfo(
        client_ca=_combine_certificates(existing.client_ca, required.client_ca, now),
        request_header_ca=_combine_certificates(existing.request_header_ca, required.request_header_ca, now),
        headers={key: _combine_lists(existing.header(key), required.header(key)) for key in HEADER_LISTS},
    )


def _pem(certificates: Sequence[x509.Certificate]) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certificates)


def data_for(info: AuthenticationInfo) -> dict[str, str]:
    """``getConfigMapDataFor``: ``client-ca-file``, and the request-header keys only with their CA."""
    data: dict[str, str] = {}
    if info.client_ca:
        data[CLIENT_CA_KEY] = _pem(info.client_ca)
    if info.request_header_ca:
        for key in (USERNAME_HEADERS, UID_HEADERS, GROUP_HEADERS, EXTRA_HEADERS_PREFIX):
            data[key] = json.dumps(list(info.header(key) or ()), separators=(",", ":"))
        data[REQUEST_HEADER_CA_KEY] = _pem(info.request_header_ca)
        data[ALLOWED_NAMES] = json.dumps(list(info.header(ALLOWED_NAMES) or ()), separators=(",", ":"))
    return data


def wanted_data(
    current: Mapping[str, Any] | None, required: AuthenticationInfo, now: dt.datetime
) -> dict[str, str]:
    """The ``data`` the ConfigMap should have, given its ``data`` now (None: there is none);
    ``InvalidAuthenticationInfo`` if that cannot be read."""
    return data_for(combine(info_from_data(current), required, now))


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ClusterAuthenticationTrustController:
    """The hook's loop: the ConfigMap made or corrected at start, on every change to it, every minute."""

    def __init__(
        self,
        *,
        configmaps: Registry,
        cache_for: Callable[[Registry], WatchCache | None],
        client_ca: bytes,
        clock: Clock,
        now: Callable[[], dt.datetime] = _utc_now,
        resync: float = RESYNC_SECONDS,
    ) -> None:
        self.configmaps = configmaps
        self.cache_for = cache_for
        self.required = AuthenticationInfo(
            client_ca=parse_certificates(client_ca.decode()) if client_ca else None
        )
        self.clock = clock
        #: Wall-clock time, as certificates are judged by (``filterExpiredCerts``'s ``time.Now``).
        self.now = now
        self.resync = resync
        self._task: asyncio.Task[None] | None = None
        self._watcher: CacheWatcher | None = None
        self._wake = asyncio.Event()

    async def start(self) -> None:
        """Sync once, then keep it in sync until ``stop``."""
        await self.sync_logged()
        self._task = asyncio.create_task(self._run(), name=f"kube-apiserver-{HOOK}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self._forget_watcher()

    async def sync(self) -> bool:
        """``syncConfigMap``: write the ConfigMap if its data is not what it should be; whether it wrote."""
        current = await self._current()
        data = wanted_data(None if current is None else current.get("data"), self.required, self.now())
        if current is not None and (current.get("data") or {}) == data:
            return False
        if current is None:
            if not data:
                return False  # nothing to publish: upstream's write would change nothing either
            obj = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "data": data,
            }
            try:
                await self.configmaps.create(obj, NAMESPACE, scope=SCOPE)
                return True
            except errors.StatusError as error:
                if error.code != 409:  # AlreadyExists: the cache had not seen it yet; update it
                    raise

        def corrected(stored: Object) -> Object:
            stored["data"] = wanted_data(stored.get("data"), self.required, self.now())
            if not stored["data"]:
                del stored["data"]
            return stored

        await self.configmaps.update(NAMESPACE, NAME, corrected, scope=SCOPE)
        return True

    async def sync_logged(self) -> None:
        """One sync; a failure is logged (upstream's ``HandleError``) and tried again at the next look."""
        try:
            await self.sync()
        except InvalidAuthenticationInfo as error:
            logger.warning("%s/%s failed with : %s", NAMESPACE, NAME, error)
        except (errors.StatusError, StoreError) as error:
            logger.warning("%s/%s failed with : %s", NAMESPACE, NAME, error)
        except Exception:  # a bug: logged, and the loop goes on
            logger.exception("%s/%s failed", NAMESPACE, NAME)

    async def _current(self) -> Object | None:
        cache = self.cache_for(self.configmaps)
        if cache is not None and cache.ready:
            cached = cache.get(self.configmaps.key(NAMESPACE, NAME))
            return None if cached is None else cached.obj
        try:
            obj, _ = await self.configmaps.read(NAMESPACE, NAME)
        except errors.StatusError as error:
            if error.code == 404:
                return None
            raise
        return obj

    async def _run(self) -> None:
        """Look every ``resync`` seconds, and whenever the watch cache shows the ConfigMap changed."""
        waker = asyncio.create_task(self._follow(), name=f"kube-apiserver-{HOOK}-watch")
        try:
            while True:
                await self._sleep_or_wake()
                self._wake.clear()
                await self.sync_logged()
        finally:
            await cancel_and_wait(waker)

    async def _sleep_or_wake(self) -> None:
        sleep = asyncio.ensure_future(self.clock.sleep(self.resync))
        woken = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleep, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(sleep, woken)

    async def _follow(self) -> None:
        """Wake the loop for every change of the ConfigMap the watch cache sees (its informer's events)."""
        key = self.configmaps.key(NAMESPACE, NAME)
        while True:
            cache = self.cache_for(self.configmaps)
            if cache is None or not cache.ready:
                return  # no cache to follow: the minute's look is all
            self._watcher = watcher = cache.watch(NAMESPACE, None, cache.revision)
            try:
                while watcher.closed_reason is None:
                    events = await watcher.take()
                    if any(event.key == key for event in events):
                        self._wake.set()
            finally:
                self._forget_watcher()
            self._wake.set()  # the watch ended (it fell behind): look, then follow again

    def _forget_watcher(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is None:
            return
        cache = self.cache_for(self.configmaps)
        if cache is not None:
            cache.forget(watcher)
        watcher.close("stopped")


__all__ = [
    "CLIENT_CA_KEY",
    "HOOK",
    "NAME",
    "NAMESPACE",
    "AuthenticationInfo",
    "ClusterAuthenticationTrustController",
    "InvalidAuthenticationInfo",
    "combine",
    "data_for",
    "info_from_data",
    "parse_certificates",
    "wanted_data",
]
