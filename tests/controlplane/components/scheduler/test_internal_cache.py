"""The scheduler cache's dicts note every key written, whichever dict method writes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controlplane.components.scheduler.internal_cache import ChangeTrackingDict

Mutation = Callable[[dict[str, Any]], object]


@pytest.mark.parametrize(
    ("mutate", "changed"),
    [
        (lambda d: d.__setitem__("c", {}), {"c"}),
        (lambda d: d.__delitem__("a"), {"a"}),
        (lambda d: d.pop("a"), {"a"}),
        (lambda d: d.pop("missing", None), {"missing"}),
        (lambda d: d.popitem(), {"b"}),
        (lambda d: d.setdefault("c", {}), {"c"}),
        (lambda d: d.setdefault("a", {}), set()),  # present already: nothing written
        (lambda d: d.clear(), {"a", "b"}),
        (lambda d: d.update({"a": {}}, c={}), {"a", "c"}),
        (lambda d: d.update([("d", {})]), {"d"}),
        (lambda d: d.__ior__({"e": {}}), {"e"}),
    ],
)
def test_every_mutating_method_records_the_keys_it_touches(mutate: Mutation, changed: set[str]) -> None:
    keys: set[str] = set()
    tracked = ChangeTrackingDict(keys)
    dict.update(tracked, {"a": {"name": "a"}, "b": {"name": "b"}})  # untracked, to start from a state
    expected = dict(tracked)
    mutate(expected)
    mutate(tracked)
    assert keys == changed
    assert dict(tracked) == expected  # and the dict itself behaves as a dict


def test_pop_and_setdefault_return_what_a_dict_returns() -> None:
    tracked = ChangeTrackingDict(set())
    assert tracked.setdefault("a", {"x": 1}) == {"x": 1}
    assert tracked.setdefault("a", {"x": 2}) == {"x": 1}
    assert tracked.pop("a") == {"x": 1}
    assert tracked.pop("a", None) is None
    with pytest.raises(KeyError):
        tracked.pop("a")
    with pytest.raises(KeyError):
        tracked.popitem()
