"""Bootstrap tokens: the token's form, its Secret as kubeadm writes it, and upstream's checks.

Upstream: k8s.io/cluster-bootstrap (token/util/helpers.go, secret/util.go) and
plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go.
"""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from controlplane.api import bootstraptoken
from controlplane.api.bootstraptoken import BootstrapToken, InvalidBootstrapToken

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TOKEN = BootstrapToken("abcdef", "0123456789abcdef")


def secret(**changes: Any) -> dict[str, Any]:
    made = bootstraptoken.token_secret(TOKEN, expiration=NOW + 3600)
    made.update(changes)
    return made


def with_data(key: str, value: str | None) -> dict[str, Any]:
    made = secret()
    if value is None:
        made["data"].pop(key)
    else:
        made["data"][key] = base64.b64encode(value.encode()).decode()
    return made


def test_a_token_is_six_and_sixteen_lower_case_characters() -> None:
    assert bootstraptoken.parse_token("abcdef.0123456789abcdef") == TOKEN
    for other in ("ABCDEF.0123456789abcdef", "abcdef0123456789abcdef", "abcde.0123456789abcdef", "x.y.z", ""):
        assert bootstraptoken.parse_token(other) is None
    made = bootstraptoken.generate_token(random.Random(1))
    assert bootstraptoken.parse_token(str(made)) == made
    assert made.secret_name == f"bootstrap-token-{made.id}"


def test_the_secret_is_kubeadms() -> None:
    made = bootstraptoken.token_secret(TOKEN, expiration=NOW, description="join")
    assert made["metadata"] == {"name": "bootstrap-token-abcdef", "namespace": "kube-system"}
    assert made["type"] == "bootstrap.kubernetes.io/token"
    data = {key: bootstraptoken.get_data(made, key) for key in made["data"]}
    assert data == {
        "token-id": "abcdef",
        "token-secret": "0123456789abcdef",
        "description": "join",
        "expiration": "2026-01-01T00:00:00Z",
        "usage-bootstrap-authentication": "true",
        "usage-bootstrap-signing": "true",
        "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
    }


def test_a_valid_token_is_its_bootstrap_user_in_the_bootstrappers() -> None:
    name, groups = bootstraptoken.authenticate(TOKEN, secret(), NOW)
    assert name == "system:bootstrap:abcdef"
    assert groups == ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token"]
    assert bootstraptoken.usable_for_authentication(secret(), NOW, margin=3599)
    assert not bootstraptoken.usable_for_authentication(secret(), NOW, margin=3601)


@pytest.mark.parametrize(
    ("made", "message"),
    [
        (
            secret(
                metadata={
                    "name": "bootstrap-token-abcdef",
                    "namespace": "kube-system",
                    "deletionTimestamp": "x",
                }
            ),
            "Bootstrap secret kube-system/bootstrap-token-abcdef matching bearer token is deleted and "
            "awaiting removal",
        ),
        (secret(type="Opaque"), "has invalid type, expected bootstrap.kubernetes.io/token."),
        (with_data("token-secret", "fedcba9876543210"), "has invalid value for key token-secret."),
        (with_data("token-id", "fedcba"), "has invalid value for key token-id."),
        (
            with_data("usage-bootstrap-authentication", None),
            "not marked usage-bootstrap-authentication=true.",
        ),
        (
            with_data("usage-bootstrap-authentication", "false"),
            "not marked usage-bootstrap-authentication=true.",
        ),
        (
            with_data("auth-extra-groups", "students"),
            "has invalid value for key auth-extra-groups: bootstrap group",
        ),
        (with_data("expiration", "tomorrow"), "Unparseable expiration time (tomorrow)"),
    ],
)
def test_a_secret_that_does_not_allow_the_token_says_why(made: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidBootstrapToken, match=message.replace("(", r"\(").replace(")", r"\)")):
        bootstraptoken.authenticate(TOKEN, made, NOW)


def test_an_expired_token_authenticates_no_one() -> None:
    with pytest.raises(
        InvalidBootstrapToken, match="Expired bootstrap token in kube-system/bootstrap-token-abcdef"
    ):
        bootstraptoken.authenticate(TOKEN, secret(), NOW + 3601)
    never = bootstraptoken.token_secret(TOKEN, expiration=None)
    assert bootstraptoken.authenticate(TOKEN, never, NOW + 10**9)[0] == "system:bootstrap:abcdef"
