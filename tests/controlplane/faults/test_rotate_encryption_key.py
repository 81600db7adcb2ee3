"""rotate-encryption-key: a new key first in the provider list, the API server reloaded, and every
Secret replaced unchanged, so each is stored under the new key's prefix and none is lost.

Upstream: "Encrypting Confidential Data at Rest", *Rotate a decryption key*; the rewrite is
``kubectl get secrets -A -o json | kubectl replace -f -``, which the API server writes although
nothing changed because the stored value is stale (k8s.io/apiserver pkg/storage/etcd3/store.go).
"""

from __future__ import annotations

import base64

import pytest

from controlplane.api.meta import Object
from controlplane.apiserver.encryption import rotation
from controlplane.apiserver.encryption.clusterfile import default_configuration
from controlplane.faults.book import Outcome
from controlplane.faults.catalogue import InvalidFault, check
from controlplane.faults.encryptionkey import LAB_USER, RotateEncryptionKey, rotate
from tests.controlplane.faults.conftest import Running

SECRETS = "/registry/secrets/"


def secret(name: str, namespace: str, value: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"password": base64.b64encode(value.encode()).decode()},
    }


def test_the_new_key_goes_first_and_the_old_one_stays() -> None:
    rotated = rotate(default_configuration("aescbc"))
    providers = rotated.resources[rotation.entry_index(rotated, "secrets")].providers
    assert [k.name for k in providers[0].keys] == ["key2", "key1"]
    assert rotation.writing_key(rotated) == "aescbc:key2"
    with pytest.raises(rotation.NoEncryptingProvider):
        rotate(default_configuration("identity"))


def test_it_happens_at_once() -> None:
    spec = check("rotate-encryption-key", {})
    assert spec.definition.lasting is False and spec.target == "apiserver"
    with pytest.raises(InvalidFault, match="at once"):
        check("rotate-encryption-key", {}, clearing=True)


async def test_every_secret_is_written_again_with_the_new_key(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    await running.admin.resource("", "v1", "namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    )
    written = {
        ("default", "db"): await running.admin.resource("", "v1", "secrets", "default").create(
            secret("db", "default", "s3cret")
        ),
        ("shop", "api"): await running.admin.resource("", "v1", "secrets", "shop").create(
            secret("api", "shop", "t0ken")
        ),
    }
    before = await rotation.stored_values(cluster.store, SECRETS)
    assert set(rotation.count_labels(before)) == {"aescbc:key1"}
    start = len(trace.events)

    applied = await running.faults.apply(cluster.name, "rotate-encryption-key", reason="test")

    assert applied.outcome is Outcome.APPLIED
    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert (on["target"], off["reason"]) == ("apiserver", "done")
    assert running.faults.in_force(cluster.name) == []
    # Every Secret (ours and the cluster's own) is now stored under the new key's prefix.
    after = await rotation.stored_values(cluster.store, SECRETS)
    assert rotation.count_labels(after) == {"aescbc:key2": len(before)}
    assert all(kv.value.startswith(b"k8s:enc:aescbc:v1:key2:") for kv in after)
    effect = running.faults.effects["rotate-encryption-key"]
    assert isinstance(effect, RotateEncryptionKey)
    assert effect.last[cluster.name].key == "aescbc:key2"
    assert effect.last[cluster.name].replaced == len(before)
    # Written through the API server, one replace (PUT) each, on the trace as any client's.
    replaces = [
        e
        for e in trace.events[start : trace.index(off)]
        if e["type"] == "request.completed"
        and e.get("verb") == "update"
        and e.get("resource") == "secrets"
        and e.get("user") == LAB_USER
    ]
    assert len(replaces) == len(before) and {e["code"] for e in replaces} == {200}
    # The old key still decrypts (nothing uses it now), the new one writes.
    configuration = cluster.encryption_file.read()
    assert rotation.writing_key(configuration) == "aescbc:key2"
    keys = configuration.resources[rotation.entry_index(configuration)].providers[0].keys
    assert [k.name for k in keys] == ["key2", "key1"]
    # Nothing acknowledged is lost: each Secret reads back as written, at a new resourceVersion.
    for (namespace, name), created in written.items():
        read = await running.admin.resource("", "v1", "secrets", namespace).get(name)
        assert read["data"] == created["data"]
        assert read["metadata"]["uid"] == created["metadata"]["uid"]
        assert read["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

    # A second rotation moves everything to a third key.
    await running.faults.apply(cluster.name, "rotate-encryption-key")
    again = await rotation.stored_values(cluster.store, SECRETS)
    assert rotation.count_labels(again) == {"aescbc:key3": len(before)}
