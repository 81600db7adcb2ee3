"""The JSON serializer: API objects to bytes and back, as fast as the hot paths need.

kube-apiserver turns every object into bytes at least twice per write (the stored form, the watch
event) and every client turns those bytes back into objects (apimachinery's
``runtime/serializer/json``). Here the same happens in one Python process for the API server and
every in-process component, so it is the busiest code in a lab: ``encode`` and ``decode`` use
orjson, a JSON library written in Rust that does both several times faster than the standard
library and shares the key strings of the objects it decodes (``"metadata"``, ``"name"``, ... are
one string each, not one per object), which also makes every cached object smaller.

Two things orjson does differently are pinned down here:

- Integers: Kubernetes' numbers are int64 (or int32) fields. ``encode`` refuses an integer that does
  not fit 64 bits (``UnencodableObject``) instead of writing something no client could decode, so
  nothing stored ever holds one; orjson would read one back as a float.
- Non-ASCII text is written as UTF-8, as Go's encoder does, not as ``\\u`` escapes.

Request bodies are not decoded here: they go through ``api/strict.py``, which must see duplicate
fields (a strict decoder's job) and so uses the standard library's hooks.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class UnencodableObject(ValueError):
    """The object holds something JSON for Kubernetes cannot carry (an integer beyond 64 bits, a
    non-string key)."""


def encode(obj: Any) -> bytes:
    """Compact JSON, keys in the object's order (what the store and the wire carry)."""
    try:
        return orjson.dumps(obj)
    except TypeError as error:
        raise UnencodableObject(str(error)) from None


def decode(data: bytes | bytearray | memoryview | str) -> Any:
    """The object in ``data``; ``json.JSONDecodeError`` (a ``ValueError``) if it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson refuses a few things the standard library reads (numbers too big for a double);
        # let it decide, so both read the same documents.
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)
