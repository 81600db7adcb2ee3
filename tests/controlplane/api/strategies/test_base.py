"""The base strategy's status write: the stored object's fields, the write's status and metadata."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api.strategies.base import Strategy


def stored() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "paused": False, "template": {"spec": {"containers": [{"name": "a"}]}}},
        "status": {"replicas": 1},
    }


def test_a_status_write_keeps_the_stored_spec_and_shares_nothing_with_it() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 3}
    new["metadata"]["labels"]["tier"] = "front"
    Strategy().prepare_for_status_update(new, old)
    assert new["status"] == {"replicas": 3} and new["metadata"]["labels"]["tier"] == "front"
    assert new["spec"] == old["spec"]
    new["spec"]["template"]["spec"]["containers"][0]["name"] = "changed"
    assert old["spec"]["template"]["spec"]["containers"][0]["name"] == "a", "no dict is shared with old"


def test_a_spec_changed_through_status_is_the_stored_one_again_even_where_python_calls_it_equal() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3.0  # == 3 in Python, another JSON number
    new["spec"]["paused"] = 0  # == False in Python, not a JSON boolean
    new["spec"]["template"]["spec"]["containers"].append({"name": "b"})
    Strategy().prepare_for_status_update(new, old)
    assert new["spec"] == old["spec"]
    assert type(new["spec"]["replicas"]) is int and new["spec"]["paused"] is False
    assert new["spec"] is not old["spec"]
