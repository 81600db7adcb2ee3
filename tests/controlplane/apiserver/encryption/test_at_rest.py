"""No plaintext Secret value at rest, on every store backend: the raw SQLite file, PostgreSQL's rows,
etcd's keys read through its own gateway."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import httpx
import pytest
from psycopg import sql

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.encryption import config
from controlplane.apiserver.encryption.clusterfile import default_configuration
from controlplane.apiserver.server import APIServer
from controlplane.store import Store
from tests.support.apiserver import ADMIN, TOKEN
from tests.support.stores import BACKENDS, make_store

SECRETS = "/api/v1/namespaces/default/secrets"


def needles(value: str) -> list[bytes]:
    """A value as it could appear at rest: raw, or base64 as a Secret's ``data`` holds it."""
    raw = value.encode()
    return [raw, base64.b64encode(raw), base64.b64encode(raw).rstrip(b"=")]


async def raw_bytes(store: Store, backend: str) -> bytes:
    """Everything the backend holds, as it holds it (not through Kubelab's read path)."""
    if backend == "sqlite":
        path = Path(store.path)  # type: ignore[attr-defined]
        return b"".join(p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name))
    if backend == "postgres":
        from tests.support import postgres

        conn = await postgres.connect()
        async with conn:
            query = sql.SQL("SELECT key, value FROM {}.kv").format(sql.Identifier(store.schema))  # type: ignore[attr-defined]
            rows = await (await conn.execute(query)).fetchall()
        return b"\n".join(str(k).encode() + b"=" + bytes(v) for k, v in rows)
    endpoint = store.endpoint  # type: ignore[attr-defined]
    async with httpx.AsyncClient(trust_env=False) as client:
        everything = {"key": base64.b64encode(b"\0").decode(), "range_end": base64.b64encode(b"\0").decode()}
        kvs = (await client.post(f"{endpoint}/v3/kv/range", json=everything)).json().get("kvs", [])
    return b"\n".join(
        base64.b64decode(kv["key"]) + b"=" + base64.b64decode(kv.get("value", "")) for kv in kvs
    )


@pytest.mark.parametrize(
    "backend",
    [pytest.param(b, marks=[getattr(pytest.mark, b)] if b != "sqlite" else [], id=b) for b in BACKENDS],
)
async def test_no_secret_value_is_anywhere_in_the_store(backend: str) -> None:
    values = {name: f"at-rest-{name}-{os.urandom(12).hex()}" for name in ("data", "string", "updated")}
    async with make_store(backend) as store:
        server = APIServer(
            "test",
            store,
            resource_types=builtin_types(),
            tokens=lambda token: ADMIN if token == TOKEN else None,
            encryption=config.build(default_configuration("aescbc")),
        )
        await server.start()
        try:
            transport = httpx.ASGITransport(app=server)
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as client:
                encoded = base64.b64encode(values["data"].encode()).decode()
                for name, body in (
                    ("one", {"data": {"password": encoded}}),
                    ("two", {"stringData": {"token": values["string"]}}),
                ):
                    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **body}
                    assert (await client.post(SECRETS, json=secret)).status_code == 201
                patch = {"stringData": {"token": values["updated"]}}
                patched = await client.patch(
                    f"{SECRETS}/two", json=patch, headers={"Content-Type": "application/merge-patch+json"}
                )
                assert patched.status_code == 200
                got = (await client.get(f"{SECRETS}/two")).json()
                assert base64.b64decode(got["data"]["token"]).decode() == values["updated"]
            page = await store.range("/registry/secrets/")
            assert [kv.key for kv in page.kvs] == [
                "/registry/secrets/default/one",
                "/registry/secrets/default/two",
            ]
            assert all(kv.value.startswith(b"k8s:enc:aescbc:v1:key1:") for kv in page.kvs)
            at_rest = await raw_bytes(store, backend)
            assert b"/registry/secrets/default/one" in at_rest  # the keys stay plaintext, as upstream
            for value in values.values():
                for needle in needles(value):
                    assert needle not in at_rest, f"{needle!r} found in the {backend} store"
        finally:
            await server.stop()
