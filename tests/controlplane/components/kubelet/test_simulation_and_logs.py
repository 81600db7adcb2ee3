"""The author-facing conventions (docs/kubelet-simulation.md) and the simulated logs."""

from __future__ import annotations

import random

import pytest

from controlplane.components.kubelet.lifecycle import PodLifecycle
from controlplane.components.kubelet.logs import NoPreviousContainer
from controlplane.components.kubelet.simulation import (
    Exit,
    PullTiming,
    Script,
    behaviour_of,
    parse_image,
    pull_error,
)
from tests.controlplane.components.kubelet.conftest import make_pod


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        ({"image": "nginx"}, None),
        ({"image": "busybox"}, Exit(0, 0)),
        ({"image": "busybox", "command": ["sh", "-c", "exit 3"]}, Exit(0, 3)),
        ({"image": "busybox", "command": ["sleep", "30"]}, Exit(30, 0)),
        ({"image": "busybox", "command": ["sleep", "infinity"]}, None),
        ({"image": "busybox", "args": ["echo", "hi"]}, Exit(0, 0)),
        ({"image": "myapp", "args": ["--mode", "crash"]}, Exit(5, 1)),
        ({"image": "myapp", "env": [{"name": "KUBELAB_CRASH_AFTER", "value": "7"}]}, Exit(7, 1)),
        ({"image": "busybox", "command": ["sh", "-c", "while true; do echo hi; sleep 1; done"]}, None),
        ({"image": "busybox", "command": ["sh", "-c", "false && echo never"]}, Exit(0, 1)),
    ],
)
def test_exit_conventions(container: dict[str, object], expected: Exit | None) -> None:
    assert behaviour_of(container).exit() == expected


def test_image_conventions() -> None:
    assert parse_image("nginx").full == "docker.io/library/nginx:latest"
    assert parse_image("registry.k8s.io/pause:3.9").full == "registry.k8s.io/pause:3.9"
    assert parse_image("bitnami/redis:7").full == "docker.io/bitnami/redis:7"
    assert pull_error("nginx:1.25") is None
    assert "repository does not exist" in (pull_error("doesnotexist/app") or "")
    assert PullTiming(default=2, per_image={"nginx": 4}).delay("nginx:1.25", random.Random(1)) == 4
    jittered = PullTiming(default=10, jitter=0.5)
    assert jittered.delay("x", random.Random(7)) == jittered.delay("x", random.Random(7))


def test_logs_tail_timestamps_and_previous() -> None:
    script = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done"
    env = [{"name": "KUBELAB_CRASH_AFTER", "value": "5"}]
    pod = make_pod({"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", script], "env": env})
    lc = PodLifecycle(pod, now=100.0)
    lc.advance(102.5)
    logs = lc.containers[0].logs
    assert logs.read(102.5) == ["tick 0", "tick 1", "tick 2"]
    assert logs.read(102.5, tail_lines=1, timestamps=True) == ["1970-01-01T00:01:42.000000000Z tick 2"]
    assert logs.read(102.5, since=101.0) == ["tick 1", "tick 2"]
    with pytest.raises(NoPreviousContainer):
        logs.read(102.5, previous=True)
    lc.advance(106.0)  # crashed at 105 and restarted at once (first restart: no back-off)
    previous = logs.read(106.0, previous=True)
    assert previous[-1] == "kubelab: simulated crash, exiting with code 1" and previous[0] == "tick 0"
    assert logs.read(106.0) == ["tick 0", "tick 1"]


def test_follow_cursor_streams_new_lines_only() -> None:
    pod = make_pod(
        {"name": "c", "image": "busybox", "command": ["sh", "-c", "echo a; sleep 2; echo b; sleep 2"]},
        restart_policy="Never",
    )
    lc = PodLifecycle(pod, now=0.0)
    lc.advance(0.0)
    logs = lc.containers[0].logs
    lines, cursor = logs.follow(None, 1.0)
    assert lines == ["a"]
    lc.advance(3.0)
    lines, cursor = logs.follow(cursor, 3.0)
    assert lines == ["b"] and not logs.follow_finished(cursor, 3.0)
    lc.advance(4.0)
    assert logs.follow_finished(cursor, 4.0)


def test_a_silent_loop_runs_forever_without_hanging_the_simulation() -> None:
    script = Script.parse("while true; do sleep 1; done")
    assert list(script.events(0.0, {})) == []  # no output, no exit: it runs until stopped
    counted = Script.parse("i=0; while true; do i=$((i+1)); sleep 1; done")
    assert list(counted.events(0.0, {})) == []
