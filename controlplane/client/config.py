"""Client configuration: where the API server is, how to trust it, who we are, and how fast we may go.

client-go's ``rest.Config`` holds everything a client needs to reach an API server: the server URL
(``Host``), how to check the server's certificate (``CAData``), the credential (``BearerToken``), a
``UserAgent`` naming the program, and the client-side rate limit (``QPS`` 5, ``Burst`` 10: a client
may make 10 requests at once and then 5 a second). kubectl builds one from a kubeconfig file; a
component built into the cluster gets one from its runtime.

Kubelab has two ways to reach a cluster's API server, and one ``Config`` for both:

- over the network: ``https://127.0.0.1:6443/clusters/demo``, the cluster CA and a bearer token or a
  client certificate, exactly like kubectl (``Config.from_kubeconfig`` reads a kubeconfig);
- in-process: the same ASGI application the network port serves, called directly without a socket
  (``Config.in_process``). The request still passes every stage of the API server's pipeline
  (authentication, authorization, admission ...), with the same credential, so the trace cannot tell
  the two apart. The base URL is then ``http://inprocess/clusters/<name>``: if ``app`` is the whole
  router it receives that path unchanged; if ``app`` is one cluster's API server, ``mount_prefix``
  (``/clusters/<name>``) is stripped first, as the router would. A client certificate travels in the
  ASGI scope, where a TLS server puts the one its client presented (``cert_data``, or ``cert_source``
  for one that is renewed while the client runs).

The clock is part of the configuration too: a component's rate limiter and retry waits run on its
cluster's clock, so a cluster running ten times faster also throttles ten times faster.
"""

from __future__ import annotations

import base64
import platform
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.client.clientmetrics import RequestMetrics
from controlplane.clock import SYSTEM_CLOCK, Clock

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
#: An ASGI application (the cluster router, or one cluster's API server).
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

#: rest.Config defaults (client-go ``rest/config.go``: DefaultQPS, DefaultBurst).
DEFAULT_QPS = 5.0
DEFAULT_BURST = 10
#: client-go retries a request the server answered with 429/5xx and ``Retry-After`` this many times.
DEFAULT_MAX_RETRIES = 10
#: The host name of the in-process transport's base URL (no DNS involved: nothing leaves the process).
IN_PROCESS_HOST = "inprocess"


def default_user_agent(program: str = "kubelab-client", version: str = "v0.1.0") -> str:
    """client-go's ``DefaultKubernetesUserAgent`` shape: ``<program>/<version> (<os>/<arch>) kubelab``."""
    return f"{program}/{version} ({platform.system().lower()}/{platform.machine().lower()}) kubelab"


@dataclass(frozen=True, kw_only=True)
class Config:
    """How to reach one cluster's API server (client-go ``rest.Config``)."""

    #: The server URL, with the cluster path: ``https://127.0.0.1:6443/clusters/demo``.
    host: str
    bearer_token: str | None = None
    #: The client certificate (PEM: the certificate, then any intermediates) and its private key (PEM):
    #: a kubeconfig's ``client-certificate-data`` and ``client-key-data`` (client-go ``CertData``,
    #: ``KeyData``). Over HTTPS the TLS handshake presents it; in-process it rides in the ASGI scope.
    cert_data: bytes | None = None
    key_data: bytes | None = None
    #: In-process only: returns the current client certificate (PEM) for each request, for a credential
    #: renewed while the client runs (client-go's ``TLS.GetCert``, which the kubelet's certificate
    #: manager uses to rotate its certificate). Takes precedence over ``cert_data``.
    cert_source: Callable[[], bytes] | None = None
    #: PEM of the CA that signed the server's certificate (``certificate-authority-data``, decoded).
    ca_data: bytes | None = None
    #: Skip verifying the server's certificate (kubeconfig ``insecure-skip-tls-verify``).
    insecure: bool = False
    user_agent: str = field(default_factory=default_user_agent)
    #: Client-side rate limit: ``qps`` requests a second after a ``burst``; 0 means the default
    #: (5/10), a negative qps turns the limiter off (as client-go).
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    #: Seconds before a (non-watch) request gives up; None waits as long as it takes (client-go's 0).
    timeout: float | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    #: For the in-process transport: the ASGI application to call instead of opening a connection.
    app: ASGIApp | None = None
    #: For the in-process transport: the path prefix ``app`` is mounted at ("" if ``app`` is the router).
    mount_prefix: str = ""
    #: Extra headers the in-process transport puts on every request (they override the request's own).
    identity_headers: Mapping[str, str] = field(default_factory=dict)
    #: The cluster clock the rate limiter and the retry waits use.
    clock: Clock = SYSTEM_CLOCK
    #: Where the client reports each request's result (``rest_client_requests_total``); None: nowhere.
    request_metrics: RequestMetrics | None = None

    @property
    def in_process(self) -> bool:
        return self.app is not None

    @classmethod
    def for_in_process(
        cls,
        app: ASGIApp,
        cluster: str,
        *,
        mount_prefix: str = "",
        **options: Any,
    ) -> Config:
        """A config calling ``app`` directly, at ``http://inprocess/clusters/<cluster>``.

        Pass ``mount_prefix=f"/clusters/{cluster}"`` when ``app`` is the cluster's API server itself
        rather than the router that mounts every cluster's API server under ``/clusters/<name>/``.
        """
        return cls(
            host=f"http://{IN_PROCESS_HOST}/clusters/{cluster}", app=app, mount_prefix=mount_prefix, **options
        )

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: Path | str | Mapping[str, Any], *, context: str | None = None, **options: Any
    ) -> Config:
        """A config from a kubeconfig (a path or the parsed document): server, CA and bearer token.

        Only what Kubelab's kubeconfigs contain is read: ``server``, ``certificate-authority(-data)``,
        ``insecure-skip-tls-verify``, ``token``, ``tokenFile`` and ``client-certificate(-data)`` with
        ``client-key(-data)``. ``options`` override the result.
        """
        base = Path(".")
        if isinstance(kubeconfig, Mapping):
            document: Mapping[str, Any] = kubeconfig
        else:
            path = Path(kubeconfig)
            base = path.parent
            loaded = yaml.safe_load(path.read_text())
            if not isinstance(loaded, Mapping):
                raise ValueError(f"{path}: not a kubeconfig")
            document = loaded
        context_name = context or document.get("current-context")
        ctx = _named(document, "contexts", context_name, "context") if context_name else {}
        if not ctx:
            contexts = document.get("contexts") or []
            if len(contexts) != 1:
                raise ValueError("the kubeconfig has no current-context; name one")
            ctx = contexts[0].get("context") or {}
        cluster = _named(document, "clusters", ctx.get("cluster"), "cluster")
        user = _named(document, "users", ctx.get("user"), "user") if ctx.get("user") else {}
        ca_data: bytes | None = None
        if cluster.get("certificate-authority-data"):
            ca_data = base64.b64decode(cluster["certificate-authority-data"])
        elif cluster.get("certificate-authority"):
            ca_data = (base / cluster["certificate-authority"]).read_bytes()
        token = user.get("token")
        if not token and user.get("tokenFile"):
            token = (base / user["tokenFile"]).read_text().strip()
        values: dict[str, Any] = {
            "host": str(cluster["server"]).rstrip("/"),
            "ca_data": ca_data,
            "insecure": bool(cluster.get("insecure-skip-tls-verify", False)),
            "bearer_token": token or None,
            "cert_data": _data_or_file(user, "client-certificate", base),
            "key_data": _data_or_file(user, "client-key", base),
        }
        values.update(options)
        return cls(**values)


def _data_or_file(entry: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    """``<key>-data`` (base64) or the file ``<key>`` names (relative to the kubeconfig), or None."""
    if entry.get(f"{key}-data"):
        return base64.b64decode(str(entry[f"{key}-data"]))
    if entry.get(key):
        return (base / str(entry[key])).read_bytes()
    return None


def _named(document: Mapping[str, Any], section: str, name: object, key: str) -> dict[str, Any]:
    for entry in document.get(section) or []:
        if entry.get("name") == name:
            value = entry.get(key) or {}
            return dict(value)
    raise ValueError(f"the kubeconfig has no {key} named {name!r}")


__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_QPS",
    "IN_PROCESS_HOST",
    "ASGIApp",
    "Config",
    "default_user_agent",
]
