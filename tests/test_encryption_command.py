"""``manage.py encryption``: status, and upstream's rotation (add, promote, rewrite, remove), lab stopped."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import override_settings

from controlplane.runtime import Lab, LabConfig, cluster_dir
from controlplane.store.factory import store_path
from controlplane.store.sqlite import read_latest

VALUE = "rotate-me-" + base64.b32encode(os.urandom(10)).decode()


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


async def _with_cluster(data_dir: Path, *, create: list[str], read: list[str]) -> dict[str, str]:
    """Start the lab's demo cluster, create Secrets, read Secrets back (their password), stop it."""
    lab = Lab(LabConfig(data_dir=data_dir, components=(), nodes=0))
    await lab.start()
    try:
        server = lab.cluster("demo").apiserver
        assert server is not None
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=server), base_url="http://demo")
        token = lab.cluster("demo").tokens.issue("admin", ["system:masters"])
        client.headers["Authorization"] = f"Bearer {token}"
        async with client:
            for name in create:
                body = {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name},
                    "stringData": {"password": VALUE},
                }
                assert (await client.post("/api/v1/namespaces/default/secrets", json=body)).status_code == 201
            read_back = {}
            for name in read:
                got = await client.get(f"/api/v1/namespaces/default/secrets/{name}")
                assert got.status_code == 200, got.text
                read_back[name] = base64.b64decode(got.json()["data"]["password"]).decode()
            return read_back
    finally:
        await lab.stop()


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    with override_settings(KUBELAB_DATA_DIR=tmp_path, KUBELAB_STORE="sqlite"):
        yield tmp_path


def labels(data_dir: Path) -> list[bytes]:
    return [kv.value[:23] for kv in read_latest(store_path(data_dir, "demo"), "/registry/secrets/")]


def test_a_new_cluster_encrypts_secrets_with_aescbc_and_a_private_key_file(data_dir: Path) -> None:
    asyncio.run(_with_cluster(data_dir, create=["db"], read=[]))
    path = cluster_dir(data_dir, "demo") / "encryption-config.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    document = yaml.safe_load(path.read_text())
    providers = document["resources"][0]["providers"]
    assert document["resources"][0]["resources"] == ["secrets"]
    assert [next(iter(p)) for p in providers] == ["aescbc", "identity"]
    assert len(base64.b64decode(providers[0]["aescbc"]["keys"][0]["secret"])) == 32
    said = run("encryption", "--cluster", "demo", "status")
    assert "writes aescbc keys key1" in said and "reads  identity" in said
    assert "stored secrets: 1 by aescbc:key1" in said


def test_rotation_step_by_step_then_in_one_go(data_dir: Path) -> None:
    asyncio.run(_with_cluster(data_dir, create=["a", "b"], read=[]))
    assert "added key key2" in run("encryption", "--cluster", "demo", "add-key")
    assert "aescbc:key2 now encrypts new writes" in run(
        "encryption", "--cluster", "demo", "promote", "--key", "key2"
    )
    with pytest.raises(CommandError, match="key 'key1' still encrypts 2 secrets: rewrite first"):
        run("encryption", "--cluster", "demo", "remove-key", "--key", "key1")
    assert "secrets: rewrote 2, 0 were current" in run("encryption", "--cluster", "demo", "rewrite")
    assert all(v.startswith(b"k8s:enc:aescbc:v1:key2:") for v in labels(data_dir))
    with pytest.raises(CommandError, match="encrypts new writes of secrets: promote another key first"):
        run("encryption", "--cluster", "demo", "remove-key", "--key", "key2")
    run("encryption", "--cluster", "demo", "remove-key", "--key", "key1")
    assert asyncio.run(_with_cluster(data_dir, create=["c"], read=["a", "b"])) == {"a": VALUE, "b": VALUE}
    said = run("encryption", "--cluster", "demo", "rotate")
    assert "added key key3" in said and "rewrote 3" in said and "removed key key2" in said
    assert all(v.startswith(b"k8s:enc:aescbc:v1:key3:") for v in labels(data_dir))
    assert asyncio.run(_with_cluster(data_dir, create=[], read=["a", "c"])) == {"a": VALUE, "c": VALUE}


def test_switching_provider_and_bad_requests_are_refused_cleanly(data_dir: Path) -> None:
    asyncio.run(_with_cluster(data_dir, create=["a"], read=[]))
    run("encryption", "--cluster", "demo", "add-key", "--provider", "secretbox", "--key", "box")
    run("encryption", "--cluster", "demo", "promote", "--key", "box")
    run("encryption", "--cluster", "demo", "rewrite")
    assert labels(data_dir) == [b"k8s:enc:secretbox:v1:box"[:23]]
    with pytest.raises(CommandError, match="no provider of secrets has a key named 'nope'"):
        run("encryption", "--cluster", "demo", "promote", "--key", "nope")
    with pytest.raises(CommandError, match="unknown cluster"):
        run("encryption", "--cluster", "other", "status")
    assert asyncio.run(_with_cluster(data_dir, create=[], read=["a"])) == {"a": VALUE}
