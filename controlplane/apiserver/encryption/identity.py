"""The identity provider: values stored as they are, in plaintext.

Listed first, it turns encryption off for new writes; listed after an encrypting provider, it lets the
API server still read the values written before encryption was turned on. It refuses a value that
starts with ``k8s:enc:``, so that such a value goes to the provider that can decrypt it
(upstream ``k8s.io/apiserver/pkg/storage/value/encrypt/identity/identity.go``).
"""

from __future__ import annotations

from controlplane.apiserver.encryption.transformer import ENCRYPTED_PREFIX, TransformError


class IdentityTransformer:
    """Stores values unchanged; refuses to "read" encrypted ones."""

    def from_storage(self, data: bytes, context: bytes) -> tuple[bytes, bool]:
        if data.startswith(ENCRYPTED_PREFIX):
            raise TransformError("identity transformer tried to read encrypted data")
        return data, False

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        return data

    def stale(self, data: bytes) -> bool:
        # Written by identity now means written in plaintext: an encrypted value is stale.
        return data.startswith(ENCRYPTED_PREFIX)


__all__ = ["IdentityTransformer"]
