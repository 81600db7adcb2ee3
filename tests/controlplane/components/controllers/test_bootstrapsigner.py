"""The bootstrap signer: upstream's JWS test vectors (``cluster-bootstrap/token/jws/jws_test.go``), its
token checks (``util_test.go``) and signing decisions (``bootstrapsigner_test.go``), then the controller
in a cluster, as kube-controller-manager: it signs ``cluster-info`` with each token that may sign, signs
again when the kubeconfig or the tokens change, and drops a deleted token's signature."""

from __future__ import annotations

import base64
import datetime as dt
import time
from pathlib import Path

import pytest

from controlplane.api.meta import Object, format_time
from controlplane.client.cache import NAMESPACE_INDEX, Indexer, meta_namespace_index_func
from controlplane.components.controllers import bootstrapsigner
from controlplane.components.controllers.bootstrapsigner import (
    BootstrapSigner,
    cluster_info_request,
    compute_detached_signature,
    detached_token_is_valid,
    signed_data,
    signing_tokens,
    token_for_signing,
    token_request,
)
from tests.controlplane.components.controllers.test_garbagecollector import controller_manager
from tests.support.inprocess import in_process_cluster, wait_for

CONTENT = "Hello from the other side. I must have called a thousand times."
JOSHUA = "joshua"
HEADER = "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9"  # {"alg":"HS256","kid":"joshua"}


@pytest.mark.parametrize(
    ("content", "secret", "signature"),
    [
        # jws_test.go as kubeadm has shipped it (go-jose v2/v3: any key length).
        (CONTENT, "my voice is my passcode", f"{HEADER}..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"),
        ("", "my voice is my passcode", f"{HEADER}..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"),
        (CONTENT, "", f"{HEADER}..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"),
        # jws_test.go after the go-jose bump (32-byte keys and more).
        (
            CONTENT,
            "my voice is my passcode. my voice is my passcode",
            f"{HEADER}..SFoKn0-YxqnvpSExt4LuCZ_7pvIBdX3SoUO_NsTpkdg",
        ),
        (
            "",
            "my voice is my passcode. my voice is my passcode",
            f"{HEADER}..kzZha466Sbz_vFhUBjjYp2rl3F7yHgdDdUIBGxQg4js",
        ),
    ],
    ids=["content", "no content", "no secret", "long secret", "long secret, no content"],
)
def test_detached_signatures_are_upstreams(content: str, secret: str, signature: str) -> None:
    assert compute_detached_signature(content, JOSHUA, secret) == signature
    assert detached_token_is_valid(signature, content, JOSHUA, secret)
    assert not detached_token_is_valid(signature + "foo", content, JOSHUA, secret)


def test_the_header_is_the_protected_header_go_jose_writes() -> None:
    header = compute_detached_signature("x", "abc123", "s").split("..")[0]
    assert base64.urlsafe_b64decode(header + "==") == b'{"alg":"HS256","kid":"abc123"}'


def token_secret(
    token_id: str = "abc123",
    secret: str = "tokenSecret",
    *,
    name: str | None = None,
    signing: str = "true",
    expiration: str = "",
    secret_type: str = "bootstrap.kubernetes.io/token",
) -> Object:
    data = {"token-id": token_id, "token-secret": secret, "usage-bootstrap-signing": signing}
    if expiration:
        data["expiration"] = expiration
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name or f"bootstrap-token-{token_id or 'abc123'}", "namespace": "kube-system"},
        "type": secret_type,
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items() if v},
    }


NOW = time.time()


def _in(seconds: float) -> str:
    return format_time(NOW + seconds)


@pytest.mark.parametrize(
    ("secret", "valid"),
    [
        (token_secret(), True),
        (token_secret(expiration=_in(3600)), True),
        (token_secret(expiration=_in(-3600)), False),
        (token_secret(expiration="garbage"), False),
        (token_secret(signing=""), False),
        (token_secret(signing="false"), False),
        (token_secret(token_id="", name="bootstrap-token-abc123"), False),
        (token_secret(secret=""), False),
        (token_secret(name="abc123"), False),
        (token_secret(name="bootstrap-token-def456"), False),
    ],
    ids=[
        "no expiration",
        "valid expiration",
        "expired",
        "bad expiration",
        "no signing bit",
        "bad signing bit",
        "no id",
        "no secret",
        "bad name",
        "name and id mismatch",
    ],
)
def test_which_tokens_may_sign(secret: Object, valid: bool) -> None:
    assert (token_for_signing(secret, NOW) == ("abc123", "tokenSecret")) is valid


def test_only_bootstrap_token_secrets_count_and_a_duplicated_id_once() -> None:
    tokens = signing_tokens(
        [token_secret(secret_type="Opaque"), token_secret(), token_secret(secret="other")], NOW
    )
    assert tokens == {"abc123": "tokenSecret"}


#: bootstrapsigner_test.go: "payload" signed with abc123.tokenSecret.
SIGNED = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiYzEyMyJ9..QSxpUG7Q542CirTI2ECPSZjvBOJURUW5a7XqFpNI958"


def test_simple_sign_no_sign_needed_update_and_remove_as_upstreams_tests() -> None:
    tokens = {"abc123": "tokenSecret"}
    assert signed_data({"kubeconfig": "payload"}, tokens) == {
        "kubeconfig": "payload",
        "jws-kubeconfig-abc123": SIGNED,
    }
    assert signed_data({"kubeconfig": "payload", "jws-kubeconfig-abc123": SIGNED}, tokens) is None
    updated = signed_data({"kubeconfig": "payload", "jws-kubeconfig-abc123": "old signature"}, tokens)
    assert updated == {"kubeconfig": "payload", "jws-kubeconfig-abc123": SIGNED}
    assert signed_data({"kubeconfig": "payload", "jws-kubeconfig-abc123": "old"}, {}) == {
        "kubeconfig": "payload"
    }
    assert signed_data({"other": "x"}, tokens) is None, "no kubeconfig: nothing to sign"


def test_only_cluster_info_and_kube_system_tokens_wake_it() -> None:
    request = [bootstrapsigner.CLUSTER_INFO]
    assert cluster_info_request({"metadata": {"namespace": "kube-public", "name": "cluster-info"}}) == request
    assert cluster_info_request({"metadata": {"namespace": "default", "name": "cluster-info"}}) == []
    assert cluster_info_request({"metadata": {"namespace": "kube-public", "name": "other"}}) == []
    assert token_request(token_secret()) == request
    assert token_request(token_secret(secret_type="Opaque")) == []


# -- in a cluster ------------------------------------------------------------------------------------

KUBECONFIG = "apiVersion: v1\nkind: Config\n"


def _signatures(items: list[Object]) -> dict[str, str]:
    cm = next((c for c in items if c["metadata"]["name"] == "cluster-info"), None)
    data: dict[str, str] = (cm or {}).get("data") or {}
    return {k: v for k, v in data.items() if k.startswith("jws-kubeconfig-")}


async def test_it_signs_cluster_info_with_each_token_and_follows_changes(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        configmaps = cluster.resource("", "v1", "configmaps", "kube-public")
        secrets = cluster.resource("", "v1", "secrets", "kube-system")
        await configmaps.create(
            {"kind": "ConfigMap", "metadata": {"name": "cluster-info"}, "data": {"kubeconfig": KUBECONFIG}}
        )
        await secrets.create(token_secret("abc123", "0123456789abcdef"))
        await secrets.create(token_secret("nosign", "0123456789abcdef", signing=""))
        async with controller_manager(cluster, bootstrapsigner.add_to_manager):
            expected = {
                "jws-kubeconfig-abc123": compute_detached_signature(KUBECONFIG, "abc123", "0123456789abcdef")
            }
            await wait_for(configmaps, lambda items: _signatures(items) == expected)

            second = token_secret("def456", "fedcba9876543210", expiration=_in(86400))
            await secrets.create(second)
            await wait_for(
                configmaps,
                lambda items: set(_signatures(items)) == {"jws-kubeconfig-abc123", "jws-kubeconfig-def456"},
            )

            # The kubeconfig changes: every signature is made again.
            current = await configmaps.get("cluster-info")
            current["data"]["kubeconfig"] = KUBECONFIG + "users: null\n"
            await configmaps.update(current)
            resigned = compute_detached_signature(KUBECONFIG + "users: null\n", "def456", "fedcba9876543210")
            await wait_for(
                configmaps, lambda items: _signatures(items).get("jws-kubeconfig-def456") == resigned
            )

            # A token deleted (or no longer allowed to sign): its signature goes.
            await secrets.delete("bootstrap-token-abc123")
            await wait_for(configmaps, lambda items: set(_signatures(items)) == {"jws-kubeconfig-def456"})


async def test_nothing_to_sign_without_cluster_info(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        await cluster.resource("", "v1", "secrets", "kube-system").create(token_secret())
        empty = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
        signer = BootstrapSigner(cluster.client, configmaps=empty, secrets=empty, clock=cluster.client.clock)
        result = await signer.reconcile(bootstrapsigner.CLUSTER_INFO)
        assert result.requeue_after is None
        listed = await cluster.resource("", "v1", "configmaps", "kube-public").list()
        assert all(cm["metadata"]["name"] != "cluster-info" for cm in listed["items"])


def test_it_looks_again_when_the_first_signing_token_expires() -> None:
    expires = dt.datetime.fromtimestamp(int(NOW) + 600, dt.UTC)
    secret = token_secret(expiration=expires.strftime("%Y-%m-%dT%H:%M:%SZ"))
    result = BootstrapSigner._expiry_look([secret], {"abc123": "tokenSecret"}, NOW)
    assert result.requeue_after is not None and 600 <= result.requeue_after <= 602
    assert (
        BootstrapSigner._expiry_look([token_secret()], {"abc123": "tokenSecret"}, NOW).requeue_after is None
    )
