"""CrashLoopBackOff for a component: when a crashing component is started again (the pure part).

On a kubeadm cluster kube-scheduler and kube-controller-manager are **static pods** (their manifests
are files in ``/etc/kubernetes/manifests`` on the control-plane node) and kube-proxy is a DaemonSet's
pod: a kubelet runs each of them in a container. When such a process crashes, the kubelet starts its
container again, as it does any pod's under ``restartPolicy: Always``, and when it keeps crashing it
waits longer before each restart: that wait is **CrashLoopBackOff**. The first restart is at once;
then 10 s, 20 s, 40 s ... doubling up to 5 minutes; a container that ran for 10 minutes starts the
sequence again. It is the same back-off the lab's kubelets give pods' containers
(``components/kubelet/lifecycle.py``, docs/kubelet-simulation.md), so it is that one, ``Backoff``:

- pkg/kubelet/kubelet.go: ``backOffPeriod = 10 s`` and ``MaxContainerBackOff = 300 s``;
- pkg/kubelet/kuberuntime/kuberuntime_manager.go ``doBackOff``: measured from when the container
  finished; not in back-off (the first time) means restart now, and ``Next`` doubles the wait;
- k8s.io/client-go/util/flowcontrol/backoff.go: the doubling, and the entry that expires after
  twice the maximum without a crash.

``RestartSchedule.restart_delay`` answers one question, given the moment of a crash: how long until
the kubelet starts the component again. ``CrashLoopTiming`` holds the numbers (the back-off's, and how
long the component runs before it crashes) and scales them, for tests and demonstrations that cannot
wait five minutes. Nothing here does I/O or reads a clock; time is passed in.

A kubelet itself is not a pod but a systemd service (kubeadm's ``kubelet.service``: ``Restart=always``,
``RestartSec=10``), restarted by systemd every 10 s without any back-off, so it is not in this story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from controlplane.components.identities import component_identity
from controlplane.components.kubelet.lifecycle import INITIAL_BACKOFF, MAX_BACKOFF, Backoff, go_duration

#: How long a crash-looping component runs before it crashes, in seconds of the cluster's clock: long
#: enough to see it start, list and watch what it needs (and a scheduler or controller manager see
#: who holds its Lease), short enough that it never gets to work.
RUNS_FOR: Final = 5.0


@dataclass(frozen=True)
class CrashLoopTiming:
    """The numbers of a crash loop, in seconds: the back-off's first wait and its maximum, and how
    long the component runs after each start before it crashes."""

    initial: float = INITIAL_BACKOFF
    maximum: float = MAX_BACKOFF
    runs_for: float = RUNS_FOR

    def scaled(self, factor: float) -> CrashLoopTiming:
        """The same loop ``factor`` times as long (the ratios are upstream's)."""
        if factor <= 0:
            raise ValueError(f"a timing factor must be positive, got {factor}")
        return CrashLoopTiming(self.initial * factor, self.maximum * factor, self.runs_for * factor)


@dataclass
class RestartSchedule:
    """When the kubelet starts a crashed container again (see the module's docstring)."""

    timing: CrashLoopTiming = field(default_factory=CrashLoopTiming)
    restarts: int = 0

    def __post_init__(self) -> None:
        self._backoff = Backoff(initial=self.timing.initial, maximum=self.timing.maximum)

    def restart_delay(self, crashed_at: float) -> float:
        """Seconds from a crash at ``crashed_at`` until the restart: 0 the first time, then the
        back-off, doubling. As ``doBackOff``: a crash inside the current window waits it out, and
        at the restart ``Next`` doubles the window for the crash after."""
        self.restarts += 1
        backoff = self._backoff
        if backoff.in_backoff_since(crashed_at, crashed_at):
            assert backoff.duration is not None  # in back-off: there is a window
            wait = backoff.duration
            backoff.next(crashed_at, crashed_at + wait)
            return wait
        backoff.next(crashed_at, crashed_at)
        return 0.0


def container(component: str) -> str:
    """The container of the component ``component`` (a diagram id): ``kube-scheduler``, ``kube-proxy``.
    kubeadm names the static pods' and kube-proxy's DaemonSet's containers after their programs."""
    kind, _, node = component.partition(":")
    return component_identity(kind, node).program


def crashed(component: str, delay: float) -> str:
    """What the trace says of a crash followed by a restart ``delay`` seconds later: for a wait, the
    kubelet's own words (``doBackOff``: "back-off 20s restarting failed container=kube-scheduler")."""
    if delay <= 0:
        return "crashed; the kubelet restarts it at once"
    return f"crashed; back-off {go_duration(delay)} restarting failed container={container(component)}"


def restarted(restarts: int) -> str:
    """What the trace says when the kubelet starts the component again, its ``restarts``-th time."""
    return f"restarted by the kubelet (restart {restarts})"


__all__ = ["RUNS_FOR", "CrashLoopTiming", "RestartSchedule", "container", "crashed", "restarted"]
