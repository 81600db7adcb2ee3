"""A running cluster reloads its encryption configuration file when it changes, and keeps the last
good one when the new file does not load (kube-apiserver's automatic reload)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import httpx
import pytest

from controlplane.apiserver.encryption import rotation
from controlplane.runtime import Lab, LabConfig, cluster_dir, is_served


async def test_a_changed_file_is_reloaded_and_a_broken_one_ignored(tmp_path: Path) -> None:
    lab = Lab(LabConfig(data_dir=tmp_path, components=(), nodes=0, encryption_provider="aesgcm"))
    await lab.start()
    cluster = lab.cluster("demo")
    try:
        assert is_served(cluster_dir(tmp_path, "demo"))
        server = cluster.apiserver
        assert server is not None
        token = cluster.tokens.issue("admin", ["system:masters"])
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=server),
            base_url="http://demo",
            headers={"Authorization": f"Bearer {token}"},
        )

        async def create(name: str) -> bytes:
            value = base64.b64encode(os.urandom(8)).decode()
            body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"k": value}}
            assert (await client.post("/api/v1/namespaces/default/secrets", json=body)).status_code == 201
            kv = await cluster.store.get(f"/registry/secrets/default/{name}")
            assert kv is not None
            return kv.value

        async with client:
            assert (await create("first")).startswith(b"k8s:enc:aesgcm:v1:key1:")
            assert not await cluster.reload_encryption()  # unchanged
            cluster.encryption_file.update(lambda c: rotation.add_key(c, provider="secretbox")[0])
            cluster.encryption_file.update(lambda c: rotation.promote_key(c, "key2"))
            assert await cluster.reload_encryption()
            assert (await create("second")).startswith(b"k8s:enc:secretbox:v1:key2:")
            cluster.encryption_file.path.write_text("resources: [not, an, EncryptionConfiguration]\n")
            assert not await cluster.reload_encryption()  # logged; the last good one stays
            assert (await create("third")).startswith(b"k8s:enc:secretbox:v1:key2:")
            for name in ("first", "second", "third"):
                got = await client.get(f"/api/v1/namespaces/default/secrets/{name}")
                assert got.status_code == 200
    finally:
        await lab.stop()
    assert not is_served(cluster_dir(tmp_path, "demo"))


def test_an_unknown_default_provider_is_refused() -> None:
    from controlplane.apiserver.encryption.clusterfile import default_configuration

    with pytest.raises(ValueError, match="unknown encryption provider 'rot13'"):
        default_configuration("rot13")
