"""kube-system/extension-apiserver-authentication: the API server publishes its client CA there, merged
with what the ConfigMap holds (upstream's union), at its start, whenever the ConfigMap changes, and
once a minute; no request-header keys without a request-header CA; unreadable contents left alone."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.apiserver.clusterauthenticationtrust import (
    AuthenticationInfo,
    InvalidAuthenticationInfo,
    combine,
    data_for,
    info_from_data,
    parse_certificates,
    wanted_data,
)
from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.clock import SYSTEM_CLOCK
from controlplane.pki import CertificateAuthority, new_ca
from controlplane.store.sqlite import SqliteStore
from tests.support.apiserver import admin_api

NOW = dt.datetime(2026, 12, 3, 8, 0, tzinfo=dt.UTC)
PATH = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


def ca(name: str, *, days: int = 3650, now: dt.datetime = NOW) -> CertificateAuthority:
    return new_ca(name, now=now, days=days)


CLUSTER_CA = ca("kubernetes")
OTHER_CA = ca("another-apiserver")
FRONT_PROXY_CA = ca("front-proxy-ca")


def pem(authority: CertificateAuthority) -> str:
    return authority.certificate_pem.decode()


def required(*authorities: CertificateAuthority) -> AuthenticationInfo:
    return AuthenticationInfo(client_ca=parse_certificates("".join(pem(a) for a in authorities)))


def test_a_server_with_a_client_ca_and_no_front_proxy_writes_client_ca_file_only() -> None:
    assert wanted_data(None, required(CLUSTER_CA), NOW) == {"client-ca-file": pem(CLUSTER_CA)}
    assert wanted_data(None, AuthenticationInfo(), NOW) == {}


def test_what_the_configmap_holds_is_kept_first_each_certificate_once() -> None:
    existing = {"client-ca-file": pem(OTHER_CA) + pem(CLUSTER_CA)}
    assert wanted_data(existing, required(CLUSTER_CA), NOW) == {
        "client-ca-file": pem(OTHER_CA) + pem(CLUSTER_CA)
    }
    assert wanted_data({"client-ca-file": pem(OTHER_CA)}, required(CLUSTER_CA), NOW) == {
        "client-ca-file": pem(OTHER_CA) + pem(CLUSTER_CA)
    }


def test_certificates_expired_more_than_five_minutes_ago_are_dropped() -> None:
    old = ca("expired", days=1, now=NOW - dt.timedelta(days=2))
    recent = ca("just-expired", days=1, now=NOW - dt.timedelta(days=1, minutes=2))
    data = wanted_data({"client-ca-file": pem(old) + pem(recent)}, required(CLUSTER_CA), NOW)
    assert data == {"client-ca-file": pem(recent) + pem(CLUSTER_CA)}


def test_request_header_keys_come_only_with_a_request_header_ca() -> None:
    existing = {
        "requestheader-client-ca-file": pem(FRONT_PROXY_CA),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    data = data_for(combine(info_from_data(existing), required(CLUSTER_CA), NOW))
    assert data == {
        "client-ca-file": pem(CLUSTER_CA),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-client-ca-file": pem(FRONT_PROXY_CA),
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-uid-headers": "[]",
        "requestheader-username-headers": '["X-Remote-User"]',
    }
    headers_only = {"requestheader-username-headers": '["X-Remote-User"]'}
    assert wanted_data(headers_only, required(CLUSTER_CA), NOW) == {"client-ca-file": pem(CLUSTER_CA)}


@pytest.mark.parametrize(
    "data",
    [
        {"client-ca-file": "not a certificate"},
        {"requestheader-client-ca-file": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
        {"requestheader-group-headers": "X-Remote-Group"},
        {"requestheader-allowed-names": '{"a": 1}'},
    ],
    ids=["no certificate", "a block that is no certificate", "a list that is no JSON", "no array"],
)
def test_contents_that_do_not_parse_are_an_error(data: dict[str, str]) -> None:
    with pytest.raises(InvalidAuthenticationInfo):
        wanted_data(data, required(CLUSTER_CA), NOW)


# -- in the API server -------------------------------------------------------------------------------


async def eventually(client: httpx.AsyncClient, check: Any, seconds: float = 5.0) -> Any:
    async with asyncio.timeout(seconds):
        while True:
            response = await client.get(PATH)
            if check(response):
                return response
            await asyncio.sleep(0.02)


async def test_the_api_server_publishes_its_client_ca_and_keeps_it_there(tmp_path: Path) -> None:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    x509 = X509Authenticator(CLUSTER_CA.certificate, clock=SYSTEM_CLOCK)
    try:
        async with admin_api(store, client_certificates=x509) as (_, client):
            first = (await client.get(PATH)).json()
            assert first["data"] == {"client-ca-file": pem(CLUSTER_CA)}, "written before the server is ready"
            assert set(first["metadata"]) >= {"name", "namespace", "uid", "resourceVersion"}
            assert "labels" not in first["metadata"] and "annotations" not in first["metadata"]

            assert (await client.delete(PATH)).status_code == 200
            back = await eventually(client, lambda r: r.status_code == 200)
            assert back.json()["data"] == {"client-ca-file": pem(CLUSTER_CA)}

            # Another API server's CA, added: kept, and this server's stays.
            both = {"data": {"client-ca-file": pem(OTHER_CA) + pem(CLUSTER_CA)}}
            headers = {"Content-Type": "application/merge-patch+json"}
            assert (await client.patch(PATH, json=both, headers=headers)).status_code == 200
            # This server's CA removed: put back, after what is there.
            only_other = {"data": {"client-ca-file": pem(OTHER_CA)}}
            assert (await client.patch(PATH, json=only_other, headers=headers)).status_code == 200
            await eventually(
                client, lambda r: r.json()["data"] == {"client-ca-file": pem(OTHER_CA) + pem(CLUSTER_CA)}
            )
            settled = (await client.get(PATH)).json()
        async with admin_api(store, client_certificates=x509) as (_, client):  # a restart writes nothing
            again = (await client.get(PATH)).json()
            assert again["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"]
            # Contents it cannot read: left as they are (upstream's sync fails, and fails again).
            garbage = {"data": {"client-ca-file": "garbage"}}
            edited = await client.patch(PATH, json=garbage, headers=headers)
            await asyncio.sleep(0.2)
            kept = (await client.get(PATH)).json()
            assert kept["data"] == {"client-ca-file": "garbage"}
            assert kept["metadata"]["resourceVersion"] == edited.json()["metadata"]["resourceVersion"]
    finally:
        await store.close()


async def test_a_server_without_a_client_ca_publishes_nothing(tmp_path: Path) -> None:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        async with admin_api(store) as (server, client):
            assert server.authentication_trust is None
            assert (await client.get(PATH)).status_code == 404
    finally:
        await store.close()
