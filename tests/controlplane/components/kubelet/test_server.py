"""The kubelet's log server, pure parts: which container instance a log request reads, and when a
followed container prints next (upstream's ``validateContainerLogStatus`` wording)."""

from __future__ import annotations

import pytest

from controlplane.components.kubelet.lifecycle import PodLifecycle
from controlplane.components.kubelet.server import (
    LogError,
    LogOptions,
    next_output_at,
    validate_container_log_status,
)
from tests.controlplane.components.kubelet.conftest import make_pod

TERMINATED = {"terminated": {"exitCode": 1, "reason": "Error", "containerID": "containerd://a"}}


@pytest.mark.parametrize(
    ("status", "previous", "expected"),
    [
        ({"state": {"running": {}}}, False, "current"),
        ({"state": TERMINATED}, False, "current"),
        ({"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": TERMINATED}, False, "last"),
        ({"state": {"running": {}}, "lastState": TERMINATED}, True, "last"),
    ],
)
def test_the_instance_read(status: dict[str, object], previous: bool, expected: str) -> None:
    assert validate_container_log_status("web", status, "app", previous) == expected


@pytest.mark.parametrize(
    ("status", "previous", "message"),
    [
        (None, False, 'container "app" in pod "web" is not available'),
        ({"state": {"running": {}}}, True, 'previous terminated container "app" in pod "web" not found'),
        (
            {"state": {"waiting": {"reason": "ContainerCreating"}}},
            False,
            'container "app" in pod "web" is waiting to start: ContainerCreating',
        ),
        (
            {"state": {"waiting": {"reason": "ImagePullBackOff"}}},
            False,
            'container "app" in pod "web" is waiting to start: trying and failing to pull image',
        ),
        ({"state": {"terminated": {"exitCode": 0}}}, False, 'container "app" in pod "web" is terminated'),
        ({"state": {}}, False, 'container "app" in pod "web" is waiting to start - no logs yet'),
    ],
)
def test_no_logs_to_show_is_a_bad_request_in_upstream_words(
    status: dict[str, object] | None, previous: bool, message: str
) -> None:
    with pytest.raises(LogError) as error:
        validate_container_log_status("web", status, "app", previous)
    assert error.value.code == 400
    assert error.value.message == message


def test_options_come_from_the_query() -> None:
    options = LogOptions.from_query({"follow": "true", "tailLines": "3", "sinceTime": "2023-11-14T22:13:20Z"})
    assert options.follow and options.tail_lines == 3
    assert options.since(0.0) == 1_700_000_000.0
    with pytest.raises(LogError):
        LogOptions.from_query({"limitBytes": "lots"})


def test_the_next_line_of_a_loop_is_found_even_after_hours_of_output() -> None:
    script = "i=0; while true; do echo $i; i=$((i+1)); sleep 1; done"
    pod = make_pod({"name": "app", "image": "busybox", "command": ["sh", "-c", script]})
    lifecycle = PodLifecycle(pod, now=1000.0)
    lifecycle.advance(1000.0)
    (machine,) = lifecycle.containers
    assert machine.logs.current is not None
    start = machine.logs.current.start
    assert next_output_at(machine, machine.logs.current, start) == start + 1
    assert next_output_at(machine, machine.logs.current, start + 20_000.5) == start + 20_001
