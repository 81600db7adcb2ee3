"""The Indexer (client-go tools/cache): keys, the namespace index and indexes on fields."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    KeyFuncError,
    field_index_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)

NODE_INDEX = "nodeName"


def pod(name: str, namespace: str = "default", node: str = "", rv: str = "1") -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, "spec": spec}


def indexer() -> Indexer:
    return Indexer(
        indexers={NAMESPACE_INDEX: meta_namespace_index_func, NODE_INDEX: field_index_func("spec.nodeName")}
    )


def test_keys_are_namespace_slash_name_or_just_the_name() -> None:
    assert meta_namespace_key_func(pod("web")) == "default/web"
    assert meta_namespace_key_func({"metadata": {"name": "node-1"}}) == "node-1"
    assert meta_namespace_key_func(DeletedFinalStateUnknown("ns/gone", None)) == "ns/gone"
    assert split_meta_namespace_key("ns/web") == ("ns", "web")
    assert split_meta_namespace_key("node-1") == ("", "node-1")
    with pytest.raises(ValueError):
        split_meta_namespace_key("a/b/c")
    with pytest.raises(KeyFuncError):
        meta_namespace_key_func({"metadata": {}})


def test_the_store_holds_the_latest_object_per_key() -> None:
    store = indexer()
    store.add(pod("a", rv="1"))
    store.update(pod("a", rv="2"))
    store.add(pod("b"))
    assert store.get_by_key("default/a") == pod("a", rv="2")
    assert store.get(pod("a")) == pod("a", rv="2")
    assert sorted(store.list_keys()) == ["default/a", "default/b"]
    store.delete(pod("a"))
    store.delete(DeletedFinalStateUnknown("default/b", None))
    assert len(store) == 0
    store.delete(pod("never-there"))  # no error


def test_indexes_follow_every_change() -> None:
    store = indexer()
    store.add(pod("a", node="n1"))
    store.add(pod("b", node="n1"))
    store.add(pod("c", namespace="kube-system", node="n2"))
    store.add(pod("pending"))  # no node: not filed in that index
    assert [p["metadata"]["name"] for p in store.by_index(NODE_INDEX, "n1")] == ["a", "b"]
    assert store.index_keys(NAMESPACE_INDEX, "kube-system") == ["kube-system/c"]
    assert store.list_index_func_values(NODE_INDEX) == ["n1", "n2"]

    store.update(pod("a", node="n2"))  # moved: out of n1, into n2
    assert store.index_keys(NODE_INDEX, "n1") == ["default/b"]
    assert store.index_keys(NODE_INDEX, "n2") == ["default/a", "kube-system/c"]
    assert [p["metadata"]["name"] for p in store.index(NODE_INDEX, pod("x", node="n2"))] == ["a", "c"]

    store.delete(pod("b"))
    assert store.list_index_func_values(NODE_INDEX) == ["n2"]  # empty values disappear
    with pytest.raises(KeyError):
        store.by_index("nope", "x")


def test_replace_rebuilds_objects_and_indexes() -> None:
    store = indexer()
    store.add(pod("a", node="n1"))
    store.replace([pod("b", node="n2")], "10")
    assert store.list_keys() == ["default/b"]
    assert store.index_keys(NODE_INDEX, "n1") == []
    assert store.index_keys(NODE_INDEX, "n2") == ["default/b"]


def test_indexers_added_later_index_what_is_already_there() -> None:
    store = Indexer()
    store.add(pod("a", node="n1"))
    store.add_indexers({NODE_INDEX: field_index_func("spec.nodeName")})
    assert store.index_keys(NODE_INDEX, "n1") == ["default/a"]
    with pytest.raises(ValueError, match="conflict"):
        store.add_indexers({NODE_INDEX: field_index_func("spec.nodeName")})
