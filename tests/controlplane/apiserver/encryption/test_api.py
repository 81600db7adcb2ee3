"""Encryption at rest through the API server: ciphertext in the store, plaintext to clients, upstream's
500 for values nobody can read, and key rotation end to end."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from controlplane.apiserver.encryption import config, rotation
from controlplane.apiserver.encryption.clusterfile import default_configuration
from controlplane.store import Put, Txn
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.controlplane.apiserver.conftest import API
from tests.support.apiserver import admin_api

SECRETS = "/api/v1/namespaces/default/secrets"
VALUE = "s3cr3t-value-for-the-test"


def secret(name: str, value: str = VALUE) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": {"password": base64.b64encode(value.encode()).decode()},
    }


@dataclass
class EncryptedAPI(API):
    #: The configuration the server started with (a new cluster's default: aescbc key1, identity).
    configuration: config.EncryptionConfiguration = field(default_factory=config.EncryptionConfiguration)


@pytest.fixture
async def encrypted(tmp_path: Path) -> AsyncIterator[EncryptedAPI]:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    configuration = default_configuration("aescbc")
    try:
        async with admin_api(store, encryption=config.build(configuration), admission_options=None) as (
            server,
            client,
        ):
            yield EncryptedAPI(server, store, client, ListSink(), configuration)
    finally:
        await store.close()


async def raw(api: API, name: str) -> bytes:
    kv = await api.store.get(f"/registry/secrets/default/{name}")
    assert kv is not None
    return kv.value


async def test_a_secret_is_ciphertext_in_the_store_and_plaintext_to_clients(encrypted: API) -> None:
    created = await encrypted.client.post(SECRETS, json=secret("db"))
    assert created.status_code == 201
    stored = await raw(encrypted, "db")
    assert stored.startswith(b"k8s:enc:aescbc:v1:key1:")
    assert VALUE.encode() not in stored and base64.b64encode(VALUE.encode()) not in stored
    for path in (f"{SECRETS}/db", f"{SECRETS}/db?resourceVersion=0"):  # from the store and the cache
        got = (await encrypted.client.get(path)).json()
        assert base64.b64decode(got["data"]["password"]).decode() == VALUE
    listed = (await encrypted.client.get(SECRETS)).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["db"]
    # Other resources stay plaintext JSON.
    await encrypted.client.post(
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}},
    )
    kv = await encrypted.store.get("/registry/configmaps/default/c")
    assert kv is not None and kv.value.startswith(b"{")


async def test_an_undecryptable_value_answers_upstreams_500_naming_the_key_and_loses_nothing(
    encrypted: API,
) -> None:
    await encrypted.client.post(SECRETS, json=secret("good"))
    await encrypted.client.post(SECRETS, json=secret("bad"))
    stored = await raw(encrypted, "bad")
    corrupted = stored[:-5] + bytes(b ^ 0xFF for b in stored[-5:])
    key = "/registry/secrets/default/bad"
    await encrypted.store.txn(Txn(success=(Put(key, corrupted),)))
    revision = await encrypted.store.current_revision()
    for path in (f"{SECRETS}/bad", f"{SECRETS}/bad?resourceVersion={revision}", SECRETS):
        response = await encrypted.client.get(path)
        assert response.status_code == 500, path
        status = response.json()
        assert status["kind"] == "Status" and status["reason"] == "InternalError"
        assert status["message"].startswith(f'Internal error occurred: unable to transform key "{key}": ')
        assert "Traceback" not in response.text
    assert (await encrypted.client.get(f"{SECRETS}/good")).status_code == 200
    assert (await raw(encrypted, "bad")) == corrupted  # still there, untouched
    # Restoring a readable value makes it readable again, through the cache too.
    await encrypted.store.txn(Txn(success=(Put(key, stored),)))
    revision = await encrypted.store.current_revision()
    assert (await encrypted.client.get(f"{SECRETS}/bad?resourceVersion={revision}")).status_code == 200
    assert len((await encrypted.client.get(SECRETS)).json()["items"]) == 2


async def test_a_value_of_a_removed_key_is_unreadable_until_the_key_is_back(encrypted: API) -> None:
    before = encrypted.server.encryption
    await encrypted.client.post(SECRETS, json=secret("db"))
    encrypted.server.set_encryption(config.build(default_configuration("aesgcm")))
    # The watch cache still holds the object it decrypted before (as upstream's cacher does); a read
    # from the store (a paged list) finds a value no provider can read.
    response = await encrypted.client.get(f"{SECRETS}?limit=10")
    assert response.status_code == 500
    assert response.json()["message"] == (
        'Internal error occurred: unable to transform key "/registry/secrets/default/db": '
        "no matching prefix found"
    )
    encrypted.server.set_encryption(before)
    assert (await encrypted.client.get(f"{SECRETS}?limit=10")).status_code == 200


async def test_rotation_end_to_end_add_promote_rewrite_remove(encrypted: EncryptedAPI) -> None:
    for name in ("a", "b", "c"):
        await encrypted.client.post(SECRETS, json=secret(name, f"{VALUE}-{name}"))
    configuration = encrypted.configuration
    configuration, key2 = rotation.add_key(configuration)
    assert key2.name == "key2"
    encrypted.server.set_encryption(config.build(configuration))
    await encrypted.client.post(SECRETS, json=secret("d"))
    assert (await raw(encrypted, "d")).startswith(b"k8s:enc:aescbc:v1:key1:")  # added, not yet writing
    configuration = rotation.promote_key(configuration, "key2")
    assert rotation.writing_key(configuration) == "aescbc:key2"
    transformers = config.build(configuration)
    encrypted.server.set_encryption(transformers)
    # An update that changes nothing still rewrites a stale value (what `kubectl replace` relies on) ...
    current = (await encrypted.client.get(f"{SECRETS}/a")).json()
    replaced = (await encrypted.client.put(f"{SECRETS}/a", json=current)).json()
    assert replaced["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]
    assert (await raw(encrypted, "a")).startswith(b"k8s:enc:aescbc:v1:key2:")
    # ... and not a current one.
    again = (await encrypted.client.put(f"{SECRETS}/a", json=replaced)).json()
    assert again["metadata"]["resourceVersion"] == replaced["metadata"]["resourceVersion"]
    transformer = transformers.for_resource("", "secrets")
    assert transformer is not None
    report = await rotation.rewrite(encrypted.store, "/registry/secrets/", transformer)
    assert (report.rewritten, report.current, report.unreadable) == (3, 1, [])
    values = await rotation.stored_values(encrypted.store, "/registry/secrets/")
    assert rotation.count_labels(values) == {"aescbc:key2": 4}
    with pytest.raises(rotation.KeyStillWrites):
        rotation.remove_key(configuration, "key2")
    configuration = rotation.remove_key(configuration, "key1")
    encrypted.server.set_encryption(config.build(configuration))
    for name in ("a", "b", "c", "d"):
        got = await encrypted.client.get(f"{SECRETS}/{name}")
        assert got.status_code == 200
    assert (await encrypted.client.get(f"{SECRETS}/b")).json()["data"]["password"] == base64.b64encode(
        f"{VALUE}-b".encode()
    ).decode()
