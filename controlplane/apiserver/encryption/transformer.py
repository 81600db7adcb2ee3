"""Transformers: how a value is changed on its way into the store and back.

A **transformer** has two methods (upstream's ``value.Transformer``,
``k8s.io/apiserver/pkg/storage/value/transformer.go``):

- ``to_storage(data, context)``: the bytes to store for ``data``;
- ``from_storage(data, context)``: the original bytes, and whether the value is **stale**, that is,
  not written the way a write would write it now (by an older key). A stale value is rewritten by the
  next update even if the object did not change, which is how ``kubectl replace`` re-encrypts.

``context`` is the value's *authenticated data*: the store key (``/registry/secrets/ns/name``). An
AEAD cipher (AES-GCM) binds the ciphertext to it, so a value copied to another key does not decrypt.

**Prefixes.** Several transformers can read one resource: each owns a prefix, and a stored value is
given to the first transformer whose prefix it starts with, without the prefix
(``PrefixTransformers``; upstream ``NewPrefixTransformers``). Writing always uses the first one and
puts its prefix in front. Providers are chosen by ``k8s:enc:<provider>:v1:`` and, inside a provider,
keys by ``<key name>:``: two nested levels of the same idea. The identity provider's prefix is empty,
so it matches everything, and it refuses values that start with ``k8s:enc:`` (they are encrypted), so
that the next provider is tried.

Errors are types: ``TransformError`` carries upstream's message, which the API server puts in its 500.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

#: Every encrypted value starts with this (upstream reserves it: identity refuses such values).
ENCRYPTED_PREFIX = b"k8s:enc:"


class TransformError(Exception):
    """A stored value this transformer cannot turn back into the original (wrong key, corrupted)."""


class NoMatchingPrefix(TransformError):
    """No transformer's prefix matches the value (upstream: "no matching prefix found")."""


class Transformer(Protocol):
    """Turns stored values into original ones and back (see the module docstring)."""

    def from_storage(self, data: bytes, context: bytes) -> tuple[bytes, bool]:
        """The original bytes of ``data`` and whether it is stale; ``TransformError`` if unreadable."""
        ...

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        """The bytes to store for ``data``."""
        ...

    def stale(self, data: bytes) -> bool:
        """Whether ``data`` (as stored) would be written differently now, judged by its prefixes only."""
        ...


@dataclass(frozen=True, slots=True)
class PrefixTransformer:
    """A transformer and the prefix its values carry."""

    prefix: bytes
    transformer: Transformer


class PrefixTransformers:
    """Reads with the transformer whose prefix a value starts with; writes with the first one."""

    def __init__(self, transformers: Sequence[PrefixTransformer], *, no_match: str) -> None:
        if not transformers:
            raise ValueError("PrefixTransformers needs at least one transformer")
        self.transformers = tuple(transformers)
        #: The message when no prefix matches (upstream passes one per level).
        self.no_match = no_match

    def from_storage(self, data: bytes, context: bytes) -> tuple[bytes, bool]:
        errors: list[str] = []
        for index, candidate in enumerate(self.transformers):
            if not data.startswith(candidate.prefix):
                continue
            try:
                result, stale = candidate.transformer.from_storage(data[len(candidate.prefix) :], context)
            except TransformError as error:
                # The identity provider refusing an encrypted value is not an error: the next
                # provider reads it. Two providers of the same kind share a prefix (the one rotated
                # to and the one rotated from): a failure of the first must not hide the second.
                if candidate.prefix:
                    errors.append(str(error))
                continue
            return result, stale or index != 0
        if errors:
            raise TransformError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        raise NoMatchingPrefix(self.no_match)

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        first = self.transformers[0]
        return first.prefix + first.transformer.to_storage(data, context)

    def stale(self, data: bytes) -> bool:
        first = self.transformers[0]
        if not data.startswith(first.prefix):
            return True
        return first.transformer.stale(data[len(first.prefix) :])


__all__ = [
    "ENCRYPTED_PREFIX",
    "NoMatchingPrefix",
    "PrefixTransformer",
    "PrefixTransformers",
    "TransformError",
    "Transformer",
]
