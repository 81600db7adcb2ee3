"""Server-side apply as pure code: field sets, FieldsV1, typed walks, the updater, conflicts, managedFields.

Many cases are ported from kubernetes-sigs/structured-merge-diff (``merge/leaf_test.go``,
``merge/set_test.go``, ``fieldpath/set_test.go``, ``fieldpath/serialize_test.go``) with a schema
written here in upstream's JSON form; the rest run against the real Deployment schema.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from controlplane.api import strict
from controlplane.api.fieldmanager import fieldpath, typed
from controlplane.api.fieldmanager.conflicts import Conflict, ConflictError, print_manager
from controlplane.api.fieldmanager.fieldpath import Set, make_path, parse_paths, path_string
from controlplane.api.fieldmanager.managedfields import (
    ApplyError,
    FieldManager,
    decode,
    encode,
    manager_from_user_agent,
    manager_identifier,
)
from controlplane.api.fieldmanager.merge import ManagedFields, Updater

# A schema in upstream's JSON form, standing in for structured-merge-diff's test parsers.
DEFS: dict[str, Any] = {
    "leafFields": {
        "type": "object",
        "properties": {
            "numeric": {"type": "integer"},
            "string": {"type": "string"},
            "bool": {"type": "boolean"},
        },
    },
    "sets": {
        "type": "object",
        "properties": {
            "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
        },
    },
    "pod": {
        "type": "object",
        "properties": {
            "containers": {
                "type": "array",
                "items": {"$ref": "#/$defs/container"},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "selector": {"$ref": "#/$defs/selector"},
        },
    },
    "container": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
        },
    },
    "selector": {
        "type": "object",
        "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "x-kubernetes-map-type": "atomic",
    },
}


@dataclass
class State:
    """structured-merge-diff's ``internal/fixture.State``: a live object and its managers."""

    definition: str
    live: Any = field(default_factory=dict)
    managers: ManagedFields = field(default_factory=dict)

    @property
    def updater(self) -> Updater:
        return Updater(typed.root(self.definition, DEFS), definitions=DEFS)

    def apply(self, manager: str, config: Any, *, force: bool = False) -> None:
        new, self.managers = self.updater.apply(self.live, config, "v1", self.managers, manager, force=force)
        if new is not None:
            self.live = new

    def update(self, manager: str, obj: Any) -> None:
        self.managers = self.updater.update(self.live, obj, "v1", self.managers, manager)
        self.live = obj

    def owned(self) -> dict[str, list[str]]:
        return {m: sorted(entry.set.paths()) for m, entry in sorted(self.managers.items())}


# -- fieldpath ----------------------------------------------------------------------------------------


def test_path_elements_serialize_and_print_like_upstream() -> None:
    port = fieldpath.key({"protocol": "TCP", "containerPort": 80})
    assert port.serialize() == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert str(port) == '[containerPort=80,protocol="TCP"]'
    assert fieldpath.value("example.com/x").serialize() == 'v:"example.com/x"'
    assert str(fieldpath.value("example.com/x")) == '[="example.com/x"]'
    assert fieldpath.index(3).serialize() == "i:3"
    assert path_string(make_path("spec", "containers", {"name": "web"}, "image")) == (
        '.spec.containers[name="web"].image'
    )


def test_key_elements_are_canonical_whatever_the_order_of_their_fields() -> None:
    a = fieldpath.parse_path_element('k:{"protocol":"TCP","containerPort":80}')
    b = fieldpath.parse_path_element('k:{"containerPort": 80, "protocol": "TCP"}')
    assert a == b
    assert hash(a) == hash(b)


def test_set_algebra_follows_upstream() -> None:
    # fieldpath/set.go: union, intersection; Difference is not recursive (parent - child = parent,
    # child - parent = child); RecursiveDifference drops everything below a removed member.
    s1 = parse_paths("a.b", "a.c", "d")
    s2 = parse_paths("a.b", "e")
    assert s1.union(s2).paths() == [".d", ".e", ".a.b", ".a.c"]
    assert s1.intersection(s2).paths() == [".a.b"]
    assert s1.difference(s2).paths() == [".d", ".a.c"]
    parent = parse_paths("a")
    children = parse_paths("a.b", "a.c")
    assert children.difference(parent) == children
    assert parent.difference(children) == parent
    assert children.recursive_difference(parent).empty()
    assert not s1.empty() and Set().empty()


def test_fields_v1_round_trip_with_members_and_children() -> None:
    document: dict[str, Any] = {
        "f:spec": {
            "f:replicas": {},
            "f:template": {
                "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}},
            },
        }
    }
    owned = Set.from_fields_v1(document)
    assert owned.paths() == [
        ".spec.replicas",
        '.spec.template.spec.containers[name="web"]',
        '.spec.template.spec.containers[name="web"].image',
    ]
    assert owned.to_fields_v1() == document
    assert json.dumps(owned.to_fields_v1()) == json.dumps(document)


def test_a_fields_v1_document_read_again_is_the_same_read_only_set_written_as_a_new_document() -> None:
    labels: dict[str, Any] = {".": {}, "f:app": {}}
    document: dict[str, Any] = {"f:metadata": {"f:labels": labels}, "f:spec": {"f:replicas": {}}}
    owned = Set.from_fields_v1(document)
    assert Set.from_fields_v1(json.loads(json.dumps(document))) is owned
    written = owned.to_fields_v1()
    assert written == document and written is not document
    written["f:spec"]["f:paused"] = {}
    assert owned.to_fields_v1() == document, "each write is a new document"


def test_a_fields_v1_document_out_of_order_is_written_back_in_upstreams_order() -> None:
    owned = Set.from_fields_v1({"f:spec": {}, "f:metadata": {"f:name": {}}, "z:unknown": {}})
    assert list(owned.to_fields_v1()) == ["f:metadata", "f:spec"]


def test_fields_v1_keys_are_written_in_upstreams_order() -> None:
    owned = Set(
        [
            make_path("list", fieldpath.value("b")),
            make_path("list", fieldpath.value("a")),
            make_path("zeta"),
            make_path("alpha"),
            make_path("items", {"name": "b"}),
            make_path("items", {"name": "a"}),
        ]
    )
    assert list(owned.to_fields_v1()) == ["f:alpha", "f:items", "f:list", "f:zeta"]
    assert list(owned.to_fields_v1()["f:list"]) == ['v:"a"', 'v:"b"']
    assert list(owned.to_fields_v1()["f:items"]) == ['k:{"name":"a"}', 'k:{"name":"b"}']


def test_fields_v1_rejects_what_is_not_a_field_set() -> None:
    with pytest.raises(fieldpath.FieldsV1Error):
        Set.from_fields_v1({"f:a": "x"})
    with pytest.raises(fieldpath.FieldsV1Error):
        Set.from_fields_v1({'k:["not", "an object"]': {}})
    # Unknown element types are dropped, as upstream does for forward compatibility.
    assert Set.from_fields_v1({"z:what": {}, "f:a": {}}).paths() == [".a"]


# -- typed walks on the real Deployment schema ----------------------------------------------------


DEPLOYMENT = typed.root_for_kind("apps", "v1", "Deployment")


def deployment(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx",
                        "args": ["-g", "daemon off;"],
                        "ports": [{"containerPort": 80}],
                        "env": [{"name": "A", "value": "1"}],
                    }
                ]
            },
        },
    }
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": base}


def test_field_set_of_a_deployment_uses_the_schemas_list_types() -> None:
    assert DEPLOYMENT is not None
    paths = typed.to_field_set(deployment(), DEPLOYMENT).paths()
    container = '.spec.template.spec.containers[name="web"]'
    assert container in paths  # a list-map item is owned by key...
    assert f"{container}.args" in paths  # ...an atomic list as a whole...
    assert not any(p.startswith(f"{container}.args[") for p in paths)
    assert f'{container}.ports[containerPort=80,protocol="TCP"]' in paths  # default key field
    assert f'{container}.env[name="A"].value' in paths
    assert ".spec.selector" in paths  # LabelSelector is x-kubernetes-map-type: atomic
    assert ".spec" not in paths and ".spec.template" not in paths  # named fields are not members
    assert ".spec.template.metadata.labels.app" in paths  # a map's keys are


def test_validation_reports_upstreams_typed_errors() -> None:
    assert DEPLOYMENT is not None
    unknown = deployment()
    unknown["spec"]["replicaz"] = 3
    assert [str(e) for e in typed.validate(unknown, DEPLOYMENT)] == [
        ".spec.replicaz: field not declared in schema"
    ]
    twice = deployment()
    containers = twice["spec"]["template"]["spec"]["containers"]
    containers.append(copy.deepcopy(containers[0]))
    assert [str(e) for e in typed.validate(twice, DEPLOYMENT)] == [
        '.spec.template.spec.containers: duplicate entries for key [name="web"]'
    ]
    keyless = deployment()
    del keyless["spec"]["template"]["spec"]["containers"][0]["name"]
    assert [str(e) for e in typed.validate(keyless, DEPLOYMENT)] == [
        ".spec.template.spec.containers: element 0: associative list with keys has an element that omits key "
        'field "name" (and doesn\'t have default value)'
    ]
    assert typed.validate(deployment(), DEPLOYMENT) == []


def test_compare_reports_added_modified_and_removed_fields() -> None:
    assert DEPLOYMENT is not None
    before = deployment()
    after = deployment(replicas=3)
    after["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "B", "value": "2"}]
    diff = typed.compare(before, after, DEPLOYMENT)
    env = '.spec.template.spec.containers[name="web"].env'
    assert diff.modified.paths() == [".spec.replicas"]
    assert diff.added.paths() == [f'{env}[name="B"]', f'{env}[name="B"].name', f'{env}[name="B"].value']
    assert diff.removed.paths() == [f'{env}[name="A"]', f'{env}[name="A"].name', f'{env}[name="A"].value']
    assert typed.compare(before, copy.deepcopy(before), DEPLOYMENT).is_same()


def test_merge_keeps_list_items_by_key_and_replaces_atomic_lists() -> None:
    assert DEPLOYMENT is not None
    live = deployment()
    live["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})
    config = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "web", "image": "nginx:2", "args": ["x"]}]},
            }
        }
    }
    merged = typed.merge(live, config, DEPLOYMENT)
    containers = merged["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "sidecar"]
    assert containers[0]["image"] == "nginx:2"
    assert containers[0]["args"] == ["x"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}]
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"  # inputs untouched


def test_remove_items_drops_emptied_maps_and_lists() -> None:
    assert DEPLOYMENT is not None
    obj = deployment()
    env = make_path("spec", "template", "spec", "containers", {"name": "web"}, "env", {"name": "A"})
    out = typed.remove_items(obj, Set([env, make_path("spec", "replicas")]), DEPLOYMENT)
    assert "replicas" not in out["spec"]
    assert "env" not in out["spec"]["template"]["spec"]["containers"][0]
    assert obj["spec"]["replicas"] == 2


def test_named_struct_fields_become_members_only_when_asked() -> None:
    assert DEPLOYMENT is not None
    owned = parse_paths("spec.strategy.rollingUpdate.maxSurge")
    owned.insert(make_path("spec", "template", "spec", "containers", {"name": "web"}, "image"))
    ensured = typed.ensure_named_fields_are_members(owned, DEPLOYMENT).paths()
    assert ".spec" in ensured and ".spec.strategy" in ensured and ".spec.strategy.rollingUpdate" in ensured
    assert ".spec.template.spec.containers" in ensured  # a named field holding a list...
    assert '.spec.template.spec.containers[name="web"]' not in ensured  # ...but not its items
    assert ".spec" not in owned.paths()


# -- the updater: structured-merge-diff's merge tests -------------------------------------------------


def test_leaf_apply_twice() -> None:
    s = State("leafFields")
    s.apply("default", {"numeric": 1, "string": "string"})
    s.apply("default", {"numeric": 2, "string": "string", "bool": False})
    assert s.live == {"numeric": 2, "string": "string", "bool": False}
    assert s.owned() == {"default": [".bool", ".numeric", ".string"]}


def test_leaf_apply_update_apply_no_conflict() -> None:
    s = State("leafFields")
    s.apply("default", {"numeric": 1, "string": "string"})
    s.update("controller", {"numeric": 1, "string": "string", "bool": True})
    s.apply("default", {"numeric": 2, "string": "string"})
    assert s.live == {"numeric": 2, "string": "string", "bool": True}
    assert s.owned() == {"controller": [".bool"], "default": [".numeric", ".string"]}


def test_leaf_apply_update_apply_with_conflict_then_force() -> None:
    s = State("leafFields")
    s.apply("default", {"numeric": 1, "string": "string"})
    s.update("controller", {"numeric": 1, "string": "controller string", "bool": True})
    with pytest.raises(ConflictError) as caught:
        s.apply("default", {"numeric": 2, "string": "user string"})
    assert caught.value.conflicts == [Conflict("controller", make_path("string"))]
    assert s.live["string"] == "controller string"  # a refused apply changes nothing
    s.apply("default", {"numeric": 2, "string": "user string"}, force=True)
    assert s.live == {"numeric": 2, "string": "user string", "bool": True}
    assert s.owned() == {"controller": [".bool"], "default": [".numeric", ".string"]}


def test_leaf_apply_twice_remove() -> None:
    s = State("leafFields")
    s.apply("default", {"numeric": 1, "string": "string", "bool": False})
    s.apply("default", {"string": "new string"})
    assert s.live == {"string": "new string"}
    assert s.owned() == {"default": [".string"]}


def test_leaf_update_apply_omits() -> None:
    # The field changed hands: the applier's stopping to apply it does not remove it.
    s = State("leafFields")
    s.apply("default", {"numeric": 2})
    s.update("controller", {"numeric": 1})
    s.apply("default", {})
    assert s.live == {"numeric": 1}
    assert s.owned() == {"controller": [".numeric"]}


def test_leaf_update_remove_empty_set_and_apply_remove_empty_set() -> None:
    s = State("leafFields")
    s.apply("default", {"string": "string"})
    s.update("controller", {"string": "new string"})
    assert s.owned() == {"controller": [".string"]}
    t = State("leafFields")
    t.apply("default", {"string": "string"})
    t.apply("default", {})
    assert t.live == {}
    assert t.managers == {}


def test_set_apply_update_apply_with_overlap_is_shared_ownership() -> None:
    s = State("sets")
    s.apply("default", {"list": ["a", "c"]})
    s.update("controller", {"list": ["a", "b", "c", "d"]})
    s.apply("default", {"list": ["a", "b", "c"]})
    assert s.live == {"list": ["a", "b", "c", "d"]}
    assert s.owned() == {
        "controller": ['.list[="b"]', '.list[="d"]'],
        "default": ['.list[="a"]', '.list[="b"]', '.list[="c"]'],
    }


def test_set_apply_twice_remove() -> None:
    s = State("sets")
    s.apply("default", {"list": ["a", "b", "c", "d"]})
    s.apply("default", {"list": ["a", "c"]})
    assert s.live == {"list": ["a", "c"]}
    assert s.owned() == {"default": ['.list[="a"]', '.list[="c"]']}


def test_set_items_from_two_appliers_merge_in_upstreams_order() -> None:
    # merge.go visitListItems: live-only items keep their place between the shared ones.
    s = State("sets")
    s.apply("default", {"list": ["a", "c"]})
    s.apply("other", {"list": ["b", "c", "d"]})
    assert s.live == {"list": ["a", "b", "c", "d"]}
    s.apply("default", {"list": ["a", "c", "e"]})
    assert s.live == {"list": ["a", "b", "c", "d", "e"]}


def test_list_map_items_belong_to_their_appliers() -> None:
    s = State("pod")
    s.apply("alice", {"containers": [{"name": "web", "image": "nginx"}]})
    s.apply("bob", {"containers": [{"name": "sidecar", "image": "envoy"}]})
    assert [c["name"] for c in s.live["containers"]] == ["web", "sidecar"]
    s.apply("bob", {"containers": []})  # bob stops applying his container: it goes
    assert s.live["containers"] == [{"name": "web", "image": "nginx"}]
    # An item both applied stays when one of them stops applying it.
    s.apply("bob", {"containers": [{"name": "web", "image": "nginx"}]})
    s.apply("alice", {"containers": []})
    assert s.live["containers"] == [{"name": "web", "image": "nginx"}]
    assert s.owned() == {
        "bob": ['.containers[name="web"]', '.containers[name="web"].image', '.containers[name="web"].name']
    }


def test_atomic_lists_and_maps_are_owned_and_conflict_as_a_whole() -> None:
    s = State("pod")
    s.apply(
        "alice",
        {"containers": [{"name": "web", "args": ["a", "b"]}], "selector": {"matchLabels": {"x": "1"}}},
    )
    assert '.containers[name="web"].args' in s.owned()["alice"]
    assert ".selector" in s.owned()["alice"]
    with pytest.raises(ConflictError) as caught:
        s.apply(
            "bob", {"containers": [{"name": "web", "args": ["a"]}], "selector": {"matchLabels": {"y": "2"}}}
        )
    assert sorted(path_string(c.path) for c in caught.value.conflicts) == [
        '.containers[name="web"].args',
        ".selector",
    ]


def test_map_keys_are_owned_one_by_one() -> None:
    s = State("pod")
    s.apply("alice", {"labels": {"a": "1"}})
    s.apply("bob", {"labels": {"b": "2"}})
    assert s.live["labels"] == {"a": "1", "b": "2"}
    s.apply("alice", {})
    assert s.live["labels"] == {"b": "2"}


# -- conflicts ----------------------------------------------------------------------------------------


def test_conflict_messages_are_upstreams() -> None:
    scale = manager_identifier("kubectl", "Update", "apps/v1", "scale")
    csa = manager_identifier("kubectl-client-side-apply", "Update", "apps/v1")
    applier = manager_identifier("ci", "Apply", "apps/v1")
    assert print_manager(scale) == '"kubectl" with subresource "scale" using apps/v1'
    assert print_manager(csa) == '"kubectl-client-side-apply" using apps/v1'
    assert print_manager(applier) == '"ci"'
    one = ConflictError([Conflict(csa, make_path("spec", "replicas"))])
    assert one.message() == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: '
        ".spec.replicas"
    )
    assert one.status()["details"] == {
        "causes": [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
                "field": ".spec.replicas",
            }
        ]
    }
    many = ConflictError(
        [Conflict(scale, make_path("spec", "replicas")), Conflict(applier, make_path("spec", "paused"))]
    )
    assert many.message() == (
        'Apply failed with 2 conflicts: conflicts with "ci":\n- .spec.paused\n'
        'conflicts with "kubectl" with subresource "scale" using apps/v1:\n- .spec.replicas'
    )
    assert many.status()["code"] == 409 and many.status()["reason"] == "Conflict"


# -- managedFields: the field manager stack -----------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.seconds = 0

    def __call__(self) -> str:
        self.seconds += 1
        return f"2025-01-01T00:00:{self.seconds:02d}Z"


@pytest.fixture
def fm() -> Iterator[FieldManager]:
    assert DEPLOYMENT is not None
    yield FieldManager(
        group="apps",
        version="v1",
        kind="Deployment",
        node=DEPLOYMENT,
        now=Clock(),
        reset_fields=parse_paths("status"),
    )


def entries(obj: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (e["manager"], e["operation"], e.get("subresource")) for e in obj["metadata"].get("managedFields", [])
    ]


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the registry would keep it after a create: with a uid."""
    out = copy.deepcopy(obj)
    out["metadata"]["uid"] = "uid-1"
    return out


def test_a_create_records_its_manager_without_metadata_it_cannot_own(fm: FieldManager) -> None:
    created = fm.update(None, deployment(), "kubectl-create")
    [entry] = created["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create"
    assert entry["operation"] == "Update" and entry["apiVersion"] == "apps/v1"
    assert entry["time"] == "2025-01-01T00:00:01Z" and entry["fieldsType"] == "FieldsV1"
    assert "f:apiVersion" not in entry["fieldsV1"] and "f:kind" not in entry["fieldsV1"]
    assert "f:name" not in entry["fieldsV1"].get("f:metadata", {})
    assert entry["fieldsV1"]["f:spec"]["f:replicas"] == {}


def test_an_update_takes_fields_and_a_no_op_update_moves_no_timestamp(fm: FieldManager) -> None:
    live = stored(fm.update(None, deployment(), "kubectl-create"))
    scaled = fm.update(live, {**copy.deepcopy(live), "spec": {**live["spec"], "replicas": 5}}, "hpa")
    managers = decode(scaled["metadata"]["managedFields"])
    by_name = {json.loads(k)["manager"]: v.set.paths() for k, v in managers.fields.items()}
    assert ".spec.replicas" in by_name["hpa"] and ".spec.replicas" not in by_name["kubectl-create"]
    again = fm.update(stored(scaled), copy.deepcopy(stored(scaled)), "hpa")
    assert again["metadata"]["managedFields"] == scaled["metadata"]["managedFields"]


def test_an_untracked_object_stays_untracked_until_applied(fm: FieldManager) -> None:
    live = stored(deployment())  # created before managed fields were tracked
    updated = fm.update(live, {**copy.deepcopy(live), "spec": {**live["spec"], "replicas": 5}}, "kubectl")
    assert "managedFields" not in updated["metadata"]
    applied = fm.apply(
        live, {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"paused": True}}, "ci", force=False
    )
    assert entries(applied) == [("ci", "Apply", None), ("before-first-apply", "Update", None)]


def test_sending_an_empty_list_resets_managed_fields(fm: FieldManager) -> None:
    live = stored(fm.update(None, deployment(), "kubectl-create"))
    reset = copy.deepcopy(live)
    reset["metadata"]["managedFields"] = []
    assert "managedFields" not in fm.update(live, reset, "kubectl")["metadata"]
    forgetful = copy.deepcopy(live)
    del forgetful["metadata"]["managedFields"]  # a client that does not know them keeps them
    assert entries(fm.update(live, forgetful, "kubectl")) == [("kubectl-create", "Update", None)]


def test_update_managers_are_capped_at_ten(fm: FieldManager) -> None:
    live = stored(fm.update(None, deployment(), "creator"))
    for n in range(12):
        new = copy.deepcopy(live)
        new["metadata"].setdefault("labels", {})[f"l{n}"] = "x"
        live = stored(fm.update(live, new, f"writer-{n}"))
    names = [e[0] for e in entries(live)]
    assert len(names) == 10
    assert "ancient-changes" in names and "creator" not in names and "writer-11" in names


def test_apply_conflicts_name_the_subresource_manager(fm: FieldManager) -> None:
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "minReadySeconds": 5},
    }
    live = stored(fm.apply(None, config, "kubectl", force=False))
    # kubectl scale writes through the scale subresource, which has a field manager of its own.
    scale_fm = FieldManager(
        group="apps", version="v1", kind="Deployment", node=fm.node, now=Clock(), subresource="scale"
    )
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 5
    scaled = stored(scale_fm.update(live, new, "kubectl"))
    assert entries(scaled) == [("kubectl", "Apply", None), ("kubectl", "Update", "scale")]
    with pytest.raises(ConflictError) as caught:
        fm.apply(scaled, config, "kubectl", force=False)
    assert caught.value.message() == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: '
        ".spec.replicas"
    )
    forced = fm.apply(scaled, config, "kubectl", force=True)
    assert forced["spec"]["replicas"] == 2
    assert entries(forced) == [("kubectl", "Apply", None)]  # the scale manager lost its only field


def test_kubectl_may_take_over_what_client_side_apply_recorded(fm: FieldManager) -> None:
    csa = deployment(replicas=3)
    last = json.dumps(csa)
    csa["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": last}
    live = stored(fm.update(None, csa, "kubectl-client-side-apply"))
    config = deployment(replicas=4)
    assert fm.apply(live, config, "kubectl", force=False)["spec"]["replicas"] == 4  # no conflict for kubectl
    result = fm.apply(live, config, "kubectl", force=False)
    annotation = result["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(annotation)["spec"]["replicas"] == 4  # and the annotation follows
    with pytest.raises(ConflictError):
        fm.apply(live, config, "someone-else", force=False)


def test_apply_refuses_managed_fields_and_a_wrong_kind(fm: FieldManager) -> None:
    with pytest.raises(ApplyError, match=r"^metadata\.managedFields must be nil$"):
        fm.apply(
            None,
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"managedFields": []}},
            "x",
            force=False,
        )
    with pytest.raises(ApplyError, match=r"^invalid object type: /v1, Kind=Pod$"):
        fm.apply(None, {"apiVersion": "v1", "kind": "Pod"}, "x", force=False)
    with pytest.raises(ApplyError) as caught:
        fm.apply(None, deployment(replicaz=1), "x", force=False, namespace="default")
    assert str(caught.value) == (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
        ".spec.replicaz: field not declared in schema"
    )


def test_a_no_op_apply_keeps_the_object_and_its_timestamp(fm: FieldManager) -> None:
    config = deployment()
    live = stored(fm.apply(None, config, "ci", force=False))
    again = fm.apply(live, config, "ci", force=False)
    assert again["metadata"]["managedFields"] == live["metadata"]["managedFields"]
    assert again["spec"] == live["spec"]


def test_encode_orders_entries_and_decode_reads_them_back() -> None:
    owned = Set([make_path("spec", "replicas")])
    managed = decode(
        [
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2025-01-02T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": owned.to_fields_v1()},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2025-01-03T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": owned.to_fields_v1()},
            {"manager": "z", "operation": "Apply", "apiVersion": "v1", "time": "2025-01-04T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": owned.to_fields_v1()},
        ]
    )  # fmt: skip
    out = encode(managed)
    assert out is not None
    assert [e["manager"] for e in out] == ["z", "b", "a"]  # Apply first, then by time
    with pytest.raises(ValueError, match="operation must be"):
        decode([{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}])


def test_the_manager_comes_from_the_user_agent() -> None:
    assert manager_from_user_agent("kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722") == "kubectl"
    assert (
        manager_from_user_agent("kube-controller-manager/v1.37.0 (linux/amd64)") == "kube-controller-manager"
    )
    assert manager_from_user_agent("x" * 200) == "x" * 128
    assert manager_from_user_agent("") == ""


# -- strict decoding ----------------------------------------------------------------------------------


def test_unknown_and_duplicate_fields_in_document_order() -> None:
    assert DEPLOYMENT is not None
    raw = (
        b'{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","labels":{"any":"key"}},'
        b'"spec":{"replicaz":1,"replicas":1,"replicas":2,'
        b'"template":{"spec":{"containers":[{"name":"c","foo":true}]}}}}'
    )
    document = json.loads(raw)
    assert strict.unknown_and_duplicate_fields(document, DEPLOYMENT, raw=raw) == [
        'unknown field "spec.replicaz"',
        'duplicate field "spec.replicas"',
        'unknown field "spec.template.spec.containers[0].foo"',
    ]
    pruned = strict.prune_unknown(document, DEPLOYMENT)
    assert "replicaz" not in pruned["spec"]
    assert pruned["spec"]["template"]["spec"]["containers"] == [{"name": "c"}]
    assert pruned["metadata"]["labels"] == {"any": "key"}
    assert strict.strict_decoding_message(['unknown field "a"', 'unknown field "b"']) == (
        'strict decoding error: unknown field "a", unknown field "b"'
    )


def test_duplicate_keys_in_a_patch_and_in_yaml() -> None:
    assert strict.duplicate_fields(b'{"spec":{"a":1,"a":2}}') == ['duplicate field "spec.a"']
    assert strict.duplicate_fields(b'{"spec":{"a":1}}') == []
    assert strict.yaml_duplicate_keys(b"spec:\n  replicas: 1\n  replicas: 2\n") == (
        'error converting YAML to JSON: yaml: unmarshal errors:\n  line 3: key "replicas" already set in map'
    )
    assert strict.yaml_duplicate_keys(b"spec: {replicas: 1}\n") is None
