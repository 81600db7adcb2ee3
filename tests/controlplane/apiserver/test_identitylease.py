"""The API server's identity Lease: named after its host, held by this start, renewed."""

from __future__ import annotations

import re

from controlplane.apiserver.identitylease import (
    IDENTITY_LABEL,
    LEASE_DURATION_SECONDS,
    apiserver_id,
)
from tests.controlplane.apiserver.conftest import API


def test_the_id_is_upstreams_hash_of_the_host_name() -> None:
    # "apiserver-" + 26 lowercase base32 letters (16 bytes of SHA-256, no padding), the same on every
    # start of the same host, another on another host
    name = apiserver_id("control-plane")
    assert re.fullmatch(r"apiserver-[a-z2-7]{26}", name), name
    assert apiserver_id("control-plane") == name != apiserver_id("control-plane-2")


async def test_the_server_holds_its_identity_lease_in_kube_system(api: API) -> None:
    name = apiserver_id("control-plane")
    response = await api.client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    assert response.status_code == 200, response.text
    lease = response.json()
    assert lease["metadata"]["labels"] == {
        IDENTITY_LABEL: "kube-apiserver",
        "kubernetes.io/hostname": "control-plane",
    }
    holder = lease["spec"]["holderIdentity"]
    assert holder.startswith(f"{name}_") and len(holder) == len(name) + 1 + 36
    assert lease["spec"]["leaseDurationSeconds"] == LEASE_DURATION_SECONDS
    selected = await api.client.get(
        "/apis/coordination.k8s.io/v1/leases", params={"labelSelector": f"{IDENTITY_LABEL}=kube-apiserver"}
    )
    assert [item["metadata"]["name"] for item in selected.json()["items"]] == [name]


async def test_a_lease_held_by_an_earlier_start_is_taken_over_and_renewed(api: API) -> None:
    controller = api.server.identity_lease
    assert controller is not None
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{controller.name}"
    before = (await api.client.get(path)).json()
    controller.holder = f"{controller.name}_00000000-0000-0000-0000-000000000000"  # a restart
    await controller.renew()
    after = (await api.client.get(path)).json()
    assert after["spec"]["holderIdentity"] == controller.holder
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
