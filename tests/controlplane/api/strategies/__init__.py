"""Tests of the per-kind strategies, driven the way the registry drives them.

``create`` and ``update`` below replay ``controlplane.apiserver.registry``'s order (prepare, default,
validate) on plain dicts, and return the object with the messages a 422 would carry, so each test
reads as "this is what kubectl would print". Expected texts are upstream's, taken from
``pkg/apis/*/validation/validation_test.go`` where practical and from the validation code otherwise.
"""

from __future__ import annotations

import copy

from controlplane.api.meta import Object
from controlplane.api.strategies.base import Strategy

CREATED = "2025-01-01T00:00:00Z"


def create(strategy: Strategy, obj: Object, *, namespaced: bool = True) -> tuple[Object, list[str]]:
    """POST: the object as stored, and the 422 messages (empty when valid)."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    if namespaced:
        meta.setdefault("namespace", "default")
    meta.setdefault("uid", "11111111-1111-1111-1111-111111111111")
    meta["creationTimestamp"] = CREATED
    strategy.prepare_for_create(obj)
    strategy.default(obj)
    return obj, [e.message() for e in strategy.validate(obj, namespaced=namespaced)]


def stored(strategy: Strategy, obj: Object, *, namespaced: bool = True) -> Object:
    """A valid object as the registry would have stored it (fails the test if it is invalid)."""
    result, errors = create(strategy, obj, namespaced=namespaced)
    assert errors == [], errors
    return result


def update(
    strategy: Strategy, new: Object, old: Object, *, namespaced: bool = True
) -> tuple[Object, list[str]]:
    """PUT of ``new`` over the stored ``old``: the result and the 422 messages."""
    new = copy.deepcopy(new)
    meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
    for field in ("name", "namespace", "uid", "creationTimestamp", "generation"):
        if field in old_meta:
            meta[field] = old_meta[field]
    strategy.prepare_for_update(new, old)
    strategy.default(new)
    return new, [e.message() for e in strategy.validate_update(new, old, namespaced=namespaced)]


def status_update(
    strategy: Strategy, new: Object, old: Object, *, namespaced: bool = True
) -> tuple[Object, list[str]]:
    """PUT to ``/status``."""
    new = copy.deepcopy(new)
    strategy.prepare_for_status_update(new, old)
    return new, [e.message() for e in strategy.validate_status_update(new, old, namespaced=namespaced)]
