"""Each provider round-trips, and writes upstream's byte format (checked with independent primitives)."""

from __future__ import annotations

import os

import nacl.bindings
import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from controlplane.apiserver.encryption.aescbc import CBCTransformer
from controlplane.apiserver.encryption.aesgcm import GCMTransformer
from controlplane.apiserver.encryption.identity import IdentityTransformer
from controlplane.apiserver.encryption.secretbox import SecretboxTransformer
from controlplane.apiserver.encryption.transformer import TransformError

KEY = bytes(range(32))
CONTEXT = b"/registry/secrets/default/db"
PLAIN = b'{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}'


@pytest.mark.parametrize("factory", [CBCTransformer, GCMTransformer, SecretboxTransformer])
@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 1000])
def test_every_provider_round_trips_values_of_any_length(factory: type, size: int) -> None:
    transformer = factory(KEY)
    data = os.urandom(size)
    stored = transformer.to_storage(data, CONTEXT)
    assert size < 16 or data not in stored
    assert transformer.from_storage(stored, CONTEXT) == (data, False)


@pytest.mark.parametrize("factory", [CBCTransformer, GCMTransformer, SecretboxTransformer])
def test_two_writes_of_the_same_value_differ_random_iv_or_nonce(factory: type) -> None:
    transformer = factory(KEY)
    assert transformer.to_storage(PLAIN, CONTEXT) != transformer.to_storage(PLAIN, CONTEXT)


def test_aescbc_is_a_16_byte_iv_then_pkcs7_padded_aes_cbc() -> None:
    stored = CBCTransformer(KEY).to_storage(PLAIN, CONTEXT)
    iv, ciphertext = stored[:16], stored[16:]
    assert len(ciphertext) % 16 == 0 and len(ciphertext) == (len(PLAIN) // 16 + 1) * 16
    decryptor = Cipher(algorithms.AES(KEY), modes.CBC(iv)).decryptor()
    padded = decryptor.update(ciphertext) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    assert unpadder.update(padded) + unpadder.finalize() == PLAIN


def test_aescbc_reads_what_an_independent_pkcs7_cbc_writer_wrote() -> None:
    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(b"sixteen bytes!!!") + padder.finalize()  # a full block of padding
    encryptor = Cipher(algorithms.AES(KEY), modes.CBC(iv)).encryptor()
    stored = iv + encryptor.update(padded) + encryptor.finalize()
    assert CBCTransformer(KEY).from_storage(stored, CONTEXT) == (b"sixteen bytes!!!", False)


def test_aescbc_refuses_corrupted_or_truncated_values_with_upstreams_messages() -> None:
    transformer = CBCTransformer(KEY)
    stored = transformer.to_storage(PLAIN, CONTEXT)
    with pytest.raises(TransformError, match="shorter than the required size"):
        transformer.from_storage(stored[:10], CONTEXT)
    with pytest.raises(TransformError, match="not a multiple of the block size"):
        transformer.from_storage(stored[:-1], CONTEXT)
    # Another key decrypts the last block to noise, whose padding fails (for all but ~1/256 of keys).
    refused = []
    for _ in range(8):
        try:
            CBCTransformer(os.urandom(32)).from_storage(stored, CONTEXT)
        except TransformError as error:
            refused.append(str(error))
    assert refused and all(m.startswith(("invalid PKCS7", "invalid padding")) for m in refused)


def test_aesgcm_is_a_12_byte_nonce_then_ciphertext_and_tag_with_the_key_as_authenticated_data() -> None:
    stored = GCMTransformer(KEY).to_storage(PLAIN, CONTEXT)
    assert len(stored) == 12 + len(PLAIN) + 16
    assert AESGCM(KEY).decrypt(stored[:12], stored[12:], CONTEXT) == PLAIN
    nonce = os.urandom(12)
    written_elsewhere = nonce + AESGCM(KEY).encrypt(nonce, PLAIN, CONTEXT)
    assert GCMTransformer(KEY).from_storage(written_elsewhere, CONTEXT) == (PLAIN, False)


def test_aesgcm_refuses_a_value_moved_to_another_key_or_changed() -> None:
    transformer = GCMTransformer(KEY)
    stored = transformer.to_storage(PLAIN, CONTEXT)
    with pytest.raises(TransformError, match="message authentication failed"):
        transformer.from_storage(stored, b"/registry/secrets/default/other")
    flipped = stored[:-1] + bytes([stored[-1] ^ 1])
    with pytest.raises(TransformError, match="message authentication failed"):
        transformer.from_storage(flipped, CONTEXT)


def test_secretbox_is_a_24_byte_nonce_then_nacls_box() -> None:
    stored = SecretboxTransformer(KEY).to_storage(PLAIN, CONTEXT)
    assert len(stored) == 24 + 16 + len(PLAIN)
    assert nacl.bindings.crypto_secretbox_open(stored[24:], stored[:24], KEY) == PLAIN
    nonce = os.urandom(24)
    boxed = nonce + nacl.bindings.crypto_secretbox(PLAIN, nonce, KEY)
    assert SecretboxTransformer(KEY).from_storage(boxed, CONTEXT) == (PLAIN, False)


def test_secretbox_refuses_a_changed_box_and_keys_of_the_wrong_size() -> None:
    stored = SecretboxTransformer(KEY).to_storage(PLAIN, CONTEXT)
    with pytest.raises(TransformError):
        SecretboxTransformer(KEY).from_storage(stored[:30] + b"x" + stored[31:], CONTEXT)
    with pytest.raises(ValueError, match="expected key size 32"):
        SecretboxTransformer(KEY[:16])


def test_identity_stores_plaintext_and_refuses_encrypted_values() -> None:
    identity = IdentityTransformer()
    assert identity.to_storage(PLAIN, CONTEXT) == PLAIN
    assert identity.from_storage(PLAIN, CONTEXT) == (PLAIN, False)
    with pytest.raises(TransformError, match="identity transformer tried to read encrypted data"):
        identity.from_storage(b"k8s:enc:aescbc:v1:key1:xxxx", CONTEXT)
    assert identity.stale(b"k8s:enc:aescbc:v1:key1:xxxx") and not identity.stale(PLAIN)
