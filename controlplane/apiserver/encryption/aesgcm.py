"""The aesgcm provider: AES in Galois/Counter Mode, an authenticated cipher.

The stored value (after ``k8s:enc:aesgcm:v1:<key name>:``) is a random 12-byte nonce followed by the
ciphertext and its 16-byte tag. The **authenticated data** is the store key: a value copied to another
key fails to decrypt, as does any changed byte (upstream
``k8s.io/apiserver/pkg/storage/value/encrypt/aes/aes.go``, ``gcm``, given ``authenticatedDataString``
by ``storage/etcd3/store.go``).

A random 96-bit nonce must never repeat under one key; upstream therefore asks for a key rotation
every 200 000 writes.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from controlplane.apiserver.encryption.transformer import TransformError

NONCE_SIZE = 12
TAG_SIZE = 16


class GCMTransformer:
    """AES-GCM with a random nonce in front and the store key as authenticated data."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)  # ValueError for a key that is not 16, 24 or 32 bytes

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        nonce = os.urandom(NONCE_SIZE)
        return nonce + self._aead.encrypt(nonce, data, context)

    def from_storage(self, data: bytes, context: bytes) -> tuple[bytes, bool]:
        if len(data) < NONCE_SIZE:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:NONCE_SIZE], data[NONCE_SIZE:], context), False
        except InvalidTag:
            raise TransformError("cipher: message authentication failed") from None

    def stale(self, data: bytes) -> bool:
        return False


__all__ = ["NONCE_SIZE", "TAG_SIZE", "GCMTransformer"]
