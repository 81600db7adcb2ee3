"""deep_copy: an API object copied so that changing the copy never changes the original."""

from __future__ import annotations

from typing import Any

from controlplane.api.deepcopy import deep_copy


def test_the_copy_is_equal_and_shares_no_dict_or_list() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "web", "labels": {"app": "web"}, "generation": 2},
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}], "hostNetwork": False},
        "status": {"phase": None, "ratio": 0.5},
    }
    copied = deep_copy(pod)
    assert copied == pod
    copied["metadata"]["labels"]["app"] = "changed"
    copied["spec"]["containers"][0]["ports"].append({"containerPort": 443})
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]


def test_what_pickle_cannot_copy_is_copied_by_copy_deepcopy() -> None:
    class Local:  # pickle cannot find a class defined in a function; copy.deepcopy copies it
        def __init__(self) -> None:
            self.items = [1]

    value = {"local": Local()}
    copied = deep_copy(value)
    assert isinstance(copied["local"], Local) and copied["local"].items == [1]
    assert copied["local"] is not value["local"] and copied["local"].items is not value["local"].items
