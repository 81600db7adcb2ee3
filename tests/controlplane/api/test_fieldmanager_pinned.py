"""The field manager's and strict decoding's output, pinned byte for byte.

The field manager runs on every write, so it is tuned for speed (shared subtrees in set algebra,
equal subtrees skipped in C, caches of path elements and schema lookups). None of that may change
what lands in ``metadata.managedFields``: these scenarios replay the writes a cluster makes (pod
create, binding, kubelet status, label edits, Deployment apply, conflicts, forced apply, status,
Events, values of the wrong type) and compare each result, as JSON text with its key order, with
``fieldmanager_pinned.json``, recorded before the tuning.

Regenerate the file (only for an intended change of output) with
``python -m tests.controlplane.api.test_fieldmanager_pinned``.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import strict
from controlplane.api.fieldmanager import fieldpath, typed
from controlplane.api.fieldmanager.conflicts import ConflictError
from controlplane.api.fieldmanager.fieldpath import Set, make_path
from controlplane.api.fieldmanager.managedfields import ApplyError, FieldManager
from controlplane.api.meta import Object

PINNED = Path(__file__).with_name("fieldmanager_pinned.json")


def _clock() -> Callable[[], str]:
    ticks = iter(range(3600))

    def now() -> str:
        tick = next(ticks)
        return f"2025-01-01T10:{tick // 60:02d}:{tick % 60:02d}Z"

    return now


def _manager(now: Callable[[], str], group: str, kind: str, subresource: str = "") -> FieldManager:
    node = typed.root_for_kind(group, "v1", kind)
    assert node is not None
    reset: Set | None = None
    if subresource == "status":
        reset = Set([make_path("spec"), make_path("metadata")])
    elif kind != "Event":
        reset = Set([make_path("status")])
    return FieldManager(
        group=group, version="v1", kind=kind, node=node, now=now, subresource=subresource, reset_fields=reset
    )


def _pod() -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "uid": "u-1",
            "labels": {"app": "web"},
            "annotations": {"note": "x"},
            "finalizers": ["a.example.com/x", "b.example.com/y"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": "rs-1",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
                    "env": [{"name": "A", "value": "1"}],
                    "args": ["--x", "--y"],
                    "resources": {"requests": {"cpu": "10m"}},
                }
            ],
            "restartPolicy": "Always",
            "priority": 0,
            "enableServiceLinks": True,
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    }


def _deployment(image: str = "nginx", replicas: int | None = 3) -> Object:
    spec: Object = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": image, "ports": [{"containerPort": 80}]}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}


def _run(step: Callable[[], Object]) -> Any:
    try:
        return step()
    except (ConflictError, ApplyError) as error:
        return {"error": type(error).__name__, "message": str(error)}


def scenarios() -> Iterator[tuple[str, Any]]:
    """Each step's name and result (an object, or the error it raised)."""
    now = _clock()
    pods = _manager(now, "", "Pod")
    pod_status = _manager(now, "", "Pod", "status")

    created = pods.update(None, _pod(), "kube-controller-manager")
    yield "pod create", created
    bound = copy.deepcopy(created)
    bound["spec"]["nodeName"] = "node-1"
    bound["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    bound = pods.update(created, bound, "kube-scheduler")
    yield "pod binding", bound
    running = copy.deepcopy(bound)
    running["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True", "lastProbeTime": None},
            {"type": "PodScheduled", "status": "True"},
        ],
        "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "state": {"running": {}}}],
        "podIPs": [{"ip": "10.0.0.1"}],
        "hostIP": "172.18.0.2",
    }
    running = pod_status.update(bound, running, "kubelet")
    yield "pod status", running
    same = pod_status.update(running, copy.deepcopy(running), "kubelet")
    yield "pod status, no change", same
    edited = copy.deepcopy(running)
    edited["metadata"]["labels"]["tier"] = "front"
    del edited["metadata"]["annotations"]
    edited["metadata"]["finalizers"] = ["b.example.com/y", "c.example.com/z"]
    edited["spec"]["containers"][0]["image"] = "nginx:1.27"
    edited["spec"]["containers"][0]["args"] = ["--x"]
    edited["spec"]["priority"] = 0.0  # equal to 0 for upstream: not a change
    edited["spec"]["enableServiceLinks"] = 1  # not equal to true for upstream: a change
    edited = pods.update(running, edited, "kubectl-edit")
    yield "pod edit", edited
    reordered = copy.deepcopy(edited)
    reordered["spec"] = dict(reversed(list(reordered["spec"].items())))
    yield "pod edit, keys reordered", pods.update(edited, reordered, "kubectl-edit")
    flipped = copy.deepcopy(edited)
    flipped["spec"]["containers"][0]["ports"][0]["containerPort"] = True
    yield "pod edit, number to boolean", pods.update(edited, flipped, "mutator")
    not_a_number = copy.deepcopy(edited)
    not_a_number["metadata"]["labels"]["nan"] = math.nan
    nan_pod = pods.update(edited, not_a_number, "nan-writer")
    yield "pod edit, nan", nan_pod
    yield "pod edit, nan again", pods.update(nan_pod, copy.deepcopy(nan_pod), "nan-writer")
    for n in range(12):
        later = copy.deepcopy(edited)
        later["metadata"]["labels"][f"l{n}"] = str(n)
        edited = pods.update(edited, later, f"writer-{n}")
    yield "pod, managers capped", edited

    deployments = _manager(now, "apps", "Deployment")
    statuses = _manager(now, "apps", "Deployment", "status")
    applied = deployments.apply(None, _deployment(), "kubectl", force=False)
    yield "deployment apply", applied
    scaled = copy.deepcopy(applied)
    scaled["spec"]["replicas"] = 5
    scaled = deployments.update(applied, scaled, "autoscaler")
    yield "deployment scaled", scaled
    yield (
        "deployment re-apply, conflict",
        _run(lambda: deployments.apply(scaled, _deployment(replicas=3), "kubectl", force=False)),
    )
    forced = deployments.apply(scaled, _deployment(image="nginx:2", replicas=3), "kubectl", force=True)
    yield "deployment re-apply, forced", forced
    pruned = deployments.apply(forced, _deployment(image="nginx:2", replicas=None), "kubectl", force=False)
    yield "deployment apply without replicas", pruned
    yield (
        "deployment apply by another manager",
        _run(
            lambda: deployments.apply(pruned, _deployment(image="httpd", replicas=None), "other", force=False)
        ),
    )
    with_status = copy.deepcopy(pruned)
    with_status["status"] = {
        "replicas": 3,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}],
    }
    yield "deployment status", statuses.update(pruned, with_status, "kube-controller-manager")
    bad = _deployment()
    bad["spec"]["template"]["spec"]["containers"].append({"image": "no-name"})
    yield "deployment apply, invalid", _run(lambda: deployments.apply(pruned, bad, "kubectl", force=False))

    events = _manager(now, "", "Event")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web-1"},
        "reason": "Started",
        "count": 1,
        "source": {"component": "kubelet"},
    }
    yield "event create", events.update(None, event, "kubelet")

    pod_node = typed.root_for_kind("", "v1", "Pod")
    assert pod_node is not None
    body = _pod()
    body["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    body["spec"]["containers"][0]["bogus"] = {"deep": [1, 2]}
    body["spec"]["replicaz"] = 1
    body["metadata"]["labels"]["x"] = "y"
    raw = json.dumps(body).replace(
        '"restartPolicy": "Always"', '"restartPolicy": "Always", "restartPolicy": "Never"'
    )
    yield "strict errors", strict.unknown_and_duplicate_fields(body, pod_node, raw=raw.encode())
    yield "strict unknown", strict.unknown_fields(body, pod_node)
    yield "strict pruned", strict.prune_unknown(body, pod_node)


def _text(value: Any) -> str:
    return json.dumps(value)


@pytest.fixture(scope="module")
def pinned() -> dict[str, str]:
    return dict(json.loads(PINNED.read_text(encoding="utf-8")))


def test_every_result_is_the_pinned_one(pinned: dict[str, str]) -> None:
    results = list(scenarios())
    assert [name for name, _ in results] == list(pinned)
    for name, result in results:
        assert _text(result) == pinned[name], name


def test_a_result_does_not_depend_on_the_inputs_being_fresh(pinned: dict[str, str]) -> None:
    """Caches and shared subtrees: running everything twice in one process gives the same bytes."""
    list(scenarios())
    assert {name: _text(result) for name, result in scenarios()} == pinned


# -- the tricks themselves ---------------------------------------------------------------------------


def test_compare_tells_booleans_from_numbers_in_equal_looking_subtrees() -> None:
    node = typed.root_for_kind("", "v1", "Pod")
    assert node is not None
    port = {"containerPort": 80, "hostPort": 1}
    left = {"spec": {"containers": [{"name": "a", "ports": [port]}]}}
    right = {"spec": {"containers": [{"name": "a", "ports": [{**port, "hostPort": True}]}]}}
    assert left == right  # Python's == says equal...
    changed = typed.compare(left, right, node)  # ...upstream's Equals does not
    where = '.spec.containers[name="a"].ports[containerPort=80,protocol="TCP"].hostPort'
    assert changed.modified.paths() == [where]
    as_float = {"spec": {"containers": [{"name": "a", "ports": [{**port, "hostPort": 1.0}]}]}}
    assert typed.compare(left, as_float, node).is_same()


def test_compare_of_a_value_with_itself_sees_nan_as_a_change_like_upstream() -> None:
    node = typed.root_for_kind("", "v1", "Pod")
    assert node is not None
    value = {"metadata": {"labels": {"x": math.nan}}}
    assert typed.compare(value, value, node).modified.paths() == [".metadata.labels.x"]


def test_set_algebra_never_modifies_its_operands() -> None:
    a = fieldpath.parse_paths("spec.replicas", "spec.template.metadata")
    b = fieldpath.parse_paths("spec.template.metadata", "status.phase")
    before_a, before_b = a.paths(), b.paths()
    empty = Set()
    assert a.union(empty) == a and empty.union(a) == a
    assert a.difference(empty) == a and a.difference(fieldpath.parse_paths("metadata.name")) == a
    assert a.union(b).paths() == [".spec.replicas", ".spec.template.metadata", ".status.phase"]
    assert a.difference(b).paths() == [".spec.replicas"]
    assert a.recursive_difference(fieldpath.parse_paths("spec")).paths() == []
    assert a.paths() == before_a and b.paths() == before_b


def test_key_elements_keep_booleans_and_numbers_apart() -> None:
    assert fieldpath.key({"port": True}).serialize() == 'k:{"port":true}'
    assert fieldpath.key({"port": 1}).serialize() == 'k:{"port":1}'
    assert fieldpath.key({"port": 1.5}).serialize() == 'k:{"port":1.5}'
    assert fieldpath.key({"b": 1, "a": "x"}) == fieldpath.key({"a": "x", "b": 1})


def test_strict_shapes_are_cached_per_set_of_definitions() -> None:
    def definitions(field: str) -> dict[str, Any]:
        return {"thing": {"type": "object", "properties": {field: {"type": "string"}}}}

    node = {"$ref": "#/$defs/thing"}
    first, second = definitions("a"), definitions("b")
    assert strict.unknown_fields({"a": "1"}, node, definitions=first) == []
    assert strict.unknown_fields({"a": "1"}, node, definitions=second) == ['unknown field "a"']


if __name__ == "__main__":
    PINNED.write_text(
        json.dumps({name: _text(result) for name, result in scenarios()}, indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {PINNED}")
