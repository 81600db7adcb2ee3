"""Redaction: a trace shows which Secret was touched, never what it holds.

The trace is shown to every student who may see a cluster, and exported runs are handed around. A
Secret's data must never be in either. Emitters keep to that by carrying keys, revisions and sizes,
not object contents (``schema.py``). This module is the safety net for the places where contents do
travel (an inspector's request body, an admission patch), applied to every exported event:

- in any object of ``kind: Secret``, every value under ``data`` and ``stringData`` becomes
  ``"<redacted: N bytes>"``: the keys stay, so a student still sees *that* ``password`` is set;
- in an event about a Secret (its ``key``, ``path`` or ``prefix`` is under ``secrets``, or its
  ``resource`` is ``secrets``), whole bodies (``body``, ``object``, ``old_object``, ``request_body``,
  ``response_body``, ``patch``) become ``{"redacted": true, "size": N}``;
- raw bytes anywhere (store values) become ``"<N bytes>"``.

``redact`` returns the event itself when there is nothing to hide (the common case), else a copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

#: Fields that hold whole objects or patches: hidden entirely in events about Secrets.
BODY_FIELDS = frozenset({"body", "object", "old_object", "request_body", "response_body", "patch"})

#: A Secret's fields that hold its values.
SECRET_DATA_FIELDS = ("data", "stringData")

#: A store key, URL path or prefix that holds (or may hold) Secrets: errs on the side of hiding.
_SECRET_LOCATION = re.compile(r"(^|/)secrets(/|$)")


def is_secret_key(location: str) -> bool:
    """Whether a store key (``/registry/secrets/ns/db``), URL path or prefix is about Secrets."""
    # The substring test first: most locations name no Secret, and it is far cheaper than the pattern.
    return "secrets" in location and _SECRET_LOCATION.search(location) is not None


def concerns_secret(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is about a Secret (by its key, path, prefix or resource)."""
    if event.get("resource") in ("secrets", "secret"):
        return True
    return any(
        isinstance(value := event.get(name), str) and is_secret_key(value.split("?", 1)[0])
        for name in ("key", "path", "prefix")
    )


def _size(value: Any) -> int:
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, str):
        return len(value.encode())
    return len(json.dumps(value, default=str).encode())


#: Values that never hold anything to hide: the leaves of almost every event, skipped at once.
_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def _holds_secret_values(value: Any) -> bool:
    """Whether ``_scrub`` would change ``value``: a walk that allocates nothing. Almost no event holds
    bytes or a Secret's data, and the trace socket redacts every event it sends, so the common case
    reads the event once instead of copying it."""
    kind = type(value)
    if kind in _PLAIN:
        return False
    if kind is bytes or kind is bytearray:
        return True
    if isinstance(value, Mapping):
        if value.get("kind") == "Secret" and any(
            isinstance(value.get(f), Mapping) for f in SECRET_DATA_FIELDS
        ):
            return True
        # Loops rather than any(): no generator per mapping, on the path every event takes.
        for item in value.values():  # noqa: SIM110
            if type(item) not in _PLAIN and _holds_secret_values(item):
                return True
        return False
    if isinstance(value, list | tuple):
        for item in value:  # noqa: SIM110
            if type(item) not in _PLAIN and _holds_secret_values(item):
                return True
        return False
    return isinstance(value, bytes | bytearray)


def _scrub(value: Any) -> tuple[Any, bool]:
    """``value`` with Secret data and bytes hidden, and whether anything changed."""
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>", True
    if isinstance(value, Mapping):
        changed = False
        out: dict[str, Any] = {}
        is_secret = value.get("kind") == "Secret"
        for key, item in value.items():
            if is_secret and key in SECRET_DATA_FIELDS and isinstance(item, Mapping):
                out[key] = {k: f"<redacted: {_size(v)} bytes>" for k, v in item.items()}
                changed = True
                continue
            new, item_changed = _scrub(item)
            out[key] = new
            changed = changed or item_changed
        return (out if changed else value), changed
    if isinstance(value, list | tuple):
        items = [_scrub(item) for item in value]
        if any(changed for _, changed in items):
            return [new for new, _ in items], True
        return value, False
    return value, False


def redact(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """``event`` without Secret values (itself if it holds none)."""
    result: Mapping[str, Any] = event
    if concerns_secret(event) and not BODY_FIELDS.isdisjoint(event):
        result = {
            k: ({"redacted": True, "size": _size(v)} if k in BODY_FIELDS and v is not None else v)
            for k, v in event.items()
        }
    if not _holds_secret_values(result):
        return result
    scrubbed, changed = _scrub(result)
    return scrubbed if changed else result


__all__ = ["BODY_FIELDS", "SECRET_DATA_FIELDS", "concerns_secret", "is_secret_key", "redact"]
