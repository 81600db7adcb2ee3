"""Where the transformers meet the store: the calls the registry and the watch cache make.

The registry encodes an object to JSON and hands the bytes here with the object's store key
(``seal``); it reads a stored value back through ``open_json``. The store key is the authenticated
data, as upstream's etcd3 store passes it (``authenticatedDataString``,
``k8s.io/apiserver/pkg/storage/etcd3/store.go``).

A value that cannot be read (its key was removed from the configuration, a byte was changed on disk)
is answered as upstream answers it: **500 InternalError** ``unable to transform key "<key>": <why>``
(``UnreadableValue``, a ``StatusError``). The value stays in the store untouched: restoring the key
makes it readable again, and deleting the object removes it.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.apiserver import errors
from controlplane.apiserver.encryption.transformer import Transformer, TransformError
from controlplane.store import KeyValue


class UnreadableValue(errors.StatusError):
    """A stored value no configured provider can read (or that does not decode once decrypted)."""

    def __init__(self, key: str, reason: str) -> None:
        message = f'unable to transform key "{key}": {reason}'
        error = errors.internal_error(message)
        super().__init__(error.code, error.reason, error.message, error.details)
        self.key = key
        #: Why the value could not be read (``reason`` is the Status reason, InternalError).
        self.why = reason


def seal(transformer: Transformer, data: bytes, key: str) -> bytes:
    """The bytes to store under ``key`` for the plaintext ``data``."""
    return transformer.to_storage(data, key.encode())


def open_value(transformer: Transformer, kv: KeyValue) -> tuple[bytes, bool]:
    """The plaintext of a stored value and whether it is stale; ``UnreadableValue`` if unreadable."""
    try:
        return transformer.from_storage(kv.value, kv.key.encode())
    except TransformError as error:
        raise UnreadableValue(kv.key, str(error)) from None


def open_json(transformer: Transformer, kv: KeyValue) -> Any:
    """The decoded JSON document of a stored value; ``UnreadableValue`` if it cannot be read."""
    data, _ = open_value(transformer, kv)
    try:
        return json.loads(data)
    except ValueError as error:
        raise UnreadableValue(kv.key, f"cannot decode the decrypted value: {error}") from None


__all__ = ["UnreadableValue", "open_json", "open_value", "seal"]
