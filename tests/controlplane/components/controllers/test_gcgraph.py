"""The garbage collector's graph and decisions, pure: no API server, no asyncio."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controlplane.components.controllers.gcgraph import (
    BACKGROUND,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN,
    ORPHAN_FINALIZER,
    AbsentOwnerCache,
    Classified,
    DeleteItem,
    DependencyGraph,
    KeepItem,
    ObjectReference,
    ObservedObject,
    OwnerReference,
    OwnerState,
    RemoveOwnerReferences,
    classify,
    decide,
    owner_state,
    references_diffs,
    remove_finalizer_patch,
    remove_owner_references_patch,
    unblock_owner_references_patch,
)


def ident(
    kind: str, name: str, uid: str, namespace: str = "shop", api_version: str = "v1"
) -> ObjectReference:
    return ObjectReference(api_version, kind, name, uid, namespace)


def ref(owner: ObjectReference, *, block: bool = False, controller: bool = False) -> OwnerReference:
    return OwnerReference(owner.api_version, owner.kind, owner.name, owner.uid, controller, block)


def seen(
    identity: ObjectReference,
    *owners: OwnerReference,
    deleting: bool = False,
    finalizers: tuple[str, ...] = (),
) -> ObservedObject:
    return ObservedObject(identity, tuple(owners), deleting, frozenset(finalizers))


DEPLOY = ident("Deployment", "web", "d1", api_version="apps/v1")
RS = ident("ReplicaSet", "web-7d", "r1", api_version="apps/v1")
POD_A = ident("Pod", "web-7d-a", "p1")
POD_B = ident("Pod", "web-7d-b", "p2")


def chain() -> DependencyGraph:
    graph = DependencyGraph()
    graph.observe(seen(DEPLOY))
    graph.observe(seen(RS, ref(DEPLOY, block=True, controller=True)))
    graph.observe(seen(POD_A, ref(RS, block=True, controller=True)))
    graph.observe(seen(POD_B, ref(RS, controller=True)))
    return graph


# -- building the graph ------------------------------------------------------------------------------


def test_a_dependent_seen_before_its_owner_makes_a_virtual_owner_to_be_checked() -> None:
    graph = DependencyGraph()
    actions = graph.observe(seen(POD_A, ref(RS)))
    owner = graph.node("r1")
    assert owner is not None and owner.virtual
    assert owner.dependents == {"p1"}
    assert actions.attempt_to_delete == ["r1"]  # "does it exist?" is asked of the API server

    actions = graph.observe(seen(RS))
    assert not graph.nodes["r1"].virtual
    assert actions.attempt_to_delete == []
    assert graph.nodes["r1"].dependents == {"p1"}


def test_deleting_an_owner_queues_its_dependents_and_remembers_it_is_absent() -> None:
    graph = chain()
    actions = graph.observe_deleted(seen(RS, ref(DEPLOY, block=True)))
    assert actions.attempt_to_delete == ["p1", "p2"]
    assert "r1" not in graph.nodes
    assert graph.nodes["d1"].dependents == set()
    assert RS in graph.absent_owners


def test_foreground_deletion_starts_once_and_queues_the_dependents_and_the_owner() -> None:
    graph = chain()
    marked = seen(RS, ref(DEPLOY, block=True), deleting=True, finalizers=(FOREGROUND_FINALIZER,))
    actions = graph.observe(marked, seen(RS, ref(DEPLOY, block=True)))
    assert graph.nodes["r1"].deleting_dependents
    assert actions.attempt_to_delete == ["p1", "p2", "r1"]
    # The same state again (a resync) is no new transition.
    assert graph.observe(marked, marked).attempt_to_delete == []


def test_orphan_deletion_queues_the_owner_for_orphaning() -> None:
    graph = chain()
    marked = seen(RS, ref(DEPLOY, block=True), deleting=True, finalizers=(ORPHAN_FINALIZER,))
    actions = graph.observe(marked, seen(RS, ref(DEPLOY, block=True)))
    assert actions.attempt_to_orphan == ["r1"]
    assert actions.attempt_to_delete == []


def test_only_dependents_with_block_owner_deletion_block() -> None:
    graph = chain()
    assert [n.uid for n in graph.dependents(graph.nodes["r1"])] == ["p1", "p2"]
    assert [n.uid for n in graph.blocking_dependents(graph.nodes["r1"])] == ["p1"]


def test_the_last_blocking_dependent_going_wakes_an_owner_deleting_dependents() -> None:
    graph = chain()
    graph.observe(seen(RS, ref(DEPLOY, block=True), deleting=True, finalizers=(FOREGROUND_FINALIZER,)))
    actions = graph.observe_deleted(seen(POD_A, ref(RS, block=True)))
    assert actions.attempt_to_delete == ["r1"]


def test_a_blocking_reference_removed_or_unblocked_wakes_its_owner() -> None:
    graph = chain()
    actions = graph.observe(seen(POD_A), seen(POD_A, ref(RS, block=True)))
    assert actions.attempt_to_delete == ["r1"]
    assert "p1" not in graph.nodes["r1"].dependents

    graph = chain()
    actions = graph.observe(seen(POD_A, ref(RS, block=False)), seen(POD_A, ref(RS, block=True)))
    assert actions.attempt_to_delete == ["r1"]
    assert graph.blocking_dependents(graph.nodes["r1"]) == []


def test_an_owner_in_another_namespace_is_reported_and_the_dependent_checked() -> None:
    graph = DependencyGraph()
    other = ident("ConfigMap", "settings", "c1", namespace="other")
    graph.observe(seen(other))
    stray = ident("ConfigMap", "stray", "c2", namespace="shop")
    actions = graph.observe(seen(stray, ref(other)))
    assert actions.invalid_namespace_owner_refs == [(stray, ref(other))]
    assert actions.attempt_to_delete == ["c2"]


def test_a_cluster_scoped_owner_may_own_objects_in_any_namespace() -> None:
    graph = DependencyGraph()
    node = ident("Node", "node-1", "n1", namespace="")
    lease = ident("Lease", "node-1", "l1", namespace="kube-node-lease", api_version="coordination.k8s.io/v1")
    graph.observe(seen(lease, ref(node)))  # the virtual owner takes the dependent's namespace ...
    actions = graph.observe(seen(node))  # ... until the informer shows it cluster-scoped
    assert graph.nodes["n1"].identity == node
    assert actions.invalid_namespace_owner_refs == []


def test_a_virtual_delete_removes_a_virtual_owner_and_queues_its_dependents() -> None:
    graph = DependencyGraph()
    graph.observe(seen(POD_A, ref(RS)))
    actions = graph.virtual_delete(RS)
    assert "r1" not in graph.nodes
    assert actions.attempt_to_delete == ["p1"]


def test_a_virtual_delete_with_other_coordinates_keeps_an_observed_node() -> None:
    graph = chain()
    wrong = ident("ReplicaSet", "not-web", "r1", api_version="apps/v1")
    actions = graph.virtual_delete(wrong)
    assert "r1" in graph.nodes
    assert actions.attempt_to_delete == []


def test_references_diffs() -> None:
    a, b, c = ref(DEPLOY), ref(RS), ref(POD_A)
    b_blocking = ref(RS, block=True)
    added, removed, changed = references_diffs([a, b], [b_blocking, c])
    assert added == [c]
    assert removed == [a]
    assert changed == [(b, b_blocking)]


def test_the_absent_owner_cache_forgets_the_least_recently_used() -> None:
    cache = AbsentOwnerCache(size=2)
    cache.add(DEPLOY)
    cache.add(RS)
    assert DEPLOY in cache  # touched: now the most recent
    cache.add(POD_A)
    assert RS not in cache
    assert DEPLOY in cache and POD_A in cache
    assert len(cache) == 2


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_graph_matches_the_owner_references_whatever_the_order_of_events(seed: int) -> None:
    rng = random.Random(seed)
    objects = [ident("ConfigMap", f"cm-{i}", f"u{i}") for i in range(12)]
    owners: dict[str, list[ObjectReference]] = {
        o.uid: rng.sample(objects[:i], k=min(i, rng.randint(0, 2))) for i, o in enumerate(objects)
    }
    order = list(objects)
    rng.shuffle(order)
    graph = DependencyGraph()
    for obj in order:
        graph.observe(seen(obj, *(ref(o) for o in owners[obj.uid])))
    assert set(graph.nodes) == {o.uid for o in objects}
    assert not any(n.virtual for n in graph.nodes.values())
    for obj in objects:
        expected = {d.uid for d in objects if obj in owners[d.uid]}
        assert graph.nodes[obj.uid].dependents == expected, obj.name
    # Deleting in another random order leaves every remaining node consistent.
    rng.shuffle(order)
    for obj in order[:6]:
        graph.observe_deleted(seen(obj, *(ref(o) for o in owners[obj.uid])))
    alive = {o.uid for o in order[6:]}
    for uid in alive:
        expected = {d for d in alive if any(o.uid == uid for o in owners[d])}
        assert graph.nodes[uid].dependents == expected


# -- decisions ---------------------------------------------------------------------------------------


def test_owner_state_from_the_live_object() -> None:
    owner = ref(RS)
    assert owner_state(owner, None) is OwnerState.ABSENT
    assert owner_state(owner, {"metadata": {"uid": "another"}}) is OwnerState.ABSENT
    assert owner_state(owner, {"metadata": {"uid": "r1"}}) is OwnerState.SOLID
    waiting = {"metadata": {"uid": "r1", "deletionTimestamp": "t", "finalizers": [FOREGROUND_FINALIZER]}}
    assert owner_state(owner, waiting) is OwnerState.WAITING_FOR_DEPENDENTS_DELETION
    orphaning = {"metadata": {"uid": "r1", "deletionTimestamp": "t", "finalizers": [ORPHAN_FINALIZER]}}
    assert owner_state(owner, orphaning) is OwnerState.SOLID


def test_decide() -> None:
    a, b = ref(DEPLOY), ref(RS)
    states = {"d1": OwnerState.SOLID, "r1": OwnerState.ABSENT}
    assert classify([a, b], states) == Classified(solid=(a,), dangling=(b,))
    assert isinstance(decide([], Classified(), has_dependents=False), KeepItem)
    assert isinstance(decide([], Classified(solid=(a,)), has_dependents=False), KeepItem)
    # Another owner lives: only the dangling reference goes.
    assert decide([], Classified(solid=(a,), dangling=(b,)), has_dependents=False) == RemoveOwnerReferences(
        ("r1",)
    )
    assert decide([], Classified(dangling=(b,)), has_dependents=True) == DeleteItem(BACKGROUND)
    assert decide([ORPHAN_FINALIZER], Classified(dangling=(b,)), has_dependents=True) == DeleteItem(ORPHAN)
    assert decide([FOREGROUND_FINALIZER], Classified(dangling=(b,)), has_dependents=False) == DeleteItem(
        FOREGROUND
    )
    # Waiting owner and dependents of our own: foreground, so the wait covers the whole chain.
    assert decide([], Classified(waiting=(a,)), has_dependents=True) == DeleteItem(FOREGROUND)
    assert decide(
        [], Classified(waiting=(a,)), has_dependents=True, a_dependent_is_deleting_dependents=True
    ) == DeleteItem(FOREGROUND, unblock_first=True)
    assert decide([], Classified(waiting=(a,)), has_dependents=False) == DeleteItem(BACKGROUND)


def _obj(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": "7", **meta}}


def test_patches_carry_the_resource_version_and_what_remains() -> None:
    refs = [{"uid": "a", "name": "x"}, {"uid": "b", "name": "y", "blockOwnerDeletion": True}]
    assert remove_owner_references_patch(_obj(ownerReferences=refs), ["a"]) == {
        "metadata": {"ownerReferences": [refs[1]], "resourceVersion": "7"}
    }
    assert remove_owner_references_patch(_obj(ownerReferences=refs), ["a", "b"]) == {
        "metadata": {"ownerReferences": None, "resourceVersion": "7"}
    }
    unblocked = unblock_owner_references_patch(_obj(ownerReferences=refs))
    assert [r.get("blockOwnerDeletion") for r in unblocked["metadata"]["ownerReferences"]] == [None, False]
    assert remove_finalizer_patch(_obj(finalizers=["orphan", "x.io/y"]), "orphan") == {
        "metadata": {"finalizers": ["x.io/y"], "resourceVersion": "7"}
    }
    assert remove_finalizer_patch(_obj(finalizers=["orphan"]), "orphan") == {
        "metadata": {"finalizers": None, "resourceVersion": "7"}
    }
    assert remove_finalizer_patch(_obj(), "orphan") is None


def test_object_reference_prints_like_upstream() -> None:
    assert str(RS) == "[apps/v1/ReplicaSet, namespace: shop, name: web-7d, uid: r1]"
