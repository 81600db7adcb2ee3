"""The container state machine, run on explicit times: pulls, exits, backoff, probes, termination."""

from __future__ import annotations

import itertools
from typing import Any

from controlplane.components.kubelet.lifecycle import (
    Backoff,
    Change,
    PodLifecycle,
    Running,
    Terminated,
    Waiting,
    go_duration,
)
from controlplane.components.kubelet.simulation import PullTiming
from tests.controlplane.components.kubelet.conftest import make_pod


def run_until(lc: PodLifecycle, end: float) -> list[Change]:
    changes = lc.advance(0.0)
    while (at := lc.next_wakeup()) is not None and at <= end:
        changes += lc.advance(at)
    return changes + lc.advance(end)


def state(lc: PodLifecycle, i: int = 0) -> Any:
    return lc.snapshot().containers[i].state


def test_pull_then_running_and_ready() -> None:
    pod = make_pod({"name": "web", "image": "nginx:1.25"})
    lc = PodLifecycle(pod, now=0.0, timing=PullTiming(default=3.0))
    changes = lc.advance(0.0)
    assert [c.reason for c in changes] == ["Pulling"]
    assert state(lc) == Waiting("ContainerCreating")
    changes = lc.advance(3.0)
    assert [c.reason for c in changes] == ["Pulled", "Created", "Started"]
    snap = lc.snapshot().containers[0]
    assert snap.state == Running(3.0) and snap.ready and snap.started
    assert snap.container_id.startswith("containerd://") and len(snap.container_id) == 13 + 64
    assert snap.image == "docker.io/library/nginx:1.25"
    assert snap.image_id.startswith("docker.io/library/nginx@sha256:")
    assert lc.next_wakeup() is None


def test_exit_codes_completed_and_error() -> None:
    ok = PodLifecycle(
        make_pod({"name": "c", "image": "busybox", "command": ["sleep", "5"]}, restart_policy="Never"),
        now=0.0,
    )
    run_until(ok, 10)
    assert state(ok) == Terminated(0, "Completed", 0.0, 5.0, container_id=ok.containers[0].container_id)
    bad = PodLifecycle(
        make_pod(
            {"name": "c", "image": "busybox", "command": ["sh", "-c", "exit 3"]}, restart_policy="Never"
        ),
        now=0.0,
    )
    run_until(bad, 10)
    assert isinstance(state(bad), Terminated) and state(bad).exit_code == 3 and state(bad).reason == "Error"
    assert bad.terminal


def test_crash_loop_backoff_doubles_to_300s() -> None:
    pod = make_pod(
        {
            "name": "c",
            "image": "busybox:1.36",
            "args": ["crash"],
            "env": [{"name": "KUBELAB_CRASH_AFTER", "value": "0"}],
        }
    )
    lc = PodLifecycle(pod, now=0.0)
    starts = [c.at for c in run_until(lc, 2000) if c.reason == "Started"]
    waits = [b - a for a, b in itertools.pairwise(starts)]
    assert waits[:8] == [0, 10, 20, 40, 80, 160, 300, 300]
    snap = lc.snapshot().containers[0]
    assert isinstance(snap.state, Waiting) and snap.state.reason == "CrashLoopBackOff"
    assert snap.state.message == "back-off 5m0s restarting failed container=c pod=web_default(uid-1)"
    assert snap.last_state is not None and snap.last_state.exit_code == 1


def test_backoff_resets_after_ten_minutes_of_running() -> None:
    b = Backoff()
    b.next(0, 0)
    b.next(10, 10)
    assert b.duration == 20
    assert b.in_backoff_since(11, 12)
    assert not b.in_backoff_since(700, 700)  # last update 10 min + ago: expired
    b.next(700, 700)
    assert b.duration == 10


def test_long_runner_crash_restarts_at_once_after_ten_minutes() -> None:
    env = [{"name": "KUBELAB_CRASH_AFTER", "value": "700"}]
    lc = PodLifecycle(make_pod({"name": "c", "image": "nginx:1.25", "env": env}), now=0.0)
    starts = [c.at for c in run_until(lc, 3000) if c.reason == "Started"]
    assert starts[:4] == [0, 700, 1400, 2100]  # never in back-off: every run outlasts 2 x 300 s


def test_restart_policy_on_failure_and_never() -> None:
    done = PodLifecycle(
        make_pod({"name": "c", "image": "busybox", "command": ["echo", "hi"]}, restart_policy="OnFailure"),
        now=0.0,
    )
    run_until(done, 100)
    assert done.containers[0].restart_count == 0 and done.terminal
    failing = PodLifecycle(
        make_pod({"name": "c", "image": "busybox", "command": ["false"]}, restart_policy="OnFailure"), now=0.0
    )
    run_until(failing, 100)
    assert failing.containers[0].restart_count > 0 and not failing.terminal


def test_image_pull_error_then_backoff() -> None:
    lc = PodLifecycle(make_pod({"name": "c", "image": "nginx:bad"}), now=0.0)
    lc.advance(0.0)
    st = state(lc)
    assert st.reason == "ErrImagePull" and "docker.io/library/nginx:bad: not found" in st.message
    lc.advance(1.0)
    assert state(lc) == Waiting("ImagePullBackOff", 'Back-off pulling image "nginx:bad"')
    pulls = [c.at for c in run_until(lc, 100) if c.reason == "Pulling"]
    assert pulls == [10, 30, 70]  # retries after 10, 20 and 40 s of back-off


def test_liveness_failure_kills_and_restarts() -> None:
    spec = {
        "name": "app",
        "image": "nginx:1.25",
        "env": [{"name": "KUBELAB_LIVENESS_FAIL_AFTER", "value": "20"}],
        "livenessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5, "failureThreshold": 3},
    }
    lc = PodLifecycle(make_pod(spec), now=0.0)
    changes = run_until(lc, 31)
    kills = [c for c in changes if c.reason == "Killing"]
    assert kills[0].at == 30 and kills[0].message == "Container app failed liveness probe, will be restarted"
    assert sum(c.reason == "Unhealthy" for c in changes) == 3
    snap = lc.snapshot().containers[0]
    assert snap.restart_count == 1 and snap.last_state is not None and snap.last_state.exit_code == 0


def test_classic_exec_liveness_example_is_killed_with_137() -> None:
    spec = {
        "name": "liveness",
        "image": "busybox",
        "args": ["/bin/sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"],
        "livenessProbe": {
            "exec": {"command": ["cat", "/tmp/healthy"]},
            "initialDelaySeconds": 5,
            "periodSeconds": 5,
        },
    }
    lc = PodLifecycle(make_pod(spec, terminationGracePeriodSeconds=30), now=0.0)
    changes = run_until(lc, 70)
    assert [c.at for c in changes if c.reason == "Killing"] == [40]
    unhealthy = [c for c in changes if c.reason == "Unhealthy"]
    assert (
        unhealthy[0].message
        == "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory"
    )
    last = lc.snapshot().containers[0].last_state
    assert last is not None and (last.exit_code, last.reason, last.finished_at) == (137, "Error", 70)


def test_readiness_probe_honours_delay_and_thresholds() -> None:
    spec = {
        "name": "c",
        "image": "nginx:1.25",
        "env": [{"name": "KUBELAB_READY_AFTER", "value": "12"}],
        "readinessProbe": {
            "tcpSocket": {"port": 80},
            "initialDelaySeconds": 3,
            "periodSeconds": 5,
            "successThreshold": 2,
        },
    }
    lc = PodLifecycle(make_pod(spec), now=0.0)
    run_until(lc, 14.9)
    assert not lc.snapshot().containers[0].ready  # probes at 5, 10 fail; 15 passes once
    run_until(lc, 20)
    assert lc.snapshot().containers[0].ready  # second success at 20


def test_graceful_termination() -> None:
    server = PodLifecycle(make_pod({"name": "c", "image": "nginx:1.25"}), now=0.0)
    server.advance(0.0)
    changes = server.terminate(10.0)
    assert changes[0].message == "Stopping container c"
    assert state(server).exit_code == 0 and server.terminal
    shell = PodLifecycle(make_pod({"name": "c", "image": "busybox", "command": ["sleep", "3600"]}), now=0.0)
    shell.advance(0.0)
    shell.terminate(10.0, grace=30)
    assert not shell.terminal and shell.next_wakeup() == 40
    shell.advance(40)
    assert state(shell).exit_code == 137 and shell.terminal


def test_init_containers_run_in_order_then_sidecar_and_app() -> None:
    pod = make_pod(
        {"name": "app", "image": "nginx:1.25"},
        initContainers=[
            {"name": "first", "image": "busybox", "command": ["sleep", "2"]},
            {"name": "proxy", "image": "envoy:v1", "restartPolicy": "Always"},
            {"name": "second", "image": "busybox", "command": ["sleep", "3"]},
        ],
    )
    lc = PodLifecycle(pod, now=0.0)
    changes = lc.advance(0.0)
    assert state(lc) == Waiting("PodInitializing")
    started = {c.container: c.at for c in changes + run_until(lc, 10) if c.reason == "Started"}
    assert started == {"first": 0, "proxy": 2, "second": 2, "app": 5}
    lc.terminate(20.0)
    assert lc.terminal and lc.init[1].done


def test_go_duration() -> None:
    assert [go_duration(s) for s in (10, 80, 160, 300, 1.5)] == ["10s", "1m20s", "2m40s", "5m0s", "1.5s"]
    # Go's own table (src/time/time_test.go durationTests), and a pull of 0.832 s
    cases = {
        0: "0s",
        1e-9: "1ns",
        1.1e-6: "1.1µs",
        2.2e-3: "2.2ms",
        0.832: "832ms",
        3.3: "3.3s",
        4 * 60 + 5: "4m5s",
        4 * 60 + 5.001: "4m5.001s",
        5 * 3600 + 6 * 60 + 7.001: "5h6m7.001s",
        8 * 60 + 1e-9: "8m0.000000001s",
        3600: "1h0m0s",
        -1.5: "-1.5s",
    }
    assert {s: go_duration(s) for s in cases} == cases
