"""Priority: a pod's priority from its PriorityClass, the globalDefault class, and one default only.

The pure cases follow upstream's ``plugin/pkg/admission/priority/admission_test.go`` (``TestPodAdmission``,
``TestPriorityClassAdmission``); the rest goes through an API server, whose post-start hook has created
the two system classes.
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.meta import Object
from controlplane.apiserver.admission.priority import (
    ClassNotFound,
    PriorityMismatch,
    default_priority_class,
    pod_patch,
    resolve,
    update_patch,
)
from controlplane.apiserver.admission.setup import ORDER, AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import Factory, pod

OPTIONS = AdmissionOptions(plugins=("Priority",))
PODS = "/api/v1/namespaces/default/pods"
CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def priority_class(name: str, value: int, **fields: Any) -> Object:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


# -- pure ---------------------------------------------------------------------------------------------


def test_the_plugin_runs_where_upstream_orders_it() -> None:
    assert ORDER.index("PodSecurity") < ORDER.index("Priority") < ORDER.index("DefaultTolerationSeconds")


def test_the_lowest_of_several_global_defaults_wins() -> None:
    classes = [
        priority_class("a", 100, globalDefault=True),
        priority_class("b", 50, globalDefault=True),
        priority_class("c", 10),
    ]
    chosen = default_priority_class(classes)
    assert chosen is not None and chosen["metadata"]["name"] == "b"
    assert default_priority_class([priority_class("c", 10)]) is None


def test_resolution_of_a_named_class_the_default_and_nothing() -> None:
    high = priority_class("high", 1000, preemptionPolicy="Never")
    assert resolve("high", high, None) == ("high", 1000, "Never")
    default = priority_class("everyone", 7, globalDefault=True, preemptionPolicy="PreemptLowerPriority")
    assert resolve("", None, default) == ("everyone", 7, "PreemptLowerPriority")
    assert resolve("", None, None) == ("", 0, "PreemptLowerPriority")
    with pytest.raises(ClassNotFound, match=r"^no PriorityClass with name missing was found$"):
        resolve("missing", None, None)


def test_the_patch_writes_the_value_and_refuses_another_number() -> None:
    assert pod_patch({"priorityClassName": "high"}, "high", 1000, "Never") == [
        {"op": "add", "path": "/spec/priority", "value": 1000},
        {"op": "add", "path": "/spec/preemptionPolicy", "value": "Never"},
    ]
    assert pod_patch({}, "everyone", 7, None) == [
        {"op": "add", "path": "/spec/priorityClassName", "value": "everyone"},
        {"op": "add", "path": "/spec/priority", "value": 7},
    ]
    assert pod_patch({"priority": 1000, "priorityClassName": "high"}, "high", 1000, None) == []
    with pytest.raises(PriorityMismatch) as mismatch:
        pod_patch({"priority": 5}, "high", 1000, None)
    assert str(mismatch.value) == (
        "the integer value of priority (5) must not be provided in pod spec; "
        "priority admission controller computed 1000 from the given PriorityClass name"
    )
    with pytest.raises(PriorityMismatch, match=r"^the string value of PreemptionPolicy \(Never\)"):
        pod_patch({"preemptionPolicy": "Never"}, "high", 1000, "PreemptLowerPriority")


def test_an_update_keeps_the_priority_the_pod_was_created_with() -> None:
    old = {"priority": 1000, "preemptionPolicy": "Never"}
    assert update_patch({}, old) == [
        {"op": "add", "path": "/spec/priority", "value": 1000},
        {"op": "add", "path": "/spec/preemptionPolicy", "value": "Never"},
    ]
    assert update_patch(old, old) == []


# -- through the API server ---------------------------------------------------------------------------


async def test_pods_get_their_class_value_or_zero_and_system_classes_exist(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        assert (
            await api.create(CLASSES, priority_class("high", 1000, preemptionPolicy="Never"))
        ).status_code == 201
        await api.synced()
        answer = await api.create(PODS, pod("important", priorityClassName="high"))
        assert answer.status_code == 201, answer.text
        spec = answer.json()["spec"]
        assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
        plain = (await api.create(PODS, pod("plain"))).json()["spec"]
        assert (plain["priority"], plain["preemptionPolicy"]) == (0, "PreemptLowerPriority")
        assert "priorityClassName" not in plain
        critical = (await api.create(PODS, pod("dns", priorityClassName="system-cluster-critical"))).json()
        assert critical["spec"]["priority"] == 2000000000
        step = next(s for s in api.steps("Priority") if s.get("patch"))
        assert step["phase"] == "mutating" and step["patch"][0] == {
            "op": "add",
            "path": "/spec/priority",
            "value": 1000,
        }


async def test_an_unknown_class_and_a_forged_number_are_forbidden(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        missing = await api.create(PODS, pod("lost", priorityClassName="gold"))
        assert missing.status_code == 403
        assert missing.json()["message"] == (
            'pods "lost" is forbidden: no PriorityClass with name gold was found'
        )
        forged = await api.create(PODS, pod("sneaky", priority=2000000000))
        assert forged.status_code == 403
        assert forged.json()["message"] == (
            'pods "sneaky" is forbidden: the integer value of priority (2000000000) must not be provided '
            "in pod spec; priority admission controller computed 0 from the given PriorityClass name"
        )


async def test_the_global_default_applies_and_only_one_may_exist(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        assert (
            await api.create(CLASSES, priority_class("everyone", 7, globalDefault=True))
        ).status_code == 201
        await api.synced()
        spec = (await api.create(PODS, pod("web"))).json()["spec"]
        assert (spec["priorityClassName"], spec["priority"]) == ("everyone", 7)
        second = await api.create(CLASSES, priority_class("another", 8, globalDefault=True))
        assert second.status_code == 403
        assert second.json()["message"] == (
            'priorityclasses.scheduling.k8s.io "another" is forbidden: PriorityClass everyone is already '
            "marked as default. Only one default can exist"
        )
        # The default itself may be updated while it stays the default.
        path = f"{CLASSES}/everyone"
        updated = await api.admin.patch(
            path,
            json={"description": "the default"},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert updated.status_code == 200, updated.text
