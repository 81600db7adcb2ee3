"""The aescbc provider: AES in CBC mode with PKCS#7 padding.

The stored value (after the ``k8s:enc:aescbc:v1:<key name>:`` prefix) is a random 16-byte IV followed
by the ciphertext of the plaintext padded to a multiple of 16 bytes: ``n`` bytes of value ``n``, 1 to
16 of them (PKCS#7). Byte for byte what upstream writes
(``k8s.io/apiserver/pkg/storage/value/encrypt/aes/aes.go``, ``cbc``), so a value written here decrypts
there and back. Keys are 16, 24 or 32 bytes (AES-128, -192, -256).

CBC does not authenticate: a changed ciphertext decrypts to garbage, usually caught by the padding
check. Upstream's documentation no longer recommends it (padding-oracle attacks); it is the default
here because it is what the upstream tutorial uses, and a lab has no attacker who can ask for
decryptions. ``aesgcm`` and ``secretbox`` authenticate.
"""

from __future__ import annotations

import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from controlplane.apiserver.encryption.transformer import TransformError

BLOCK_SIZE = 16


class CBCTransformer:
    """AES-CBC with a random IV in front and PKCS#7 padding, as upstream's ``cbc``."""

    def __init__(self, key: bytes) -> None:
        self._algorithm = algorithms.AES(key)  # ValueError for a key that is not 16, 24 or 32 bytes

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        padding = BLOCK_SIZE - len(data) % BLOCK_SIZE
        iv = os.urandom(BLOCK_SIZE)
        encryptor = Cipher(self._algorithm, modes.CBC(iv)).encryptor()
        return iv + encryptor.update(data + bytes([padding]) * padding) + encryptor.finalize()

    def from_storage(self, data: bytes, context: bytes) -> tuple[bytes, bool]:
        if len(data) < BLOCK_SIZE:
            raise TransformError("the stored data was shorter than the required size")
        iv, ciphertext = data[:BLOCK_SIZE], data[BLOCK_SIZE:]
        if len(ciphertext) % BLOCK_SIZE != 0:
            raise TransformError("the stored data is not a multiple of the block size")
        decryptor = Cipher(self._algorithm, modes.CBC(iv)).decryptor()
        result = decryptor.update(ciphertext) + decryptor.finalize()
        padding = result[-1] if result else 0
        if padding == 0 or padding > len(result):
            raise TransformError("invalid PKCS7 data (empty or not padded)")
        if result[-padding:] != bytes([padding]) * padding:
            raise TransformError("invalid padding on input")
        return result[:-padding], False

    def stale(self, data: bytes) -> bool:
        return False


__all__ = ["BLOCK_SIZE", "CBCTransformer"]
