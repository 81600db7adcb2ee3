"""Timing profiles: how long a cluster's timers run, upstream's way or fast enough to watch in class.

Kubernetes reacts to failure through timers. A kubelet renews its node Lease every 10 s and the Lease
lasts 40 s; the node lifecycle controller judges a node unreachable when its Lease is 50 s old, taints
it, and pods that tolerate the taint for 300 s are evicted after that; a leader holds its Lease for
15 s, must renew within 10 s and retries every 2 s. The **ratios** between these numbers are the lesson
(a node misses three renewals before anyone worries; eviction waits far longer than detection), the
absolute values are upstream's compromise for production clusters.

A ``TimingProfile`` names every such duration in one place:

- ``upstream`` is Kubernetes' defaults, each cited below;
- ``classroom`` is the same profile divided by five (``UPSTREAM.scaled(1 / 5)``): a dead node is
  NotReady after 10 s and its pods are evicted a minute later, while every ratio stays upstream's.
  Leader election alone keeps upstream's timers (a 15 s Lease, renewed every 2 s). Its ratios are
  not what a failure shows, and divided by five each leader would write its Lease five times a
  second: for the scheduler and the controller manager together, more than all the rest of an idle
  cluster's writes, twice its CPU, and a flicker on the diagram that hides what a student does. A
  leader that releases its Lease on the way out (``ReleaseOnCancel``) is replaced at once anyway;
  only a leader that dies without releasing makes the others wait out the 15 s.

Only durations shrink. Timestamps stay true wall-clock time (a Lease's ``renewTime``, an Event's
``lastTimestamp``), so kubectl's AGE columns stay right; a cluster clock that ran faster than the wall
(``clock.ScaledClock``) would make every timestamp a lie.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TimingProfile:
    """Every timer of a cluster's components, in seconds."""

    name: str
    #: kubelet: the node Lease's ``leaseDurationSeconds`` (``nodeLeaseDurationSeconds``, 40).
    node_lease_duration: float = 40.0
    #: kubelet: how often it renews the Lease, a quarter of its duration
    #: (pkg/kubelet/kubelet.go ``nodeLeaseRenewIntervalFraction = 0.25``).
    node_lease_renew_interval: float = 10.0
    #: kubelet: how often it computes node status (``nodeStatusUpdateFrequency``, 10 s) ...
    node_status_update_frequency: float = 10.0
    #: ... and the longest it goes without writing it when nothing changed
    #: (``nodeStatusReportFrequency``, 5 min).
    node_status_report_frequency: float = 300.0
    #: kubelet: the periodic full sync of every pod (``syncFrequency``, 1 min).
    kubelet_sync_frequency: float = 60.0
    #: kubelet: how long a pod whose sync failed (a Secret it mounts is missing) waits before the
    #: next attempt (``backOffPeriod``, 10 s, pkg/kubelet/kubelet.go).
    kubelet_pod_backoff: float = 10.0
    #: node lifecycle controller: how often it checks the nodes (``--node-monitor-period``, 5 s) ...
    node_monitor_period: float = 5.0
    #: ... how old a Lease may get before the node is Unknown (``--node-monitor-grace-period``,
    #: 50 s since 1.32, pkg/controller/nodelifecycle/config/v1alpha1/defaults.go) ...
    node_monitor_grace_period: float = 50.0
    #: ... and how long a new node may take to post its first status (``nodeStartupGracePeriod``).
    node_startup_grace_period: float = 60.0
    #: The ``tolerationSeconds`` that DefaultTolerationSeconds admission gives every pod for the
    #: not-ready and unreachable taints: how long a pod waits on a dead node before eviction.
    default_toleration_seconds: float = 300.0
    #: Leader election of the scheduler and controller manager (component-base config defaults).
    leader_lease_duration: float = 15.0
    leader_renew_deadline: float = 10.0
    leader_retry_period: float = 2.0
    #: kube-apiserver: how often it reconciles the ``kubernetes`` Service's endpoints, and how long
    #: its master lease lives (pkg/controlplane ``DefaultEndpointReconcilerInterval``/``...TTL``).
    endpoint_reconciler_interval: float = 10.0
    endpoint_reconciler_ttl: float = 15.0
    #: The simulated kubelets' image pull time (not an upstream setting: a small image from a nearby
    #: registry takes a few seconds), long enough to see ``ContainerCreating`` and ``Pulling``.
    image_pull_seconds: float = 5.0
    #: horizontal-pod-autoscaler controller: how often it looks at each HPA
    #: (``--horizontal-pod-autoscaler-sync-period``, 15 s).
    horizontal_pod_autoscaler_sync_period: float = 15.0

    def scaled(self, factor: float, *, name: str) -> TimingProfile:
        """The same profile with every duration multiplied by ``factor`` (ratios unchanged)."""
        if factor <= 0:
            raise ValueError(f"a timing factor must be positive, got {factor}")
        durations = {
            f.name: getattr(self, f.name) * factor for f in dataclasses.fields(self) if f.name != "name"
        }
        return TimingProfile(name=name, **durations)


#: Kubernetes' own defaults.
UPSTREAM = TimingProfile("upstream")
#: Upstream's ratios, five times faster: failures play out while a class watches. Leader election
#: keeps upstream's timers (see the module's docstring).
CLASSROOM = dataclasses.replace(
    UPSTREAM.scaled(1 / 5, name="classroom"),
    leader_lease_duration=UPSTREAM.leader_lease_duration,
    leader_renew_deadline=UPSTREAM.leader_renew_deadline,
    leader_retry_period=UPSTREAM.leader_retry_period,
)

PROFILES: dict[str, TimingProfile] = {p.name: p for p in (UPSTREAM, CLASSROOM)}


class UnknownTimingProfile(ValueError):
    """A profile name that is neither ``upstream`` nor ``classroom``."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown timing profile {name!r}: choose one of {', '.join(sorted(PROFILES))}")
        self.name = name


def timing_profile(name: str) -> TimingProfile:
    """The profile called ``name``; ``UnknownTimingProfile`` otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownTimingProfile(name) from None
