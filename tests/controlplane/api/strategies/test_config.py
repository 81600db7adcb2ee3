"""ConfigMaps and Secrets: ``TestValidateConfigMap*``, ``TestValidateSecret*``
(``pkg/apis/core/validation/validation_test.go``), ``SetDefaults_Secret``, and Go's base64 decoder
(``encoding/base64`` ``TestDecodeCorrupt``) for the 400 a bad ``data`` value gets."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from controlplane.api.strategies import ConfigMapStrategy, SecretStrategy, UndecodableObject
from controlplane.api.strategies.config import base64_error_offset
from tests.controlplane.api.strategies import create, stored, update

CONFIGMAPS = ConfigMapStrategy()
SECRETS = SecretStrategy()
KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def configmap(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, **fields}


def secret(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, **fields}


def test_config_keys() -> None:
    data = {"good.key": "1", "bad key": "2", "..": "3", "dup": "4"}
    assert create(CONFIGMAPS, configmap(data=data, binaryData={"dup": b64("x")}))[1] == [
        f'data[bad key]: Invalid value: "bad key": {KEY_MSG}',
        "data[..]: Invalid value: \"..\": must not be '..'",
        'data[dup]: Invalid value: "dup": duplicate of key present in binaryData',
    ]


def test_one_mebibyte_in_total() -> None:
    half = "x" * (512 * 1024)
    assert create(CONFIGMAPS, configmap(data={"a": half, "b": half}))[1] == []
    assert create(CONFIGMAPS, configmap(data={"a": half, "b": half + "x"}))[1] == [
        "Too long: may not be more than 1048576 bytes"  # upstream's field path is "" (the whole object)
    ]
    big = base64.b64encode(b"\0" * (1024 * 1024 + 1)).decode()
    assert create(SECRETS, secret(data={"blob": big}))[1] == [
        "data: Too long: may not be more than 1048576 bytes"
    ]


def test_immutable_configmaps_keep_their_data() -> None:
    old = stored(CONFIGMAPS, configmap(data={"a": "1"}, immutable=True))
    new = copy.deepcopy(old)
    new["data"] = {"a": "2"}
    new["immutable"] = False
    assert update(CONFIGMAPS, new, old)[1] == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"v": "2"}
    assert update(CONFIGMAPS, relabelled, old)[1] == []


def test_secret_type_defaults_to_opaque_and_string_data_is_folded_in() -> None:
    obj = stored(SECRETS, secret(data={"user": b64("admin")}, stringData={"password": "s3cret"}))
    assert obj["type"] == "Opaque"
    assert obj["data"] == {"user": b64("admin"), "password": b64("s3cret")}
    assert "stringData" not in obj


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("YWJj", None),
        ("YWI=", None),
        ("YQ==", None),
        ("YQ==\n", None),
        ("YW\nJj", None),
        ("", None),
        ("YWJ", 0),  # a partial quantum without padding: reported at its start
        ("YW=j", 2),  # the "=" that should have been followed by another
        ("Y===", 1),
        ("YQ=", 3),
        ("YWJj!", 4),
        ("YQ==YQ==", 4),
        ("héllo", 1),
    ],
)
def test_base64_errors_are_reported_at_gos_offsets(text: str, offset: int | None) -> None:
    assert base64_error_offset(text) == offset


def test_undecodable_secret_data_is_a_400_with_upstreams_message() -> None:
    with pytest.raises(UndecodableObject) as raised:
        create(SECRETS, secret(data={"token": "not base64!"}))
    assert raised.value.message("Secret", "v1") == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'
    )


@pytest.mark.parametrize(
    ("kind", "data", "messages"),
    [
        ("kubernetes.io/tls", {"tls.crt": "Y2VydA=="}, ["data[tls.key]: Required value"]),
        ("kubernetes.io/tls", {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}, []),
        (
            "kubernetes.io/basic-auth",
            {},
            ["data[username]: Required value", "data[password]: Required value"],
        ),
        ("kubernetes.io/basic-auth", {"password": ""}, []),
        ("kubernetes.io/ssh-auth", {"ssh-privatekey": ""}, ["data[ssh-privatekey]: Required value"]),
        ("kubernetes.io/dockerconfigjson", {}, ["data[.dockerconfigjson]: Required value"]),
        (
            "kubernetes.io/dockerconfigjson",
            {".dockerconfigjson": b64("[]")},
            [
                'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot '
                "unmarshal "
                "array into Go value of type map[string]interface {}"
            ],
        ),
        ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64('{"auths": {}}')}, []),
        ("example.com/custom", {}, []),
    ],
)
def test_secret_types_require_their_keys(kind: str, data: dict[str, str], messages: list[str]) -> None:
    assert create(SECRETS, secret(type=kind, data=data))[1] == messages


def test_service_account_token_secrets_name_their_account() -> None:
    assert create(SECRETS, secret(type="kubernetes.io/service-account-token"))[1] == [
        "metadata.annotations[kubernetes.io/service-account.name]: Required value"
    ]


def test_secret_type_and_immutable_data_cannot_change() -> None:
    old = stored(SECRETS, secret(data={"a": b64("1")}, immutable=True))
    new = copy.deepcopy(old)
    new["type"] = "kubernetes.io/tls"
    new["data"] = {"tls.crt": b64("c"), "tls.key": b64("k")}
    assert update(SECRETS, new, old)[1] == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable',
        "data: Forbidden: field is immutable when `immutable` is set",
    ]
