"""Admission attributes: a step's copy with new objects keeps everything else of the request."""

from __future__ import annotations

import dataclasses

from controlplane.apiserver.admission.attributes import Attributes
from controlplane.identity import UserInfo


def test_with_objects_changes_the_objects_and_operation_and_keeps_every_other_field() -> None:
    base = Attributes(
        UserInfo.create("alice", groups=["devs"]),
        "CREATE",
        "apps",
        "v1",
        "deployments",
        "scale",
        "Scale",
        "autoscaling",
        "v1",
        "default",
        "web",
        True,
        dry_run=True,
        object={"a": 1},
        old_object={"a": 0},
        options={"fieldManager": "kubectl"},
    )
    changed = base.with_objects({"b": 2}, None, "UPDATE")
    assert (changed.object, changed.old_object, changed.operation) == ({"b": 2}, None, "UPDATE")
    for f in dataclasses.fields(Attributes):
        if f.name not in ("object", "old_object", "operation"):
            assert getattr(changed, f.name) == getattr(base, f.name), f"with_objects lost {f.name}"
    assert base.with_objects(None, None).operation == "CREATE", "no operation given: the request's"
