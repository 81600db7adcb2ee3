"""Client certificates through the whole pipeline, in-process: 401s with upstream's Status, and the trace.

The in-process transport presents a ``Config``'s certificate in the ASGI TLS extension, where the API
port's TLS listener puts the one kubectl presents (``tests/clients/test_kubectl_x509.py`` does the same
over real TLS). The cluster clock is a ``ManualClock``: certificates expire when the test says so.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator, Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.apiserver.server import APIServer
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.client.transport import build_http_client
from controlplane.clock import ManualClock
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.pki import CertificateAuthority, new_ca
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.admission import WITHOUT_CONTROLLERS
from tests.support.certificates import NOW, client_pair, foreign_ca, oversized_pair, serial_of, serving_pair

CLUSTER = "test"
TOKEN = "admin-token"
ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS])
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


@dataclasses.dataclass
class Cluster:
    server: APIServer
    ca: CertificateAuthority
    clock: ManualClock
    trace: ListSink
    revoked: set[int]

    def config(self, cert_pem: str | None = None, **options: Any) -> Config:
        return Config.for_in_process(
            self.server,
            CLUSTER,
            mount_prefix=f"/clusters/{CLUSTER}",
            cert_data=cert_pem.encode() if cert_pem else None,
            qps=-1,
            **options,
        )

    def authentication(self, response: httpx.Response) -> tuple[str, str]:
        audit_id = response.headers["audit-id"]
        (stage,) = [
            e
            for e in self.trace.of_type("request.stage")
            if e["id"] == audit_id and e["stage"] == "authentication"
        ]
        return stage["outcome"], stage["detail"]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    trace = ListSink()
    clock = ManualClock(NOW.timestamp())
    ca = new_ca("kubelab-client-ca:test", now=NOW - dt.timedelta(days=30))
    revoked: set[int] = set()
    store = SqliteStore(CLUSTER, path=tmp_path / "store.sqlite3")
    await store.start()
    server = APIServer(
        CLUSTER,
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == TOKEN else None,
        clock=clock,
        trace=trace,
        client_certificates=X509Authenticator(ca.certificate, clock=clock, is_revoked=revoked.__contains__),
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    try:
        yield Cluster(server, ca, clock, trace, revoked)
    finally:
        await server.stop()
        await store.close()


async def get(config: Config, path: str = "/api/v1/namespaces") -> httpx.Response:
    async with build_http_client(config) as client:
        return await client.get(config.host + path)


async def test_a_good_certificate_authenticates_its_cn_in_its_os(cluster: Cluster) -> None:
    cert, _ = client_pair(cluster.ca, "alice", [SYSTEM_MASTERS, "teachers"])
    response = await get(cluster.config(cert))
    assert response.status_code == 200
    assert cluster.authentication(response) == ("pass", "x509 CN=alice, O=system:masters, O=teachers")
    async with RESTClient(cluster.config(cert)) as client:
        review = await client.resource("authentication.k8s.io", "v1", "selfsubjectreviews").create(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
    user = review["status"]["userInfo"]
    assert user["username"] == "alice"
    assert user["groups"] == [SYSTEM_MASTERS, "teachers", "system:authenticated"]


def expired(cluster: Cluster) -> str:
    return client_pair(cluster.ca, now=NOW - dt.timedelta(days=2), days=1)[0]


def not_yet_valid(cluster: Cluster) -> str:
    return client_pair(cluster.ca, now=NOW + dt.timedelta(days=1))[0]


def of_another_ca(cluster: Cluster) -> str:
    return client_pair(foreign_ca(), "admin", [SYSTEM_MASTERS])[0]


def revoked(cluster: Cluster) -> str:
    cert = client_pair(cluster.ca, "admin", [SYSTEM_MASTERS])[0]
    cluster.revoked.add(serial_of(cert))
    return cert


def for_servers(cluster: Cluster) -> str:
    return serving_pair(cluster.ca)[0]


def garbage(cluster: Cluster) -> str:
    return "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"


def oversized(cluster: Cluster) -> str:
    return oversized_pair(cluster.ca)[0]


REFUSALS: list[tuple[Callable[[Cluster], str], str]] = [
    (
        expired,
        "x509: certificate has expired or is not yet valid: current time 2030-01-15T12:00:00Z is after",
    ),
    (
        not_yet_valid,
        "x509: certificate has expired or is not yet valid: current time 2030-01-15T12:00:00Z is before",
    ),
    (of_another_ca, "x509: certificate signed by unknown authority"),
    (revoked, "has been revoked"),
    (for_servers, "x509: certificate specifies an incompatible key usage"),
    (garbage, "x509: malformed certificate"),
    (oversized, "is more than"),
]


@pytest.mark.parametrize(("make", "why"), REFUSALS, ids=[make.__name__ for make, _ in REFUSALS])
async def test_a_refused_certificate_is_upstreams_401_and_the_trace_says_why(
    cluster: Cluster, make: Callable[[Cluster], str], why: str
) -> None:
    response = await get(cluster.config(make(cluster)))
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    outcome, detail = cluster.authentication(response)
    assert outcome == "deny" and why in detail


async def test_a_refused_certificate_still_lets_a_good_token_through(cluster: Cluster) -> None:
    # Upstream's union authenticator collects the certificate's error and goes on to the token.
    response = await get(cluster.config(of_another_ca(cluster), bearer_token=TOKEN))
    assert response.status_code == 200
    assert cluster.authentication(response) == ("pass", "token: admin")


async def test_a_good_certificate_wins_over_a_bad_token(cluster: Cluster) -> None:
    cert, _ = client_pair(cluster.ca, "alice", [SYSTEM_MASTERS])
    response = await get(cluster.config(cert, bearer_token="nonsense"))
    assert response.status_code == 200
    assert cluster.authentication(response) == ("pass", "x509 CN=alice, O=system:masters")


async def test_with_both_refused_the_trace_gives_both_reasons(cluster: Cluster) -> None:
    response = await get(cluster.config(expired(cluster), bearer_token="nonsense"))
    assert response.status_code == 401 and response.json() == UNAUTHORIZED
    outcome, detail = cluster.authentication(response)
    assert outcome == "deny"
    assert "has expired" in detail and detail.endswith("; invalid bearer token")


async def test_no_credentials_at_all(cluster: Cluster) -> None:
    response = await get(cluster.config())
    assert response.status_code == 401 and response.json() == UNAUTHORIZED
    assert cluster.authentication(response) == ("deny", "no credentials")


async def test_a_certificate_expires_on_the_cluster_clock_in_the_middle_of_a_session(
    cluster: Cluster,
) -> None:
    cert, _ = client_pair(cluster.ca, "alice", [SYSTEM_MASTERS], days=1)
    async with RESTClient(cluster.config(cert)) as client:
        namespaces = client.resource("", "v1", "namespaces")
        assert await namespaces.get("default")
        await cluster.clock.advance(dt.timedelta(days=1, minutes=1).total_seconds())
        response = await get(cluster.config(cert))
        assert response.status_code == 401
        assert "is after 2030-01-16T12:00:00Z" in cluster.authentication(response)[1]


async def test_a_renewed_certificate_is_presented_from_the_next_request_on(cluster: Cluster) -> None:
    current = {"pem": client_pair(cluster.ca, "first", [SYSTEM_MASTERS])[0]}
    config = dataclasses.replace(cluster.config(), cert_source=lambda: current["pem"].encode())
    async with build_http_client(config) as client:
        first = await client.get(config.host + "/api/v1/namespaces")
        current["pem"] = client_pair(cluster.ca, "second", [SYSTEM_MASTERS])[0]
        second = await client.get(config.host + "/api/v1/namespaces")
    assert cluster.authentication(first) == ("pass", "x509 CN=first, O=system:masters")
    assert cluster.authentication(second) == ("pass", "x509 CN=second, O=system:masters")


@pytest.mark.parametrize(
    "extensions",
    [
        {"tls": {"client_cert_chain": "not a list"}},
        {"tls": {"client_cert_chain": [b"bytes"]}},
        {"tls": {"client_cert_chain": {"a": 1}}},
    ],
)
async def test_a_scope_with_a_strange_tls_extension_is_401_not_500(
    cluster: Cluster, extensions: dict[str, Any]
) -> None:
    messages: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        messages.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/namespaces",
        "query_string": b"",
        "headers": [],
        "extensions": extensions,
    }
    await cluster.server(scope, receive, send)
    assert messages[0]["status"] == 401


async def test_a_scope_without_any_tls_extension_has_no_certificate(cluster: Cluster) -> None:
    # What the plain-HTTP web port sends: nothing a client can write into a header makes a certificate.
    cert, _ = client_pair(cluster.ca, "alice", [SYSTEM_MASTERS])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=cluster.server), base_url="http://t"
    ) as client:
        response = await client.get(
            "/api/v1/namespaces", headers={"X-Client-Cert": cert.replace("\n", " "), "X-Remote-User": "admin"}
        )
    assert response.status_code == 401
    assert cluster.authentication(response) == ("deny", "no credentials")
