"""Field paths: parsing what authors write, and following it through objects."""

from __future__ import annotations

from typing import Any

import pytest

from courses.engine.checks.paths import MISSING, Index, Key, PathError, Select, parse_path, resolve

POD: dict[str, Any] = {
    "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web", "app": "web"}},
    "spec": {
        "containers": [
            {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "busybox"},
        ],
        "nodeName": None,
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
        ],
    },
}


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("status.phase", (Key("status"), Key("phase"))),
        ("spec.containers[0].image", (Key("spec"), Key("containers"), Index(0), Key("image"))),
        ("spec.containers[-1]", (Key("spec"), Key("containers"), Index(-1))),
        (
            "status.conditions[type=Ready].status",
            (Key("status"), Key("conditions"), Select("type", "Ready"), Key("status")),
        ),
        (
            'metadata.labels["app.kubernetes.io/name"]',
            (Key("metadata"), Key("labels"), Key("app.kubernetes.io/name")),
        ),
        ("metadata.labels['a.b']", (Key("metadata"), Key("labels"), Key("a.b"))),
        ("items[0][1]", (Key("items"), Index(0), Index(1))),
        ("spec.ports[ name = http ]", (Key("spec"), Key("ports"), Select("name", "http"))),
    ],
)
def test_parse(text: str, steps: tuple[object, ...]) -> None:
    path = parse_path(text)
    assert path.steps == steps
    assert str(path) == text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "non-empty"),
        ("status..phase", "empty name"),
        (".status", "empty name"),
        ("status.", "ends with a dot"),
        ("spec.containers[", "cannot read the bracket"),
        ("spec.containers[x]", "cannot read the bracket"),
        ("spec]", "unexpected ']'"),
        ("spec.[0]", "must follow the dot"),
        ("spec[0]name", "expected '.' or '['"),
    ],
)
def test_parse_errors(text: str, problem: str) -> None:
    with pytest.raises(PathError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_path(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("status.phase", "Running"),
        ("spec.containers[0].image", "nginx:1.27"),
        ("spec.containers[-1].name", "sidecar"),
        ("spec.containers[name=sidecar].image", "busybox"),
        ("spec.containers[0].ports[containerPort=80].containerPort", 80),
        ("status.conditions[type=Ready].status", "False"),
        ('metadata.labels["app.kubernetes.io/name"]', "web"),
        ("metadata.labels.app", "web"),
        ("spec.nodeName", None),
        ("status.conditions", POD["status"]["conditions"]),
    ],
)
def test_resolve(text: str, value: object) -> None:
    assert resolve(POD, parse_path(text)) == value


@pytest.mark.parametrize(
    "text",
    [
        "status.podIP",
        "spec.containers[2].image",
        "spec.containers[-3]",
        "status.conditions[type=Initialized].status",
        "status.phase.more",
        "status.phase[0]",
        "metadata[0]",
        "metadata.name[type=x]",
    ],
)
def test_resolve_missing(text: str) -> None:
    assert resolve(POD, parse_path(text)) is MISSING


def test_missing_is_falsy_and_single() -> None:
    assert not MISSING
    assert repr(MISSING) == "MISSING"
    assert resolve({}, parse_path("a")) is resolve([], parse_path("a"))


def test_select_reads_booleans_as_json() -> None:
    obj = {"items": [{"ready": False, "n": 1}, {"ready": True, "n": 2}]}
    assert resolve(obj, parse_path("items[ready=true].n")) == 2
    assert resolve(obj, parse_path("items[ready=false].n")) == 1


def test_path_properties() -> None:
    assert parse_path("status.conditions[type=Ready].status").last_name == "status"
    assert not parse_path("status.conditions[type=Ready].status").plain
    assert parse_path("status.availableReplicas").plain
    assert parse_path("[0]").last_name == ""
