"""The container lifecycle: what a kubelet does with each container of a pod, as a pure state machine.

A real kubelet pulls the image, creates and starts the container, probes it, and when it exits decides
from the pod's ``restartPolicy`` whether to start it again, waiting longer after each crash
(CrashLoopBackOff). Here the "container" is a ``Behaviour`` (simulation.py) and time is a float of
cluster-clock seconds passed in by the caller. Nothing sleeps and nothing does I/O:

* ``PodLifecycle.advance(now)`` plays every timer that is due, in time order, and returns the
  ``Change``\\ s it made, worded like the Events the kubelet records (``Pulling``, ``Started``,
  ``BackOff``, ``Killing``, ``Unhealthy``...).
* ``PodLifecycle.next_wakeup()`` says when the next timer is due, so the async adapter sleeps until then.
* ``PodLifecycle.snapshot()`` is what status.py turns into ``pod.status``.

Upstream, for the reader who wants the real thing (kubernetes/kubernetes):

* pkg/kubelet/kuberuntime/kuberuntime_manager.go: ``computePodActions`` (init containers in order, then
  all containers; kill on liveness failure, "Container %s failed liveness probe, will be restarted"),
  ``doBackOff`` ("back-off %s restarting failed container=%s pod=%s").
* pkg/kubelet/kubelet.go: ``backOffPeriod = 10 s``, ``MaxContainerBackOff = 300 s``; container restarts
  and image pulls share that exponential backoff.
* k8s.io/client-go/util/flowcontrol/backoff.go: ``Next`` doubles up to the max; an entry not updated for
  2 x max (10 minutes) has expired, which is the "reset after 10 minutes of running".
* pkg/kubelet/images/image_manager.go: "Back-off pulling image %q", ErrImagePull / ImagePullBackOff.
* pkg/kubelet/prober/worker.go: a probe runs every ``periodSeconds`` from the container's start, is
  skipped before ``initialDelaySeconds``, and flips after ``successThreshold`` / ``failureThreshold``
  consecutive results; readiness starts failed, liveness and startup start successful.
* pkg/kubelet/container/helpers.go ``ShouldContainerBeRestarted``: Never, OnFailure (exit code != 0),
  Always.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.components.kubelet.logs import ContainerLogs
from controlplane.components.kubelet.simulation import (
    Behaviour,
    PullTiming,
    Uniform,
    behaviour_of,
    image_size,
    parse_image,
    probe_succeeds,
)

INITIAL_BACKOFF = 10.0  # pkg/kubelet/kubelet.go backOffPeriod
MAX_BACKOFF = 300.0  # pkg/kubelet/kubelet.go MaxContainerBackOff
#: After a failed pull the kubelet's next sync (PLEG relists every second) reports ImagePullBackOff.
RESYNC_AFTER_ERROR = 1.0
DEFAULT_GRACE = 30.0  # terminationGracePeriodSeconds default
SIGKILL_EXIT = 137  # 128 + 9

# --- states ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    reason: str
    message: str = ""


@dataclass(frozen=True)
class Running:
    started_at: float


@dataclass(frozen=True)
class Terminated:
    exit_code: int
    reason: str
    started_at: float
    finished_at: float
    message: str = ""
    container_id: str = ""


ContainerState = Waiting | Running | Terminated


@dataclass(frozen=True)
class Change:
    """One thing the kubelet did, worded as the Event it records (``kubectl describe pod`` shows these)."""

    at: float
    container: str
    reason: str
    message: str
    type: str = "Normal"


def go_duration(seconds: float) -> str:
    """Format like Go's ``time.Duration.String`` (src/time/time.go): ``10s``, ``1m20s``, ``5m0s``,
    ``1.5s``, and below a second ``832ms``, ``1.5µs``, ``100ns``, to the nanosecond."""
    nanos = round(seconds * 1_000_000_000)
    sign, u = ("-", -nanos) if nanos < 0 else ("", nanos)
    if u == 0:
        return "0s"
    if u < 1_000_000_000:  # a smaller unit, so that 0.832s reads 832ms
        if u < 1_000:
            return f"{sign}{u}ns"
        unit, digits, name = (1_000, 3, "µs") if u < 1_000_000 else (1_000_000, 6, "ms")
        return f"{sign}{u // unit}{_go_fraction(u % unit, digits)}{name}"
    whole, fraction = divmod(u, 1_000_000_000)
    text = f"{whole % 60}{_go_fraction(fraction, 9)}s"
    minutes = whole // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _go_fraction(value: int, digits: int) -> str:
    """Go's ``fmtFrac``: ``value`` as the digits after a decimal point, trailing zeros dropped."""
    if value == 0:
        return ""
    return "." + f"{value:0{digits}d}".rstrip("0")


@dataclass
class Backoff:
    """client-go's ``flowcontrol.Backoff`` for one key, without jitter (the kubelet uses none)."""

    initial: float = INITIAL_BACKOFF
    maximum: float = MAX_BACKOFF
    duration: float | None = None  # None: no entry
    last_update: float = 0.0

    def _expired(self, event_time: float) -> bool:
        return event_time - self.last_update > 2 * self.maximum

    def in_backoff_since(self, event_time: float, now: float) -> bool:
        """``IsInBackOffSince``: still inside the window that opened at ``event_time``."""
        if self.duration is None or self._expired(event_time):
            return False
        return now - event_time < self.duration

    def in_backoff_since_update(self, now: float) -> bool:
        """``IsInBackOffSinceUpdate`` (the image puller's check)."""
        if self.duration is None or self._expired(now):
            return False
        return now - self.last_update < self.duration

    def next(self, event_time: float, now: float) -> None:
        if self.duration is None or self._expired(event_time):
            self.duration = self.initial
        else:
            self.duration = min(self.duration * 2, self.maximum)
        self.last_update = now


# --- probes ---------------------------------------------------------------------------------------


@dataclass
class Prober:
    """One probe worker (pkg/kubelet/prober/worker.go) for one container instance."""

    kind: str  # readiness | liveness | startup
    spec: Mapping[str, Any]
    start: float
    result: bool
    successes: int = 0
    failures: int = 0
    tick: int = 0

    @property
    def period(self) -> float:
        return float(self.spec.get("periodSeconds") or 10)

    @property
    def initial_delay(self) -> float:
        return float(self.spec.get("initialDelaySeconds") or 0)

    @property
    def failure_threshold(self) -> int:
        return int(self.spec.get("failureThreshold") or 3)

    @property
    def success_threshold(self) -> int:
        return int(self.spec.get("successThreshold") or 1)

    def next_at(self) -> float:
        """The next probe: ticks every period from the start, skipping those before the initial delay."""
        first = math.ceil(self.initial_delay / self.period - 1e-9)
        return self.start + max(self.tick, first) * self.period

    def run(self, behaviour: Behaviour) -> tuple[bool, bool, str]:
        """Probe once; returns (result changed, this probe passed, failure output)."""
        at = self.next_at()
        self.tick = round((at - self.start) / self.period) + 1
        ok, output = probe_succeeds(self.kind, self.spec, behaviour, at - self.start)
        before = self.result
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if self.successes >= self.success_threshold:
                self.result = True
        else:
            self.failures, self.successes = self.failures + 1, 0
            if self.failures >= self.failure_threshold:
                self.result = False
        return before != self.result, ok, output


# --- one container --------------------------------------------------------------------------------


@dataclass
class NodeImages:
    """The images already on a node (shared by all its pods), for ``imagePullPolicy: IfNotPresent``."""

    present: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ContainerSnapshot:
    """What status.py needs to write one ``containerStatuses[i]``."""

    name: str
    image: str
    image_id: str
    container_id: str
    state: ContainerState
    last_state: Terminated | None
    ready: bool
    started: bool
    restart_count: int
    restartable_init: bool = False


class ContainerMachine:
    """The lifecycle of one container: pull, run, probe, exit, restart with backoff, stop.

    The pod (``PodLifecycle``) decides when it may start and when it must stop; everything in between is
    this machine's own timers.
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        pod_key: str,
        pod_uid: str,
        restart_policy: str,
        grace: float,
        initial_reason: str,
        timing: PullTiming,
        rng: Uniform,
        images: NodeImages,
        restartable_init: bool = False,
        config_retry: float = INITIAL_BACKOFF,
    ) -> None:
        self.spec = spec
        self.name = str(spec.get("name", ""))
        self.image = str(spec.get("image", ""))
        self.behaviour = behaviour_of(spec, pod_name=pod_key.split("_", 1)[0])
        self.pod_key = pod_key
        self.logs = ContainerLogs(self.behaviour, pod=pod_key.split("_", 1)[0], container=self.name)
        self.pod_uid = pod_uid
        self.restart_policy = restart_policy
        self.grace = grace
        self.timing = timing
        self.rng = rng
        self.images = images
        self.restartable_init = restartable_init
        self.state: ContainerState = Waiting(initial_reason)
        self.last_state: Terminated | None = None
        self.restart_count = 0
        self.instances = 0
        self.container_id = ""
        self.ready = False
        self.started = False
        self.requested = False
        self.done = False  # terminated and will not be started again
        self.stopping = False  # the pod is shutting down: never restart
        self.crash_backoff = Backoff()
        self.pull_backoff = Backoff()
        self._pull_done_at: float | None = None
        self._pull_began: float = 0.0
        self._pull_retry_at: float | None = None
        self._report_backoff_at: float | None = None
        self._restart_at: float | None = None
        self._exit_at: float | None = None
        self._exit_code = 0
        self._kill_at: float | None = None
        self._liveness_killed = False
        self._probers: list[Prober] = []
        #: Why the container cannot be created yet (a Secret its ``env`` names is missing), set by the
        #: kubelet before each sync; tried again ``config_retry`` s after each failure.
        self.config_error: str | None = None
        self.config_retry = config_retry
        self._config_retry_at: float | None = None

    # --- what the pod asks ---

    @property
    def active(self) -> bool:
        """The pod has let this container start (it may be pulling, running or backing off)."""
        return self.requested

    @property
    def running(self) -> bool:
        return isinstance(self.state, Running)

    def start(self, now: float) -> list[Change]:
        """The pod allows this container to run: pull its image, then create and start it."""
        self.requested = True
        return self._pull(now)

    def stop(self, now: float, grace: float, message: str) -> list[Change]:
        """Graceful termination: SIGTERM now, SIGKILL (exit 137) when ``grace`` runs out."""
        self.stopping = True
        self._restart_at = self._pull_done_at = self._pull_retry_at = self._report_backoff_at = None
        self._config_retry_at = None
        if not self.running:
            self.done = True
            return []
        changes = [Change(now, self.name, "Killing", message)]
        if self.behaviour.ignores_sigterm:
            self._kill_at = now + grace
            if self._exit_at is not None and self._exit_at <= self._kill_at:
                self._kill_at = None  # it will exit on its own first
        else:
            self._exit_at, self._exit_code, self._kill_at = now, 0, None
        return changes + self.advance(now)

    def next_wakeup(self) -> float | None:
        timers = [
            self._pull_done_at,
            self._pull_retry_at,
            self._report_backoff_at,
            self._restart_at,
            self._exit_at,
            self._kill_at,
            self._config_retry_at,
        ]
        if self.running and not self.stopping:
            timers += [p.next_at() for p in self._active_probers()]
        due = [t for t in timers if t is not None]
        return min(due) if due else None

    def advance(self, now: float) -> list[Change]:
        """Fire every timer due by ``now``, earliest first."""
        changes: list[Change] = []
        while (at := self.next_wakeup()) is not None and at <= now:
            changes += self._fire(at)
        return changes

    def snapshot(self) -> ContainerSnapshot:
        ref = parse_image(self.image)
        pulled = self.instances > 0
        return ContainerSnapshot(
            name=self.name,
            image=ref.full,
            image_id=ref.image_id if pulled else "",
            container_id=self.container_id if pulled else "",
            state=self.state,
            last_state=self.last_state,
            ready=self.ready and self.running,
            started=self.started and self.running,
            restart_count=self.restart_count,
            restartable_init=self.restartable_init,
        )

    # --- timers ---

    def _fire(self, at: float) -> list[Change]:
        if at == self._kill_at:
            self._kill_at = None
            return self._exit(at, SIGKILL_EXIT)
        if at == self._exit_at:
            self._exit_at = None
            return self._exit(at, self._exit_code)
        if at == self._pull_done_at:
            return self._pull_done(at)
        if at == self._report_backoff_at:
            self._report_backoff_at = None
            message = f'Back-off pulling image "{self.image}"'
            self.state = Waiting("ImagePullBackOff", message)
            return [Change(at, self.name, "BackOff", message)]
        if at == self._restart_at and self.last_state is not None:
            self._restart_at = None
            return self._maybe_restart(at, self.last_state)
        if at == self._pull_retry_at:
            self._pull_retry_at = None
            return self._pull(at)
        if at == self._config_retry_at:
            self._config_retry_at = None
            return self._create(at)
        for prober in self._active_probers():
            if prober.next_at() == at:
                return self._probe(prober)
        raise AssertionError(f"no timer of {self.name} is due at {at}")  # pragma: no cover

    def _pull(self, now: float) -> list[Change]:
        policy = self.spec.get("imagePullPolicy") or (
            "Always" if parse_image(self.image).tag == "latest" and "@" not in self.image else "IfNotPresent"
        )
        present = parse_image(self.image).full in self.images.present
        if present and policy != "Always":
            message = f'Container image "{self.image}" already present on machine'
            return [Change(now, self.name, "Pulled", message), *self._create(now)]
        if policy == "Never":
            message = f'Container image "{self.image}" is not present with pull policy of Never'
            self.state = Waiting("ErrImageNeverPull", message)
            return [Change(now, self.name, "ErrImageNeverPull", message, "Warning")]
        self._pull_began = now
        self._pull_done_at = now + self.timing.delay(self.image, self.rng)
        return [Change(now, self.name, "Pulling", f'Pulling image "{self.image}"'), *self.advance(now)]

    def _pull_done(self, now: float) -> list[Change]:
        self._pull_done_at = None
        error = self.behaviour.pull_error
        if error is None:
            self.images.present.add(parse_image(self.image).full)
            # pkg/kubelet/images/image_manager.go: the durations Truncate(time.Millisecond)
            took = go_duration(math.floor((now - self._pull_began) * 1000) / 1000)
            message = (
                f'Successfully pulled image "{self.image}" in {took} ({took} including waiting). '
                f"Image size: {image_size(self.image)} bytes."
            )
            return [Change(now, self.name, "Pulled", message), *self._create(now)]
        self.pull_backoff.next(now, now)
        assert self.pull_backoff.duration is not None
        self.state = Waiting("ErrImagePull", error)
        self._report_backoff_at = now + min(RESYNC_AFTER_ERROR, self.pull_backoff.duration)
        self._pull_retry_at = now + self.pull_backoff.duration
        return [
            Change(now, self.name, "Failed", f'Failed to pull image "{self.image}": {error}', "Warning"),
            Change(now, self.name, "Failed", "Error: ErrImagePull", "Warning"),
        ]

    def _create(self, now: float) -> list[Change]:
        if self.config_error is not None:
            # kuberuntime_container.go startContainer: generateContainerConfig failed
            # (ErrCreateContainerConfig), reported as the Warning "Failed" "Error: <why>".
            self.state = Waiting("CreateContainerConfigError", self.config_error)
            self._config_retry_at = now + self.config_retry
            return [Change(now, self.name, "Failed", f"Error: {self.config_error}", "Warning")]
        if self.instances:
            self.restart_count += 1
        self.instances += 1
        seed = f"{self.pod_uid}/{self.name}/{self.instances}".encode()
        self.container_id = "containerd://" + hashlib.sha256(seed).hexdigest()
        self.state = Running(now)
        self.logs.started(now)
        self._liveness_killed = False
        self._probers = [
            Prober(kind, self.spec[f"{kind}Probe"], now, result=kind != "readiness")
            for kind in ("startup", "liveness", "readiness")
            if isinstance(self.spec.get(f"{kind}Probe"), Mapping)
        ]
        has_startup = any(p.kind == "startup" for p in self._probers)
        if has_startup:
            self._probers[0].result = False  # the startup probe starts unknown: not started
        self.started = not has_startup
        self.ready = self.started and not any(p.kind == "readiness" for p in self._probers)
        exit_ = self.behaviour.exit()
        self._exit_at, self._exit_code = (now + exit_.offset, exit_.code) if exit_ else (None, 0)
        return [
            Change(now, self.name, "Created", f"Created container: {self.name}"),
            Change(now, self.name, "Started", f"Started container {self.name}"),
            *self.advance(now),
        ]

    def _active_probers(self) -> list[Prober]:
        return [p for p in self._probers if (p.kind == "startup") != self.started]

    def _probe(self, prober: Prober) -> list[Change]:
        at = prober.next_at()
        changed, ok, output = prober.run(self.behaviour)
        changes: list[Change] = []
        if not ok:
            kind = prober.kind.capitalize()
            changes.append(Change(at, self.name, "Unhealthy", f"{kind} probe failed: {output}", "Warning"))
        if prober.kind == "startup" and not ok and prober.failures >= prober.failure_threshold:
            changed = True
        if not changed:
            return changes
        if prober.kind == "readiness":
            self.ready = prober.result
        elif prober.kind == "startup" and prober.result:
            self.started = True
            self.ready = not any(p.kind == "readiness" for p in self._probers)
        if prober.kind in ("liveness", "startup") and not prober.result:
            message = f"Container {self.name} failed {prober.kind} probe"
            if self.restart_policy != "Never":
                message += ", will be restarted"
            grace = float(prober.spec.get("terminationGracePeriodSeconds") or self.grace)
            self._liveness_killed = True
            changes.append(Change(at, self.name, "Killing", message))
            if self.behaviour.ignores_sigterm:
                natural = self._exit_at
                self._kill_at = at + grace if natural is None or natural > at + grace else None
            else:
                self._exit_at, self._exit_code = at, 0
            self._probers = []
        return changes

    def _exit(self, now: float, code: int) -> list[Change]:
        assert isinstance(self.state, Running)
        reason = "Completed" if code == 0 else "Error"
        self.state = Terminated(code, reason, self.state.started_at, now, container_id=self.container_id)
        self.logs.stopped(now)
        self.ready = self.started = False
        self._exit_at = self._kill_at = None
        self._probers = []
        restart = {
            "Always": True,
            "OnFailure": code != 0 or self._liveness_killed,
            "Never": False,
        }.get(self.restart_policy, True)
        if self.stopping or not restart:
            self.done = True
            return []
        return self._maybe_restart(now, self.state)

    def _maybe_restart(self, now: float, dead: Terminated) -> list[Change]:
        """kuberuntime_manager.go ``doBackOff``: restart now, or wait in CrashLoopBackOff."""
        if self.crash_backoff.in_backoff_since(dead.finished_at, now):
            assert self.crash_backoff.duration is not None
            wait = go_duration(self.crash_backoff.duration)
            self.last_state = dead
            self.state = Waiting(
                "CrashLoopBackOff",
                f"back-off {wait} restarting failed container={self.name} pod={self.pod_key}",
            )
            self._restart_at = dead.finished_at + self.crash_backoff.duration
            message = f"Back-off restarting failed container {self.name} in pod {self.pod_key}"
            return [Change(now, self.name, "BackOff", message, "Warning")]
        self.crash_backoff.next(dead.finished_at, now)
        self.last_state = dead
        return self._pull(now)


# --- the pod --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodSnapshot:
    """What status.py needs: the containers' states and whether the pod is done for good."""

    init_containers: tuple[ContainerSnapshot, ...]
    containers: tuple[ContainerSnapshot, ...]
    sandbox_ready: bool
    terminal: bool
    has_init_containers: bool


class PodLifecycle:
    """All containers of one pod on one node: init containers in order, then the rest, then shutdown."""

    def __init__(
        self,
        pod: Mapping[str, Any],
        *,
        now: float,
        timing: PullTiming | None = None,
        rng: Uniform | None = None,
        images: NodeImages | None = None,
        config_retry: float = INITIAL_BACKOFF,
    ) -> None:
        meta: Mapping[str, Any] = pod.get("metadata") or {}
        spec: Mapping[str, Any] = pod.get("spec") or {}
        self.uid = str(meta.get("uid", ""))
        # pkg/kubelet/util/format.Pod: name_namespace(uid)
        self.key = f"{meta.get('name', '')}_{meta.get('namespace', 'default')}({self.uid})"
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        self.grace = float(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE))
        rng = rng or random.Random(0)
        timing = timing or PullTiming()
        images = images if images is not None else NodeImages()
        init_specs = list(spec.get("initContainers") or [])
        waiting = "PodInitializing" if init_specs else "ContainerCreating"

        def machine(c: Mapping[str, Any], policy: str, sidecar: bool = False) -> ContainerMachine:
            return ContainerMachine(
                c,
                pod_key=self.key,
                pod_uid=self.uid,
                restart_policy=policy,
                grace=self.grace,
                initial_reason=waiting,
                timing=timing,
                rng=rng,
                images=images,
                restartable_init=sidecar,
                config_retry=config_retry,
            )

        init_policy = "Never" if self.restart_policy == "Never" else "OnFailure"
        self.init: list[ContainerMachine] = [
            machine(c, "Always", True) if c.get("restartPolicy") == "Always" else machine(c, init_policy)
            for c in init_specs
        ]
        self.containers = [machine(c, self.restart_policy) for c in spec.get("containers") or []]
        self.created_at = now
        self.terminating_at: float | None = None
        self._deadline: float | None = None
        self.init_failed = False
        #: The pod's volumes are not mounted yet (``volumes.py``): no container starts until
        #: ``release``.
        self.held = False

    def set_config_errors(self, errors: Mapping[str, str]) -> None:
        """Why each container (by name) cannot be created now; the others may be."""
        for m in self._all():
            m.config_error = errors.get(m.name)

    def waiting_for_config(self) -> list[str]:
        """The containers not created yet (never run, or stopped at their configuration)."""
        return [m.name for m in self._all() if m.instances == 0 and not m.done]

    def release(self, now: float) -> None:
        """The volumes are mounted: the containers start from ``now`` on."""
        if self.held and not self._started_any():
            self.created_at = now
        self.held = False

    # --- driving ---

    def next_wakeup(self) -> float | None:
        due = [t for m in self._all() if (t := m.next_wakeup()) is not None]
        if self._deadline is not None and not self.terminal:
            due.append(self._deadline)
        return min(due) if due else None

    def advance(self, now: float) -> list[Change]:
        """Play every timer due by ``now`` in time order, starting containers as the pod allows."""
        changes = [] if self._started_any() else self._orchestrate(self.created_at)
        while (at := self.next_wakeup()) is not None and at <= now:
            for m in self._all():
                changes += m.advance(at)
            changes += self._orchestrate(at)
        changes += self._orchestrate(now)
        return changes

    def terminate(self, now: float, grace: float | None = None) -> list[Change]:
        """The pod was deleted: stop the regular containers (SIGTERM), then the sidecars, within ``grace``."""
        if self.terminating_at is not None:
            return []
        changes = self.advance(now)
        self.terminating_at = now
        grace = self.grace if grace is None else grace
        self._deadline = now + grace
        for m in [*self.containers, *(m for m in self.init if not m.restartable_init)]:
            changes += m.stop(now, grace, f"Stopping container {m.name}")
        return changes + self._orchestrate(now)

    def snapshot(self) -> PodSnapshot:
        return PodSnapshot(
            init_containers=tuple(m.snapshot() for m in self.init),
            containers=tuple(m.snapshot() for m in self.containers),
            sandbox_ready=not self.terminal,
            terminal=self.terminal,
            has_init_containers=bool(self.init),
        )

    @property
    def terminal(self) -> bool:
        """No container will run again: deleted and all stopped, or every container finished for good."""
        if self.init_failed:
            return True
        if self.terminating_at is not None:
            return not any(m.running for m in self._all())
        return (
            bool(self.containers)
            and all(m.done for m in self.containers)
            and not any(m.running for m in self.init)
        )

    # --- internals ---

    def _all(self) -> list[ContainerMachine]:
        return [*self.init, *self.containers]

    def _started_any(self) -> bool:
        return any(m.active or m.done for m in self._all())

    def _orchestrate(self, now: float) -> list[Change]:
        changes: list[Change] = []
        if self.terminating_at is not None:
            regular_left = any(m.running for m in self.containers)
            if not regular_left or (self._deadline is not None and now >= self._deadline):
                remaining = max(0.0, (self._deadline or now) - now)
                changes += self._stop_sidecars(now, remaining)
                if self._deadline is not None and now >= self._deadline:
                    self._deadline = None
            return changes
        if self.init_failed or self.held:
            return changes
        for m in self.init:
            if m.restartable_init:
                if not m.active and not m.done:
                    changes += m.start(now)
                if not m.started:
                    return changes
                continue
            if isinstance(m.state, Terminated) and m.state.exit_code == 0:
                continue
            if m.done and self.restart_policy == "Never":
                self.init_failed = True
                return changes
            if not m.active:
                changes += m.start(now)
            return changes
        for m in self.containers:
            if not m.active and not m.done:
                changes += m.start(now)
        if self.containers and all(m.done for m in self.containers):
            changes += self._stop_sidecars(now, self.grace)  # nothing left for them to help
        return changes

    def _stop_sidecars(self, now: float, grace: float) -> list[Change]:
        """Sidecars stop after the regular containers, in reverse order (KEP-753)."""
        changes: list[Change] = []
        for m in reversed(self.init):
            if m.restartable_init and not m.stopping:
                changes += m.stop(now, grace, f"Stopping container {m.name}")
        return changes
