"""EncryptionConfiguration: parsing, upstream's validation messages, and prefix-based reading."""

from __future__ import annotations

import base64
import os

import pytest

from controlplane.apiserver.encryption import config
from controlplane.apiserver.encryption.transformer import NoMatchingPrefix, Transformer, TransformError

CONTEXT = b"/registry/secrets/default/db"
PLAIN = b'{"kind":"Secret"}'


def b64(size: int = 32) -> str:
    return base64.b64encode(os.urandom(size)).decode()


def document(*providers: object, resources: list[str] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [{"resources": resources or ["secrets"], "providers": list(providers)}],
    }


def aes(kind: str, *names: str, secrets: dict[str, str] | None = None) -> dict[str, object]:
    secrets = secrets or {}
    return {kind: {"keys": [{"name": n, "secret": secrets.get(n) or b64()} for n in names]}}


def transformer(doc: dict[str, object], group: str = "", resource: str = "secrets") -> Transformer:
    built = config.build(config.parse(doc)).for_resource(group, resource)
    assert built is not None
    return built


def test_upstreams_example_parses_and_writes_back_the_same_document() -> None:
    text = f"""
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets, configmaps]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: {b64()}
      - identity: {{}}
"""
    parsed = config.load(text)
    assert [p.kind for p in parsed.resources[0].providers] == ["aescbc", "identity"]
    assert config.load(config.dump(parsed)) == parsed


@pytest.mark.parametrize("kind", ["aescbc", "aesgcm", "secretbox"])
def test_the_first_provider_writes_with_its_prefix_and_first_key(kind: str) -> None:
    t = transformer(document(aes(kind, "new", "old"), {"identity": {}}))
    stored = t.to_storage(PLAIN, CONTEXT)
    assert stored.startswith(f"k8s:enc:{kind}:v1:new:".encode())
    assert t.from_storage(stored, CONTEXT) == (PLAIN, False)
    assert not t.stale(stored)


def test_every_provider_and_key_reads_by_prefix_and_reads_by_older_ones_are_stale() -> None:
    keys = {"k1": b64(), "k2": b64(), "box": b64()}
    old_cbc = transformer(document(aes("aescbc", "k1", secrets=keys)))
    old_box = transformer(document(aes("secretbox", "box", secrets=keys)))
    plain = PLAIN
    by_k1 = old_cbc.to_storage(PLAIN, CONTEXT)
    by_box = old_box.to_storage(PLAIN, CONTEXT)
    # Rotated: k2 writes, k1 and the secretbox key still read, identity reads plaintext.
    now = transformer(
        document(
            aes("aescbc", "k2", "k1", secrets=keys), aes("secretbox", "box", secrets=keys), {"identity": {}}
        )
    )
    for stored in (by_k1, by_box, plain):
        assert now.from_storage(stored, CONTEXT) == (PLAIN, True)
        assert now.stale(stored)
    fresh = now.to_storage(PLAIN, CONTEXT)
    assert now.from_storage(fresh, CONTEXT) == (PLAIN, False) and not now.stale(fresh)


def test_the_same_provider_twice_tries_both_key_lists() -> None:
    keys = {"one": b64(), "two": b64()}
    by_one = transformer(document(aes("aesgcm", "one", secrets=keys))).to_storage(PLAIN, CONTEXT)
    t = transformer(document(aes("aesgcm", "two", secrets=keys), aes("aesgcm", "one", secrets=keys)))
    assert t.from_storage(by_one, CONTEXT) == (PLAIN, True)


def test_a_value_of_a_removed_key_or_plaintext_without_identity_is_unreadable() -> None:
    keys = {"k1": b64(), "k2": b64()}
    by_k1 = transformer(document(aes("aescbc", "k1", secrets=keys))).to_storage(PLAIN, CONTEXT)
    without_k1 = transformer(document(aes("aescbc", "k2", secrets=keys)))
    with pytest.raises(TransformError, match="no matching key was found for the provided AES transformer"):
        without_k1.from_storage(by_k1, CONTEXT)
    with pytest.raises(NoMatchingPrefix, match="no matching prefix found"):
        without_k1.from_storage(PLAIN, CONTEXT)
    identity_only = transformer(document({"identity": {}}))
    with pytest.raises(NoMatchingPrefix):
        identity_only.from_storage(by_k1, CONTEXT)


def test_identity_first_writes_plaintext_and_marks_encrypted_values_stale() -> None:
    keys = {"k1": b64()}
    by_k1 = transformer(document(aes("aescbc", "k1", secrets=keys))).to_storage(PLAIN, CONTEXT)
    t = transformer(document({"identity": {}}, aes("aescbc", "k1", secrets=keys)))
    assert t.to_storage(PLAIN, CONTEXT) == PLAIN
    assert t.from_storage(by_k1, CONTEXT) == (PLAIN, True)
    assert t.stale(by_k1) and not t.stale(PLAIN)


def test_resources_are_matched_exactly_then_by_group_wildcard_then_everything() -> None:
    doc = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [
            {"resources": ["events"], "providers": [{"identity": {}}]},
            {"resources": ["secrets", "configmaps"], "providers": [aes("aescbc", "a")]},
            {"resources": ["*.apps"], "providers": [aes("aesgcm", "b")]},
            {"resources": ["*.*"], "providers": [aes("secretbox", "c")]},
        ],
    }
    built = config.build(config.parse(doc))

    def prefix(group: str, resource: str) -> bytes:
        t = built.for_resource(group, resource)
        assert t is not None
        return t.to_storage(PLAIN, CONTEXT)[:30]

    assert prefix("", "events") == PLAIN
    assert prefix("", "configmaps").startswith(b"k8s:enc:aescbc:v1:a:")
    assert prefix("apps", "deployments").startswith(b"k8s:enc:aesgcm:v1:b:")
    assert prefix("batch", "jobs").startswith(b"k8s:enc:secretbox:v1:c:")
    unconfigured = config.build(config.parse(document({"identity": {}})))
    assert unconfigured.for_resource("", "pods") is None


NOT_V1 = {
    "apiVersion": "v1",
    "kind": "Config",
    "resources": [{"resources": ["s"], "providers": [{"identity": {}}]}],
}
NO_RESOURCES = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration"}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (document(aes("aescbc", "k", secrets={"k": b64(10)})), "got 10, expected one of [16 24 32]"),
        (document(aes("secretbox", "k", secrets={"k": b64(16)})), "got 16, expected one of [32]"),
        (document(aes("aesgcm", "k", secrets={"k": "not base64!"})), "secrets must be base64 encoded"),
        (document({"aescbc": {"keys": []}}), "at least one keys is required"),
        (document({"aescbc": {"keys": [{"secret": b64()}]}}), "name is a mandatory field for a key"),
        (document({"aescbc": {"keys": [{"name": "k"}]}}), "secret is a mandatory field for a key"),
        (document({"identity": {}, "aescbc": {"keys": []}}), "more than one provider specified"),
        (document({"rot13": {}}), "provider does not contain any of the expected providers"),
        (document({"kms": {"name": "x"}}), "Kubelab has no KMS plugins"),
        (document({"identity": {}}, resources=["Secrets"]), "should not contain capital letters"),
        (document({"identity": {}}, resources=["*"]), "use '*.' to encrypt all the resources"),
        (document({"identity": {}}, resources=["events.events.k8s.io"]), "Use 'events' instead"),
        (document({"identity": {}}, resources=["secrets", "*."]), "overlapping resources"),
        (document({"identity": {}}, resources=["secrets", "secrets"]), "cannot be specified multiple times"),
        (document({"identity": {}}, resources=["pods.*"]), "across groups is not supported"),
        (NOT_V1, "expected apiVersion apiserver.config.k8s.io/v1"),
        (NO_RESOURCES, "at least one resources is required"),
    ],
)  # fmt: skip
def test_invalid_configurations_are_refused_with_upstreams_messages(doc: object, message: str) -> None:
    with pytest.raises(config.InvalidEncryptionConfiguration) as refused:
        config.parse(doc)
    assert any(message in problem for problem in refused.value.problems), refused.value.problems


def test_secrets_never_appear_in_validation_messages() -> None:
    secret = base64.b64encode(b"x" * 10).decode()
    with pytest.raises(config.InvalidEncryptionConfiguration) as refused:
        config.parse(document(aes("aescbc", "k", secrets={"k": secret})))
    assert secret not in str(refused.value) and "REDACTED" in str(refused.value)


def test_a_resource_masked_by_an_earlier_wildcard_is_refused() -> None:
    doc = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [
            {"resources": ["*.*"], "providers": [{"identity": {}}]},
            {"resources": ["secrets"], "providers": [aes("aescbc", "k")]},
        ],
    }
    with pytest.raises(config.InvalidEncryptionConfiguration, match='"secrets" is masked by earlier rule'):
        config.parse(doc)


def test_empty_or_unparsable_files_are_refused() -> None:
    with pytest.raises(config.InvalidEncryptionConfiguration, match="empty"):
        config.load("  \n")
    with pytest.raises(config.InvalidEncryptionConfiguration, match="cannot parse"):
        config.load("resources: [unclosed")
