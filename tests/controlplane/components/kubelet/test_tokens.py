"""The kubelet's token manager: a pod's projected ServiceAccount token is fetched through
TokenRequest, bound to the pod, and fetched again after 80% of its lifetime."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import jwt

from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.identity import NODES, UserInfo, node_user
from controlplane.pki import new_service_account_key
from controlplane.serviceaccounttokens import TokenIssuer
from tests.support.inprocess import CLUSTER, in_process_cluster, wait_for

NODE = "node-1"


def pod_with_token(name: str, seconds: int) -> dict[str, Any]:
    source = {"serviceAccountToken": {"path": "token", "expirationSeconds": seconds}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "serviceAccountName": "default",
            "containers": [{"name": "app", "image": "nginx:1.27"}],
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": [source]}}],
        },
    }


async def test_a_projected_token_is_requested_bound_to_the_pod_and_renewed(tmp_path: Path) -> None:
    clock = ManualClock()
    issuer = TokenIssuer(new_service_account_key())
    async with in_process_cluster(tmp_path, clock=clock, service_account_issuer=issuer) as cluster:
        accounts = cluster.resource("", "v1", "serviceaccounts", "default")
        await accounts.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        kubelet = Kubelet(
            cluster.client_for(UserInfo.create(node_user(NODE), groups=[NODES])),
            NODE,
            clock=clock,
            rng=random.Random(1),
            cluster=CLUSTER,
            internal_ip="10.0.0.11",
            pod_cidr="10.244.1.0/24",
        )
        await kubelet.start()
        try:
            pods = cluster.resource("", "v1", "pods", "default")
            created = await pods.create(pod_with_token("web", 3600))
            await wait_for(
                pods, lambda items: any((p.get("status") or {}).get("phase") == "Running" for p in items)
            )
            worker = kubelet.workers[created["metadata"]["uid"]]
            first = worker.tokens["kube-api-access-abcde"]
            claims = jwt.decode(first, options={"verify_signature": False})
            assert claims["sub"] == "system:serviceaccount:default:default"
            assert claims["kubernetes.io"]["pod"] == {"name": "web", "uid": created["metadata"]["uid"]}
            assert claims["exp"] - claims["iat"] == 3600
            assert worker.tokens_due is not None and worker.tokens_due > clock.now()

            await clock.advance(0.8 * 3600 + 1)  # past 80% of its lifetime: the next sync fetches anew
            await kubelet.sync_pods(clock.now(), full=True)
            assert worker.tokens["kube-api-access-abcde"] != first
        finally:
            await kubelet.stop()
