"""The secretbox provider: NaCl's secretbox, XSalsa20 encryption with a Poly1305 authenticator.

The stored value (after ``k8s:enc:secretbox:v1:<key name>:``) is a random 24-byte nonce followed by
the box: the 16-byte Poly1305 tag and the ciphertext (upstream
``k8s.io/apiserver/pkg/storage/value/encrypt/secretbox/secretbox.go``, Go's
``golang.org/x/crypto/nacl/secretbox``, which PyNaCl's ``SecretBox`` writes identically). Keys are 32
bytes. Like upstream, no authenticated data: a box is not bound to its store key.
"""

from __future__ import annotations

import os

from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

from controlplane.apiserver.encryption.transformer import TransformError

NONCE_SIZE = 24
#: Poly1305's tag, in front of the ciphertext (``secretbox.Overhead``).
OVERHEAD = 16
KEY_SIZE = 32


class SecretboxTransformer:
    """NaCl secretbox with a random 24-byte nonce in front."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise ValueError(f"expected key size 32 for secretbox provider, got {len(key)}")
        self._box = SecretBox(key)

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        return bytes(self._box.encrypt(data, os.urandom(NONCE_SIZE)))

    def from_storage(self, data: bytes, context: bytes) -> tuple[bytes, bool]:
        if len(data) < NONCE_SIZE + OVERHEAD:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._box.decrypt(data[NONCE_SIZE:], data[:NONCE_SIZE]), False
        except CryptoError:
            # Upstream's (odd) wording when secretbox.Open fails.
            raise TransformError("output array was not large enough for encryption") from None

    def stale(self, data: bytes) -> bool:
        return False


__all__ = ["KEY_SIZE", "NONCE_SIZE", "OVERHEAD", "SecretboxTransformer"]
