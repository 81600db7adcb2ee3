"""The pure ServiceAccount token logic: key ids, claims, signing, verifying, the validator."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from controlplane.serviceaccounttokens import (
    DEFAULT_ISSUER,
    LEEWAY,
    InvalidToken,
    ObjectRef,
    TokenClaims,
    TokenIssuer,
    check_bound_objects,
    key_id,
    new_claims,
    unverified_issuer,
)

NOW = 1_700_000_000.0


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def obj(name: str, uid: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid, **meta}}


SA = obj("builder", "sa-uid")
POD = obj("web", "pod-uid")
NODE = obj("node-1", "node-uid", namespace="")


def claims_for(**kwargs: Any) -> TokenClaims:
    options: dict[str, Any] = {
        "issuer": DEFAULT_ISSUER,
        "service_account": SA,
        "audiences": [DEFAULT_ISSUER],
        "expiration_seconds": 3600,
        "now": NOW,
    }
    options.update(kwargs)
    return new_claims(**options)


def test_key_id_is_base64url_of_the_sha256_of_the_der_public_key(key: rsa.RSAPrivateKey) -> None:
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    expected = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")
    assert key_id(key.public_key()) == expected
    assert len(expected) == 43 and "=" not in expected


def test_claims_are_upstreams(key: rsa.RSAPrivateKey) -> None:
    claims = claims_for(pod=POD, node=NODE, jti="fixed")
    assert claims.to_json() == {
        "aud": [DEFAULT_ISSUER],
        "exp": 1_700_003_600,
        "iat": 1_700_000_000,
        "iss": DEFAULT_ISSUER,
        "jti": "fixed",
        "kubernetes.io": {
            "namespace": "default",
            "node": {"name": "node-1", "uid": "node-uid"},
            "pod": {"name": "web", "uid": "pod-uid"},
            "serviceaccount": {"name": "builder", "uid": "sa-uid"},
        },
        "nbf": 1_700_000_000,
        "sub": "system:serviceaccount:default:builder",
    }
    assert TokenClaims.from_json(claims.to_json()) == claims


def test_a_token_binds_to_a_secret_or_to_a_pod_never_both() -> None:
    with pytest.raises(ValueError, match="only be bound to one object type"):
        claims_for(pod=POD, secret=obj("s", "s-uid"))


def test_sign_then_verify_round_trips(key: rsa.RSAPrivateKey) -> None:
    issuer = TokenIssuer(key)
    token = issuer.sign(claims_for())
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "RS256", "kid": key_id(key.public_key())}
    verified = issuer.verify(token)
    assert verified.claims == claims_for(jti=verified.claims.jti)
    assert verified.audiences == (DEFAULT_ISSUER,)


def test_an_ecdsa_key_signs_es256() -> None:
    issuer = TokenIssuer(ec.generate_private_key(ec.SECP256R1()))
    token = issuer.sign(claims_for())
    assert json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["alg"] == "ES256"
    assert issuer.verify(token).claims.subject == "system:serviceaccount:default:builder"


def test_a_rotated_out_key_still_verifies(key: rsa.RSAPrivateKey) -> None:
    old_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = TokenIssuer(old_key).sign(claims_for())
    with pytest.raises(InvalidToken):
        TokenIssuer(key).verify(token)
    new = TokenIssuer(key, extra_public_keys=[old_key.public_key()])
    assert new.verify(token).claims.service_account == ObjectRef("builder", "sa-uid")


def test_audiences_must_meet(key: rsa.RSAPrivateKey) -> None:
    issuer = TokenIssuer(key, api_audiences=["api", "kube"])
    token = issuer.sign(claims_for(audiences=["kube", "vault"]))
    assert issuer.verify(token).audiences == ("kube",)
    assert issuer.verify(token, audiences=["vault"]).audiences == ("vault",)
    with pytest.raises(InvalidToken, match=r'token audiences \["kube" "vault"\] is invalid'):
        issuer.verify(token, audiences=["other"])


def test_the_issuer_is_read_before_anything_is_checked(key: rsa.RSAPrivateKey) -> None:
    token = TokenIssuer(key).sign(claims_for())
    assert unverified_issuer(token) == DEFAULT_ISSUER
    deep = base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).decode().rstrip("=")
    for garbage in ("", "abc", "a.b", "a.b.c", "a.!!!.c", "a." + "W10" + ".c", "x" * 20_000, f"a.{deep}.c"):
        assert unverified_issuer(garbage) is None


@pytest.mark.parametrize(
    ("offset", "error"),
    [
        (-LEEWAY - 1, "service account token is not valid yet"),
        (-LEEWAY, None),
        (3600 + LEEWAY, None),
        (3600 + LEEWAY + 1, "service account token has expired"),
    ],
)
def test_times_allow_upstreams_leeway(offset: int, error: str | None) -> None:
    claims = claims_for()
    if error is None:
        check_bound_objects(claims, now=NOW + offset, service_account=SA)
    else:
        with pytest.raises(InvalidToken, match=error):
            check_bound_objects(claims, now=NOW + offset, service_account=SA)


def test_the_validator_names_the_user_and_its_bound_objects() -> None:
    info = check_bound_objects(claims_for(pod=POD, node=NODE, jti="j"), now=NOW, service_account=SA, pod=POD)
    user = info.user_info()
    assert user.username == "system:serviceaccount:default:builder"
    assert user.uid == "sa-uid"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:default")
    assert dict(user.extra) == {
        "authentication.kubernetes.io/pod-name": ("web",),
        "authentication.kubernetes.io/pod-uid": ("pod-uid",),
        "authentication.kubernetes.io/credential-id": ("JTI=j",),
        "authentication.kubernetes.io/node-name": ("node-1",),
        "authentication.kubernetes.io/node-uid": ("node-uid",),
    }


@pytest.mark.parametrize(
    ("objects", "error"),
    [
        ({"service_account": None}, 'serviceaccounts "builder" not found'),
        ({"service_account": obj("builder", "other")}, r"service account UID \(other\) does not match claim"),
        (
            {"service_account": obj("builder", "sa-uid", deletionTimestamp="2023-11-14T22:11:00Z")},
            "service account default/builder has been deleted",
        ),
        ({"pod": None}, "service account token has been invalidated"),
        (
            {"pod": obj("web", "new")},
            r"pod UID \(new\) does not match service account pod ref claim \(pod-uid\)",
        ),
        ({"pod": obj("web", "pod-uid", deletionTimestamp="garbage")}, "has been invalidated"),
    ],
)
def test_the_validator_refuses_tokens_whose_objects_are_gone(objects: dict[str, Any], error: str) -> None:
    found: dict[str, Any] = {"service_account": SA, "pod": POD} | objects
    with pytest.raises(InvalidToken, match=error):
        check_bound_objects(claims_for(pod=POD), now=NOW, **found)


def test_an_object_being_deleted_within_the_leeway_still_counts() -> None:
    # 1_700_000_000 is 2023-11-14T22:13:20Z: deleted 20 s ago, less than the 60 s leeway.
    deleting = obj("web", "pod-uid", deletionTimestamp="2023-11-14T22:13:00Z")
    info = check_bound_objects(claims_for(pod=POD), now=NOW, service_account=SA, pod=deleting)
    assert info.pod_name == "web"


def test_a_node_bound_token_checks_its_node() -> None:
    claims = claims_for(node=NODE)
    assert check_bound_objects(claims, now=NOW, service_account=SA, node=NODE).node_uid == "node-uid"
    with pytest.raises(InvalidToken, match="has been invalidated"):
        check_bound_objects(claims, now=NOW, service_account=SA, node=None)
    with pytest.raises(InvalidToken, match=r"node UID \(x\) does not match"):
        check_bound_objects(claims, now=NOW, service_account=SA, node=obj("node-1", "x", namespace=""))


@pytest.mark.parametrize(
    "payload",
    [
        [],
        {"iss": DEFAULT_ISSUER},
        {"kubernetes.io": {"namespace": "default"}},
        {"kubernetes.io": {"namespace": "default", "serviceaccount": {"name": 1}}},
        {"kubernetes.io": {"namespace": "d", "serviceaccount": {"name": "s"}}, "exp": "soon"},
        {"kubernetes.io": {"namespace": "d", "serviceaccount": {"name": "s"}}, "aud": [1]},
        {"kubernetes.io": {"namespace": "d", "serviceaccount": {"name": "s"}, "pod": "web"}},
    ],
)
def test_claims_of_the_wrong_shape_are_an_invalid_token(payload: Any) -> None:
    with pytest.raises(InvalidToken):
        TokenClaims.from_json(payload)


def test_a_single_string_audience_is_read_as_a_list() -> None:
    payload = claims_for().to_json() | {"aud": "vault"}
    assert TokenClaims.from_json(payload).audiences == ("vault",)
