"""The bootstrap token authenticator, through a running API server: ``Bearer <id>.<secret>`` is
``system:bootstrap:<id>`` while its Secret allows it, and a bare 401 otherwise (the reason goes to the
trace and to a TokenReview, never to the client).

Upstream: plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import bootstraptoken
from controlplane.api.bootstraptoken import BootstrapToken
from controlplane.client.config import Config
from controlplane.client.errors import Unauthorized
from controlplane.client.rest import RESTClient
from tests.support.inprocess import CLUSTER, InProcessCluster, in_process_cluster

VALID = BootstrapToken("abcdef", "0123456789abcdef")
EXPIRED = BootstrapToken("expire", "0123456789abcdef")
NO_USAGE = BootstrapToken("nousag", "0123456789abcdef")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with in_process_cluster(tmp_path) as running:
        secrets = running.resource("", "v1", "secrets", "kube-system")
        now = time.time()
        await secrets.create(bootstraptoken.token_secret(VALID, expiration=now + 3600))
        await secrets.create(bootstraptoken.token_secret(EXPIRED, expiration=now - 60))
        await secrets.create(bootstraptoken.token_secret(NO_USAGE, expiration=now + 3600, usages=["signing"]))
        yield running


async def whoami(cluster: InProcessCluster, token: str) -> Any:
    config = Config.for_in_process(
        cluster.server, CLUSTER, mount_prefix=f"/clusters/{CLUSTER}", bearer_token=token
    )
    async with RESTClient(config) as client:
        reviews = client.resource("authentication.k8s.io", "v1", "selfsubjectreviews")
        answer = await reviews.create({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return answer["status"]["userInfo"]


async def review(cluster: InProcessCluster, token: str) -> Any:
    reviews = cluster.resource("authentication.k8s.io", "v1", "tokenreviews")
    answer = await reviews.create({"apiVersion": "authentication.k8s.io/v1", "spec": {"token": token}})
    return answer["status"]


async def test_a_valid_bootstrap_token_is_its_bootstrap_user(cluster: InProcessCluster) -> None:
    user = await whoami(cluster, str(VALID))

    assert user["username"] == "system:bootstrap:abcdef"
    assert user["groups"] == [
        "system:bootstrappers",
        "system:bootstrappers:kubeadm:default-node-token",
        "system:authenticated",
    ]
    assert (await review(cluster, str(VALID)))["authenticated"] is True


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (str(EXPIRED), "Expired bootstrap token in kube-system/bootstrap-token-expire Secret"),
        (
            "abcdef.fedcba9876543210",
            "Bootstrap secret kube-system/bootstrap-token-abcdef matching bearer token has invalid value "
            "for key token-secret.",
        ),
        (str(NO_USAGE), "matching bearer token not marked usage-bootstrap-authentication=true."),
        ("nosecr.0123456789abcdef", "invalid bearer token"),  # no Secret: not a token of this cluster
    ],
)
async def test_a_refused_token_is_a_bare_401(cluster: InProcessCluster, token: str, reason: str) -> None:
    with pytest.raises(Unauthorized) as refused:
        await whoami(cluster, token)

    assert refused.value.message == "Unauthorized", "the client never learns why"
    status = await review(cluster, token)
    assert status["authenticated"] is False
    assert reason in status["error"]
